"""The web app: JSON API (api.py) and HTML pages (pages.py) over one Store.

``create_app`` opens the DuckDB file once; this process is then its only writer.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.staticfiles import StaticFiles

from app.db import open_store
from app.forgetting_map import MapCache
from app.queue import BrokerSettings, Enqueuer

ROOT = Path(__file__).resolve().parents[2]


def create_app(db_path: Path | str, *, broker: BrokerSettings | None = None) -> FastAPI:
    from app.web import api, pages, write_api

    store = open_store(db_path)
    app = FastAPI(
        title="forgetmap",
        version="0.1.0",
        description="What did post-training make a model forget? Chance-adjusted flips, sample by sample.",
        docs_url=None,  # served below from static/, not from a CDN
        redoc_url=None,
    )

    @app.get("/docs", include_in_schema=False)
    def docs():
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="forgetmap API",
            swagger_js_url="/static/swagger/swagger-ui-bundle.js",
            swagger_css_url="/static/swagger/swagger-ui.css",
            swagger_favicon_url="/static/favicon.svg",
        )

    app.state.store = store
    app.state.map_cache = MapCache(store)
    app.state.enqueuer = Enqueuer(broker or BrokerSettings.from_env(data_dir=Path(db_path).parent))
    app.mount("/static", StaticFiles(directory=ROOT / "static"), name="static")
    app.include_router(api.router)
    app.include_router(write_api.router)
    app.include_router(pages.router)
    pages.install_error_pages(app)
    return app
