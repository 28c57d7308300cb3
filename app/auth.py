"""API tokens: random secrets shown once, stored only as SHA-256 hashes.

A token guards every write endpoint (``Authorization: Bearer <token>``). Tokens are long random
strings, so an unsalted fast hash is enough: there is nothing to brute-force by dictionary.
"""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import Connection

from app.errors import InputError

PREFIX = "fm_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(conn: Connection, name: str) -> str:
    """Store a new token under ``name`` and return it (the only time it is visible)."""
    name = name.strip()
    if not name:
        raise InputError("a token needs a name, e.g. `forgetmap token create worker-1`")
    duck = conn.connection.driver_connection
    if duck.execute("SELECT count(*) FROM api_tokens WHERE name = ?", [name]).fetchone()[0]:
        raise InputError(f"a token named {name!r} exists; revoke it first or pick another name")
    token = PREFIX + secrets.token_urlsafe(32)
    duck.execute(
        "INSERT INTO api_tokens (name, token_hash) VALUES (?, ?)", [name, hash_token(token)]
    )
    return token


def revoke_token(conn: Connection, name: str) -> None:
    duck = conn.connection.driver_connection
    if not duck.execute("SELECT count(*) FROM api_tokens WHERE name = ?", [name]).fetchone()[0]:
        raise InputError(f"no token named {name!r}")
    duck.execute("DELETE FROM api_tokens WHERE name = ?", [name])


def token_owner(conn: Connection, token: str) -> str | None:
    """The name of a valid token, or None."""
    if not token or not token.startswith(PREFIX):
        return None
    row = conn.connection.driver_connection.execute(
        "SELECT name FROM api_tokens WHERE token_hash = ?", [hash_token(token)]
    ).fetchone()
    return row[0] if row else None


def list_tokens(conn: Connection) -> list[dict]:
    rows = conn.connection.driver_connection.execute(
        "SELECT name, created_at FROM api_tokens ORDER BY name"
    ).fetchall()
    return [{"name": n, "created_at": c.isoformat()} for n, c in rows]
