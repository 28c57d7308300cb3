"""Across pairs, as JSON: the samples forgotten by the most pairs (``/api/cross/forgotten``) and
forgetting against model size (``/api/cross/size``; the atlas page's scatter fetches it with
``recipes=true``: one dot per recipe, forgetmap.services.atlas). The page is the atlas
(app/web/atlas.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from forgetmap.core.naming import pair_label
from forgetmap.core.vocabularies import Aggregate
from forgetmap.db import queries
from forgetmap.services.atlas import recipes as atlas_recipes
from forgetmap.services.map import MapQuery
from forgetmap.web import deps

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
    request: Request,
    aggregate: Aggregate = "macro",
    recipes: Annotated[
        bool,
        Query(
            description="one record per recipe (a pair outside any series, or a series "
            "through its latest checkpoint), as the atlas counts; else one per pair"
        ),
    ] = False,
) -> list[dict]:
    """Total F_true and BT_true per pair (or per recipe) with the base model's size and the
    pair's stage; ``series``: the series a recipe's checkpoint belongs to (null for a pair)."""
    cache = deps.map_cache(request)
    records = cache.records(MapQuery(level="category", aggregate=aggregate))
    pairs = {p["id"]: p for p in cache.pairs()}
    chosen = {r["pair_id"]: r for r in atlas_recipes(cache)} if recipes else None
    out = []
    for r in records:
        if r["category"] != "Total" or (chosen is not None and r["pair_id"] not in chosen):
            continue
        pair = pairs[r["pair_id"]]
        record = {
            "pair_id": r["pair_id"],
            "label": pair_label(r),
            "stage": pair["stage"],
            "family": pair["family"],
            "size_params": pair["size_params"],
            "f_true": r["f_true"],
            "f_true_std": r["f_true_std"],
            "bt_true": r["bt_true"],
        }
        if chosen is not None:
            record["label"] = chosen[r["pair_id"]]["label"]
            record["series"] = chosen[r["pair_id"]]["series"]
        out.append(record)
    return out
