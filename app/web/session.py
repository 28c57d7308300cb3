"""Logins (a token exchanged for a signed session cookie) and CSRF tokens for HTML forms."""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import quote

from fastapi import HTTPException, Request
from fastapi.responses import RedirectResponse

from app.auth import token_owner
from app.web import deps


def current_user(request: Request) -> str | None:
    return request.session.get("user")


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


def login(request: Request, token: str) -> str | None:
    with deps.store(request).read() as conn:
        owner = token_owner(conn, token.strip())
    if owner is not None:
        request.session.clear()
        request.session["user"] = owner
        csrf_token(request)
    return owner


class LoginRequired(Exception):
    """Raised by page handlers; answered with a redirect to /login (or 401 for HTMX/API)."""

    def __init__(self, next_url: str):
        self.next_url = next_url


def require_login(request: Request) -> str:
    user = current_user(request)
    if user is None:
        raise LoginRequired(
            request.url.path + (f"?{request.url.query}" if request.url.query else "")
        )
    return user


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
