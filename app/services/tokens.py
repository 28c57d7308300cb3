"""API tokens: random secrets shown once, stored only as SHA-256 hashes, each with one role; and
the pages' login sessions made with them (random ids, stored the same way, ended by logout).

A token guards every write endpoint (``Authorization: Bearer <token>``). Tokens are long random
strings, so an unsalted fast hash is enough: there is nothing to brute-force by dictionary.

Roles (what each may do beyond reading; every role may read, which matters when
``FORGETMAP_PRIVATE=1`` makes reads need a token):

- ``read``: reads only.
- ``worker``: the shard protocol (start, progress, finish, fail) and results uploads.
- ``submit``: create pairs and jobs; cancel and retry its own jobs.
- ``admin``: everything, including other tokens' jobs.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from forgetmap.core.errors import InputError
from forgetmap.db import sessions as sessions_db
from forgetmap.db import tokens as tokens_db
from forgetmap.db.store import Connection

PREFIX = "fm_"


class Role(StrEnum):
    read = "read"
    submit = "submit"
    worker = "worker"
    admin = "admin"


DEFAULT_ROLE = Role.submit


@dataclass(frozen=True)
class Principal:
    """Who a request acts for: a token's id, name and role."""

    token_id: int
    name: str
    role: Role

    def may(self, *roles: Role) -> bool:
        """True when this principal holds one of ``roles`` (admin holds every role)."""
        return self.role == Role.admin or self.role in roles

    def may_manage(self, job_owner: str | None) -> bool:
        """Cancel or retry a job: its owner (a submit token), or an admin."""
        return self.role == Role.admin or (self.role == Role.submit and job_owner == self.name)


def needs_role_message(principal: Principal, *roles: Role) -> str:
    """The 403 text: which role the call needs and which one the caller has."""
    wanted = " or ".join(dict.fromkeys(r.value for r in (*roles, Role.admin)))
    return (
        f"this needs a token with role {wanted}; "
        f"token {principal.name!r} has role {principal.role.value}"
    )


def parse_role(text: str) -> Role:
    try:
        return Role(text)
    except ValueError:
        raise InputError(
            f"unknown role {text!r}; use one of {', '.join(r.value for r in Role)}"
        ) from None


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(conn: Connection, name: str, role: Role | str = DEFAULT_ROLE) -> str:
    """Store a new token under ``name`` and return it (the only time it is visible)."""
    name = name.strip()
    role = parse_role(str(role))
    if not name:
        raise InputError(
            "a token needs a name, e.g. `forgetmap token create worker-1 --role worker`"
        )
    if tokens_db.token_exists(conn, name):
        raise InputError(f"a token named {name!r} exists; revoke it first or pick another name")
    token = PREFIX + secrets.token_urlsafe(32)
    tokens_db.insert_token(conn, name, hash_token(token), role.value)
    return token


def revoke_token(conn: Connection, name: str) -> None:
    """Delete a token; requests and login sessions made with it are refused from now on."""
    if not tokens_db.token_exists(conn, name):
        raise InputError(f"no token named {name!r}")
    tokens_db.delete_token(conn, name)


LOCAL_PRINCIPAL = Principal(token_id=0, name="local", role=Role.admin)
"""Who holds the app's local credential (forgetmap.runtime.owner): the command line on the app's own
machine, an admin of that app process only. Token ids start at 1."""


def local_principal(credential: str | None, token: str) -> Principal | None:
    """``LOCAL_PRINCIPAL`` when ``token`` is the app's local credential (compared in constant
    time), else None."""
    if credential and hmac.compare_digest(token.encode(), credential.encode()):
        return LOCAL_PRINCIPAL
    return None


def _principal(row) -> Principal | None:
    return Principal(row[0], row[1], Role(row[2])) if row else None


def token_principal(conn: Connection, token: str) -> Principal | None:
    """The holder of a valid token, or None."""
    if not token or not token.startswith(PREFIX):
        return None
    return _principal(tokens_db.token_by_hash(conn, hash_token(token)))


SESSIONS_PER_TOKEN = 20
"""Live browser logins one token may hold: a login beyond them ends that token's oldest one, so
repeated logins cannot grow ``web_sessions`` without bound."""


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)  # the table's TIMESTAMP columns hold UTC


def start_session(conn: Connection, principal: Principal, lifetime_seconds: float) -> str:
    """A new login session of ``principal``, valid for ``lifetime_seconds`` unless ended first;
    its id (for the cookie: only its hash is stored)."""
    session_id = secrets.token_urlsafe(32)
    now = _utcnow()
    sessions_db.delete_stale_sessions(conn, principal.token_id, now, SESSIONS_PER_TOKEN - 1)
    expires = now + timedelta(seconds=lifetime_seconds)
    sessions_db.insert_session(conn, hash_token(session_id), principal.token_id, now, expires)
    return session_id


def session_principal(conn: Connection, session_id: str) -> Principal | None:
    """Who a login session acts for; None once it ended (logout), expired, or its token was
    revoked."""
    return _principal(sessions_db.session_token(conn, hash_token(session_id), _utcnow()))


def end_session(conn: Connection, session_id: str) -> None:
    """Log one session out: its id logs in no one from now on, wherever the cookie was copied."""
    sessions_db.delete_session(conn, hash_token(session_id))


def end_token_sessions(conn: Connection, token_id: int) -> int:
    """Log out every session of one token ("log out everywhere"); how many there were."""
    return sessions_db.delete_token_sessions(conn, token_id)


def list_tokens(conn: Connection) -> list[dict]:
    return [
        {"name": n, "role": r, "created_at": c.isoformat()} for n, r, c in tokens_db.tokens(conn)
    ]
