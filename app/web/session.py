"""Logins (a token exchanged for a signed session cookie) and CSRF tokens for HTML forms.

A session carries the token's id, name and role and an expiry (``FORGETMAP_SESSION_DAYS``, 7).
Every request that needs the user looks the token up again by id, so revoking a token ends the
sessions logged in with it.
"""

from __future__ import annotations

import hmac
import secrets
import time
from urllib.parse import quote

from fastapi import HTTPException, Request
from fastapi.responses import RedirectResponse

from app.services.tokens import (
    Principal,
    Role,
    needs_role_message,
    principal_by_id,
    token_principal,
)
from app.web import deps


def current_principal(request: Request) -> Principal | None:
    """The logged-in token, or None (no login, an expired one, or a revoked token)."""
    session = request.session
    token_id, expires = session.get("token_id"), session.get("expires", 0)
    if token_id is None:
        return None
    if time.time() >= expires:
        session.clear()
        return None
    with deps.store(request).read() as conn:
        principal = principal_by_id(conn, token_id)
    if principal is None or principal.name != session.get("user"):
        session.clear()  # revoked (or revoked and re-created under the same name)
        return None
    return principal


def csrf_token(request: Request) -> str:
    token = request.session.get("csrf")
    if not token:
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


def check_csrf(request: Request, submitted: str | None) -> None:
    expected = request.session.get("csrf")
    if not expected or not submitted or not hmac.compare_digest(expected, submitted):
        raise HTTPException(
            403, "the form's security token is missing or stale: reload the page and submit again"
        )


def login(request: Request, token: str) -> Principal | None:
    with deps.store(request).read() as conn:
        principal = token_principal(conn, token.strip())
    if principal is not None:
        request.session.clear()
        request.session.update(
            user=principal.name,
            role=principal.role.value,
            token_id=principal.token_id,
            expires=time.time() + request.app.state.settings.session_seconds,
        )
        csrf_token(request)
    return principal


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


def safe_next(next_url: str | None) -> str:
    """Only same-site paths: never redirect a login to another host."""
    if (
        next_url
        and next_url.startswith("/")
        and not next_url.startswith("//")
        and "\\" not in next_url
    ):
        return next_url
    return "/"
