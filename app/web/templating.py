"""What every HTML page shares: the templates, rendering, the cache of read pages, and the error
pages. The pages themselves live with their resource (map.py, pairs.py, samples.py, ...)."""

from __future__ import annotations

import functools
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.templating import Jinja2Templates
from forgetmap.core.display import binary_size, utc_time
from forgetmap.runtime.resources import resource_dir
from forgetmap.web import deps, render
from forgetmap.web.assets import Assets
from forgetmap.web.openapi import validation_message
from forgetmap.web.session import csrf_token
from starlette.exceptions import HTTPException as StarletteHTTPException

templates = Jinja2Templates(directory=resource_dir("templates"))
assets = Assets(resource_dir("static"))
"""The static files, mounted at /static by every app; a page names one by asset_url(name)."""
templates.env.globals.update(
    asset_url=assets.url,
    binary_size=binary_size,
    utc_time=utc_time,
    render=render,
    transition_labels=deps.TRANSITION_LABELS,
    csrf_token=csrf_token,
    cause_labels=deps.CAUSE_LABELS,
    cause_titles=deps.CAUSE_TITLES,
    exclude_choices=deps.EXCLUDE_CHOICES,
)
_PAGE_JSON = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def page_json(value, **_: object) -> str:
    """The encoder behind the templates' ``tojson`` (which still escapes ``<``, ``>``, ``&`` and
    ``'`` for the page): keys sorted and non-string keys as strings, as Jinja's default
    ``json.dumps`` gives them, but NaN as null (JSON.parse refuses NaN) and 15 times as fast (the
    map page embeds its 500 pairs' cells: 2 MB, 40 of its 67 ms with json.dumps)."""
    return orjson.dumps(value, option=_PAGE_JSON).decode()


templates.env.policies["json.dumps_function"] = page_json
templates.env.policies["json.dumps_kwargs"] = {}


def compile_templates() -> None:
    """Compile every template now, before the app serves: a page's first render compiled its
    templates (the map page's 30 of 70 ms in a fresh process)."""
    for name in templates.env.list_templates(extensions=["html"]):
        templates.env.get_template(name)


def html_page(request: Request, name: str, **context) -> HTMLResponse:
    return templates.TemplateResponse(request, name, context)


def is_htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"


def cached_for_readers(handler):
    """Serve a read page from cache until the next write, for visitors not logged in.

    Without a login a page depends only on its URL and the data (no CSRF token, no user name),
    so its HTML is kept per (data version, path, query, HTMX or not). Rendering costs 3-25 ms of
    CPU a request, which capped throughput under many clients. Errors are never cached.
    """

    @functools.wraps(handler)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        request: Request = kwargs["request"]
        if request.session.get("user"):
            return handler(*args, **kwargs)
        key = ("html", request.url.path, request.url.query, is_htmx(request))
        body = deps.map_cache(request).cache.get(key, lambda: handler(*args, **kwargs).body)
        return HTMLResponse(body)

    return wrapper


def _wants_html(request: Request) -> bool:
    path = request.url.path
    return not (path.startswith("/api/") or path in ("/healthz", "/openapi.json")) and not is_htmx(
        request
    )


def install_error_pages(app: FastAPI) -> None:
    """Pages answer errors with an HTML page; the API keeps FastAPI's JSON errors."""

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        if not _wants_html(request):
            return await http_exception_handler(request, exc)
        titles = {404: "not found", 405: "method not allowed"}
        return templates.TemplateResponse(
            request,
            "error.html",
            {
                "status": exc.status_code,
                "title": titles.get(exc.status_code, "error"),
                "message": exc.detail,
            },
            status_code=exc.status_code,
        )

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError):
        # the same message either way: the API's one error shape {"detail": "..."}, or a page
        if not _wants_html(request):
            return JSONResponse({"detail": validation_message(exc)}, status_code=422)
        return templates.TemplateResponse(
            request,
            "error.html",
            {"status": 422, "title": "bad parameters", "message": validation_message(exc)},
            status_code=422,
        )
