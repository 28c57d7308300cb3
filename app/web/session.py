"""Logins (a token exchanged for a session the app keeps) and CSRF tokens for HTML forms.

A login stores a session in the database (``web_sessions``, forgetmap.services.tokens.start_session)
that lasts ``FORGETMAP_SESSION_DAYS`` (7); the signed cookie carries its random id, the token's
name and role (for display) and the CSRF token. Every request that needs the user looks the
session up again, so logging out (which deletes it) ends it even for a copy of the cookie, and
revoking a token ends the sessions logged in with it.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import quote

from fastapi import HTTPException, Request
from fastapi.responses import RedirectResponse
from forgetmap.services.tokens import (
    Principal,
    Role,
    end_session,
    end_token_sessions,
    needs_role_message,
    session_principal,
    start_session,
    token_principal,
)
from forgetmap.web import deps
from starlette.datastructures import UploadFile

SESSION_ID = "sid"  # the cookie's key for the id of the session the app keeps


def current_principal(request: Request) -> Principal | None:
    """The logged-in token, or None (no login, or one that was logged out, expired or whose token
    was revoked: the cookie is then emptied, so pages show no user)."""
    session = request.session
    session_id = session.get(SESSION_ID)
    if not isinstance(session_id, str):
        if "user" in session:  # a cookie signed before sessions were kept (migration 0012)
            session.clear()
        return None
    with deps.store(request).read() as conn:
        principal = session_principal(conn, session_id)
    if principal is None:
        session.clear()
    return principal


def csrf_token(request: Request) -> str:
    token = request.session.get("csrf")
    if not token:
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


def check_csrf(request: Request, submitted: str | UploadFile | None) -> None:
    """403 unless ``submitted`` (a form field: a file where a multipart form sent one) is the
    session's CSRF token."""
    expected = request.session.get("csrf")
    if (
        not expected
        or not isinstance(submitted, str)
        or not submitted
        or not hmac.compare_digest(expected, submitted)
    ):
        raise HTTPException(
            403, "the form's security token is missing or stale: reload the page and submit again"
        )


def login(request: Request, token: str) -> Principal | None:
    """Log ``token``'s holder in: a new session (a new id and CSRF token: no fixation), ending
    the one this browser had. None for a token that is not valid."""
    store = deps.store(request)
    with store.read() as conn:
        principal = token_principal(conn, token.strip())
    if principal is None:
        return None
    previous = request.session.get(SESSION_ID)
    with store.transaction() as conn:
        store.pages_unchanged()
        if isinstance(previous, str):
            end_session(conn, previous)
        session_id = start_session(conn, principal, request.app.state.settings.session_seconds)
    request.session.clear()
    request.session.update(
        {SESSION_ID: session_id, "user": principal.name, "role": principal.role.value}
    )
    csrf_token(request)
    return principal


def logout(request: Request, *, everywhere: bool = False) -> None:
    """End this browser's session (``everywhere``: every session of its token) in the database,
    so that no copy of the cookie logs in again, and empty the cookie."""
    session_id = request.session.get(SESSION_ID)
    if isinstance(session_id, str):
        principal = current_principal(request) if everywhere else None
        store = deps.store(request)
        with store.transaction() as conn:
            store.pages_unchanged()
            end_session(conn, session_id)
            if principal is not None:
                end_token_sessions(conn, principal.token_id)
    request.session.clear()


class LoginRequired(Exception):
    """Raised by page handlers; answered with a redirect to /login (or 401 for HTMX/API)."""

    def __init__(self, next_url: str):
        self.next_url = next_url


def require_login(request: Request, *roles: Role) -> Principal:
    """The logged-in principal; a redirect to /login without one, a 403 naming the role needed
    when ``roles`` are given and it holds none of them."""
    principal = current_principal(request)
    if principal is None:
        raise LoginRequired(
            request.url.path + (f"?{request.url.query}" if request.url.query else "")
        )
    if roles and not principal.may(*roles):
        raise HTTPException(403, needs_role_message(principal, *roles))
    return principal


def login_redirect(next_url: str) -> RedirectResponse:
    return RedirectResponse(f"/login?next={quote(next_url, safe='')}", status_code=303)


def safe_next(next_url: str | UploadFile | None) -> str:
    """Only same-site paths: never redirect a login to another host."""
    if (
        isinstance(next_url, str)
        and next_url
        and next_url.startswith("/")
        and not next_url.startswith("//")
        and "\\" not in next_url
    ):
        return next_url
    return "/"
