"""HTTP API (JSON). The dashboard pages are built on top of this in the dashboard issue."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from fastapi import FastAPI, Query
from fastapi.responses import JSONResponse

from app.db import open_store
from app.db.queries import list_pairs
from app.forgetting_map import MapQuery, map_records


def create_app(db_path: Path | str) -> FastAPI:
    store = open_store(db_path)
    app = FastAPI(title="forgetmap", version="0.1.0")

    @app.get("/healthz")
    def healthz() -> dict:
        with store.read() as conn:
            conn.exec_driver_sql("SELECT 1")
        return {"status": "ok"}

    @app.get("/api/map")
    def api_map(
        level: Literal["benchmark", "category"] = Query("category"),
        aggregate: Literal["macro", "micro"] = Query("macro"),
    ) -> JSONResponse:
        return JSONResponse(map_records(store, MapQuery(level=level, aggregate=aggregate)))

    @app.get("/api/pairs")
    def api_pairs() -> list[dict]:
        with store.read() as conn:
            return list_pairs(conn)

    return app
