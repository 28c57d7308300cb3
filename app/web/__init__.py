"""The web app: JSON API (api.py, write_api.py) and HTML pages (pages.py, submit.py) over one Store.

``create_app`` opens the DuckDB file once; this process is then its only writer. A background
reconciler sends queued shards that could not reach the broker when their job was saved.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.sessions import SessionMiddleware

from app.auth import token_owner
from app.config import WebSettings
from app.db import open_store
from app.forgetting_map import MapCache
from app.queue import BrokerSettings, Enqueuer, Reconciler

ROOT = Path(__file__).resolve().parents[2]
OPEN_WHEN_PRIVATE = ("/login", "/static/", "/healthz")


def create_app(
    db_path: Path | str,
    *,
    broker: BrokerSettings | None = None,
    settings: WebSettings | None = None,
) -> FastAPI:
    from app.web import api, pages, series, submit, write_api
    from app.web.session import LoginRequired, login_redirect

    data_dir = Path(db_path).resolve().parent
    store = open_store(db_path)
    settings = settings or WebSettings.from_env(data_dir)
    enqueuer = Enqueuer(broker or BrokerSettings.from_env(data_dir=data_dir))
    reconciler = Reconciler(store, enqueuer, settings.reconcile_seconds, settings.stale_seconds)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        reconciler.start()
        yield
        reconciler.stop()

    app = FastAPI(
        title="forgetmap",
        version="0.1.0",
        description="What did post-training make a model forget? Chance-adjusted flips, sample by sample.",
        docs_url=None,  # served below from static/, not from a CDN
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.store = store
    app.state.settings = settings
    app.state.map_cache = MapCache(store)
    app.state.enqueuer = enqueuer
    app.state.reconciler = reconciler

    @app.middleware("http")
    async def private_mode(request: Request, call_next):
        """With FORGETMAP_PRIVATE=1 every read needs a login (pages) or a token (API)."""
        path = request.url.path
        if (
            settings.private
            and not path.startswith(OPEN_WHEN_PRIVATE)
            and not request.session.get("user")
        ):
            if path.startswith("/api/") or path == "/openapi.json":
                scheme, _, token = request.headers.get("Authorization", "").partition(" ")
                with store.read() as conn:
                    owner = token_owner(conn, token.strip()) if scheme.lower() == "bearer" else None
                if owner is None:
                    return JSONResponse({"detail": "this forgetmap is private: send 'Authorization: Bearer <token>'"},
                                        status_code=401)  # fmt: skip
            else:
                return login_redirect(path)
        return await call_next(request)

    # added after the middleware above, so it runs first and request.session exists there
    app.add_middleware(SessionMiddleware, secret_key=settings.secret_key, same_site="lax",
                       session_cookie="forgetmap_session", max_age=14 * 24 * 3600)  # fmt: skip

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
            swagger_js_url="/static/swagger/swagger-ui-bundle.js",
            swagger_css_url="/static/swagger/swagger-ui.css",
            swagger_favicon_url="/static/favicon.svg",
        )

    app.mount("/static", StaticFiles(directory=ROOT / "static"), name="static")
    app.include_router(api.router)
    app.include_router(series.router)
    app.include_router(write_api.router)
    app.include_router(submit.router)
    app.include_router(pages.router)
    pages.install_error_pages(app)
    return app
