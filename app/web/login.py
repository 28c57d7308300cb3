"""Logging in and out: ``/login`` exchanges a token for a session the app keeps, named by a signed
cookie (forgetmap.web.session); ``/logout`` ends the session in the app, so a copy of the cookie
logs in no one (``everywhere=1``: every session of the token). Both forms carry a CSRF token."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from forgetmap.web.session import check_csrf, csrf_token, login, logout, safe_next
from forgetmap.web.templating import html_page
from starlette.concurrency import run_in_threadpool

router = APIRouter(include_in_schema=False)


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> HTMLResponse:
    return html_page(
        request, "login.html", next=safe_next(next), error=None, csrf=csrf_token(request)
    )


@router.post("/login")
async def login_submit(request: Request) -> Response:
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    next_url = safe_next(form.get("next"))
    # on a thread: the session is written under the store's write lock, which an import may hold
    if await run_in_threadpool(login, request, str(form.get("token") or "")) is None:
        return html_page(
            request,
            "login.html",
            next=next_url,
            csrf=csrf_token(request),
            error="That token is not valid (create one with `forgetmap token create NAME`).",
        )
    return RedirectResponse(next_url, status_code=303)


@router.post("/logout")
async def logout_submit(request: Request) -> Response:
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    await run_in_threadpool(logout, request, everywhere=form.get("everywhere") == "1")
    return RedirectResponse("/", status_code=303)
