"""The web app over one Store: one module per resource, each with its pages and its JSON, reads
and writes (map, pairs, suggest, samples, recovery, atlas, cross, theory, series, jobs, shards,
login). A page and its JSON twin take their query through the same dependency (deps.py); what
pages share is in templating.py, what the OpenAPI document declares in responses.py and
openapi.py.

``create_app`` opens the DuckDB file once; this process is then its only writer. A background
reconciler sends queued shards that could not reach the broker when their job was saved. Given an
``AppCommandLine`` (by `forgetmap serve` and `up`), the app publishes itself in the owner file
beside the database while it runs and runs the CLI's commands on it (forgetmap.runtime.owner,
forgetmap.web.cli).
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

import forgetmap
from fastapi import FastAPI, HTTPException, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import JSONResponse, Response
from forgetmap.analysis.lab import TheoryLab
from forgetmap.db import open_store
from forgetmap.runtime import owner
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.services.map_cache import MapCache
from forgetmap.services.queue import Enqueuer, Reconciler
from forgetmap.services.rejections import RejectionLog
from forgetmap.services.warm import warm_start
from forgetmap.web import (
    atlas,
    cli,
    cross,
    deps,
    imports,
    jobs,
    login,
    merges,
    pairs,
    probes,
    recovery,
    samples,
    series,
    shards,
    suggest,
    theory,
    versus,
)
from forgetmap.web import map as forgetting_map
from forgetmap.web.headers import SecurityHeaders
from forgetmap.web.limits import BodyLimits
from forgetmap.web.openapi import install_openapi
from forgetmap.web.session import LoginRequired, current_principal, login_redirect
from forgetmap.web.templating import assets, compile_templates, install_error_pages
from starlette.middleware.sessions import SessionMiddleware
from starlette.routing import Match

OPEN_WHEN_PRIVATE = ("/login", "/static/", "/healthz")


def create_app(
    db_path: Path | str,
    *,
    broker: BrokerSettings | None = None,
    settings: WebSettings | None = None,
    command_line: cli.AppCommandLine | None = None,
) -> FastAPI:
    data_dir = Path(db_path).resolve().parent
    settings = settings or WebSettings.from_env(data_dir)
    store = open_store(db_path, checkpoint_mb=settings.checkpoint_mb)
    enqueuer = Enqueuer(broker or BrokerSettings.from_env(data_dir=data_dir))
    reconciler = Reconciler(
        store, enqueuer, settings.reconcile_seconds, settings.stale_seconds, settings.resend_seconds
    )

    published = owner.new_owner(command_line.url) if command_line is not None else None

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        compile_templates()
        if settings.warm_start:  # before the first request: it finds the map and the atlas ready
            warm_start(app.state.map_cache)
        reconciler.start()
        if published is not None:
            owner.publish(db_path, published)
        try:
            yield
        finally:
            if published is not None:
                owner.withdraw(db_path, published)
            reconciler.stop()
            store.close()  # DuckDB checkpoints the file as it closes it: no log left to replay

    app = FastAPI(
        title="forgetmap",
        version=forgetmap.__version__,
        description=(
            "What did post-training make a model forget? Chance-adjusted flips, sample by sample."
        ),
        docs_url=None,  # served below from static/, not from a CDN
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.store = store
    app.state.settings = settings
    app.state.map_cache = MapCache(store)
    app.state.theory_lab = TheoryLab(settings.theory_seconds)
    app.state.enqueuer = enqueuer
    app.state.reconciler = reconciler
    app.state.command_line = command_line
    app.state.worker_rejections = RejectionLog()  # from the start: "no worker since it started"
    app.state.local_credential = published.credential if published is not None else None
    imports.install(app)  # uploads imported as jobs; what a stopped app left is settled

    @app.middleware("http")
    async def sessions_and_private_mode(request: Request, call_next):
        """Ends sessions that expired or whose token was revoked (so pages see no user), and with
        FORGETMAP_PRIVATE=1 makes every read need a login (pages) or a token of any role (API)."""
        path = request.url.path
        logged_in = current_principal(request) is not None  # no query without a session id
        if settings.private and not path.startswith(OPEN_WHEN_PRIVATE) and not logged_in:
            if path.startswith("/api/") or path == "/openapi.json":
                try:
                    principal = deps.bearer_principal(request)
                except HTTPException as exc:
                    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)
                if principal is None:
                    return JSONResponse(
                        {
                            "detail": (
                                "this forgetmap is private: send 'Authorization: Bearer <token>' "
                                "(any role; `forgetmap token create NAME --role read`)"
                            )
                        },
                        status_code=401,
                    )
            else:
                return login_redirect(path)
        return await call_next(request)

    # added after the middleware above, so it runs first and request.session exists there
    app.add_middleware(
        SessionMiddleware,
        secret_key=settings.secret_key,
        same_site="lax",
        session_cookie="forgetmap_session",
        max_age=int(settings.session_seconds),
    )
    # added last, so it runs first: a write's token and its body's size are checked before any
    # of the body is read (forgetmap.web.limits)
    app.add_middleware(BodyLimits)
    app.add_middleware(SecurityHeaders)  # outermost: on every answer, the refusals above included

    @app.exception_handler(LoginRequired)
    async def needs_login(request: Request, exc: LoginRequired):
        if request.headers.get("HX-Request") == "true":
            return JSONResponse(
                {"detail": "log in first"}, status_code=401, headers={"HX-Redirect": "/login"}
            )
        return login_redirect(exc.next_url)

    @app.get("/docs", include_in_schema=False)
    def docs():
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="forgetmap API",
            swagger_js_url=assets.url("swagger/swagger-ui-bundle.js"),
            swagger_css_url=assets.url("swagger/swagger-ui.css"),
            swagger_favicon_url=assets.url("favicon.svg"),
            swagger_ui_parameters={"persistAuthorization": True},  # kept across reloads
        )

    install_openapi(app)

    @app.exception_handler(405)
    async def method_not_allowed(request: Request, exc: HTTPException):
        """List every method the path takes: its GET and POST may live in different routers."""
        allowed = sorted(
            {
                m
                for route in app.router.routes
                if (methods := getattr(route, "methods", None))
                and route.matches(request.scope)[0] == Match.PARTIAL
                for m in methods
            }
        )
        return JSONResponse(
            {"detail": f"method {request.method} is not allowed here; use {' or '.join(allowed)}"},
            status_code=405,
            headers={"Allow": ", ".join(allowed)},
        )

    @app.get("/healthz", tags=["api"])
    def healthz(request: Request, response: Response) -> dict:
        deps.store(request).ping()
        if published is not None:  # which app answers: a reader of the owner file checks it
            response.headers[owner.APP_ID_HEADER] = published.app_id
        return {"status": "ok"}

    app.mount("/static", assets, name="static")
    for resource in (
        cli,
        forgetting_map,
        suggest,  # before pairs: /pairs/{id} would take "suggest" for an id
        versus,  # before pairs' own routes, as suggest
        pairs,
        samples,
        recovery,
        probes,
        merges,
        atlas,
        cross,
        theory,
        series,
        jobs,
        imports,
        shards,
        login,
    ):
        app.include_router(resource.router)
    install_error_pages(app)
    return app
