"""Across pairs, as JSON: the samples forgotten by the most pairs (``/api/cross/forgotten``) and
forgetting against model size (``/api/cross/size``, which the atlas page's scatter fetches). The
page is the atlas (app/web/atlas.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request

from app.db import queries
from app.services.map import MapQuery
from app.web import deps

router = APIRouter()
MOST_FORGOTTEN_SHOWN = 50


@router.get("/api/cross/forgotten", tags=["api"])
def api_most_forgotten(
    request: Request, limit: Annotated[int, Query(ge=1, le=500)] = MOST_FORGOTTEN_SHOWN
) -> list[dict]:
    """Samples forgotten (1->0 in most seeds) by the most pairs."""
    with deps.store(request).read() as conn:
        return queries.most_forgotten(conn, limit=limit)


@router.get("/api/cross/size", tags=["api"])
def api_size_scatter(
    request: Request, aggregate: Literal["macro", "micro"] = "macro"
) -> list[dict]:
    """Total F_true and BT_true per pair with the base model's size and the pair's stage."""
    records = deps.map_cache(request).records(MapQuery(level="category", aggregate=aggregate))
    pairs = {p["id"]: p for p in deps.map_cache(request).pairs()}
    return [
        {"pair_id": r["pair_id"], "label": r["label"] or f"{r['base']} → {r['post']}",
         "stage": pairs[r["pair_id"]]["stage"], "family": pairs[r["pair_id"]]["family"],
         "size_params": pairs[r["pair_id"]]["size_params"], "f_true": r["f_true"],
         "f_true_std": r["f_true_std"], "bt_true": r["bt_true"]}
        for r in records if r["category"] == "Total"
    ]  # fmt: skip
