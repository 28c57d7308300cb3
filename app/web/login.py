"""Logging in and out: ``/login`` exchanges a token for a signed session cookie (app.web.session),
``/logout`` ends the session. Both forms carry a CSRF token."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.web.session import check_csrf, csrf_token, login, safe_next
from app.web.templating import html_page

router = APIRouter(include_in_schema=False)


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> HTMLResponse:
    return html_page(request, "login.html", next=safe_next(next), error=None,
                     csrf=csrf_token(request))  # fmt: skip


@router.post("/login")
async def login_submit(request: Request) -> Response:
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    next_url = safe_next(form.get("next"))
    if login(request, str(form.get("token") or "")) is None:
        return html_page(request, "login.html", next=next_url, csrf=csrf_token(request),
                         error="That token is not valid (create one with `forgetmap token create NAME`).")  # fmt: skip
    return RedirectResponse(next_url, status_code=303)


@router.post("/logout")
async def logout(request: Request) -> Response:
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    request.session.clear()
    return RedirectResponse("/", status_code=303)
