"""The forgetting map: its page ``/``, its JSON (``/api/map``, ``/api/map/cells``) and the models
and benchmarks it is drawn from (``/api/models``, ``/api/benchmarks``). The page and its JSON take
their filters through one dependency (deps.map_query)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Literal

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response
from forgetmap.core.metrics import OUTSIDE_TOTAL, TOTAL
from forgetmap.core.taxonomy import CATEGORIES
from forgetmap.db import queries
from forgetmap.db.categories import category_changes
from forgetmap.services.map import MapQuery, category_sort_key
from forgetmap.services.map_cache import MapCache
from forgetmap.services.probe_cells import with_newest_probes
from forgetmap.services.series import series_groups
from forgetmap.web import deps
from forgetmap.web.responses import ID_ERRORS
from forgetmap.web.templating import cached_for_readers, html_page

router = APIRouter()
Filters = Annotated[MapQuery, Depends(deps.map_query)]

# what the page can colour the map by, with the labels of its menu (static/map.js draws each;
# the records of /api/map carry them all); any other value is a 422 naming these
MetricName = Literal["f_true", "bt_true", "net", "f", "bt", "f_rel"]
METRICS: dict[MetricName, str] = {
    "f_true": "F_true: chance-adjusted forgetting",
    "bt_true": "BT_true: chance-adjusted backward transfer",
    "net": "net = BT_true − F_true",
    "f": "raw F (1→0 rate)",
    "bt": "raw BT (0→1 rate)",
    "f_rel": "F_true / F_max",
}
Metric = Annotated[MetricName, Query(description="what the map is coloured by")]
# the colour range is fixed, not the largest value on screen (a lone outlier would wash out every
# other cell): static/map.js's defaults (25% for rates, 100% for f_rel), or this value
Probes = Annotated[
    bool,
    Query(
        description="add what asking again found (each pair's newest probe): n_10_probed, "
        "n_10_recovered and recovered_control (the shuffled control on the same flips), together"
    ),
]
Zmax = Annotated[
    float | None,
    Query(gt=0, le=1, description="the value drawn darkest (net: -zmax to zmax); default 0.25"),
]


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
@cached_for_readers
def map_page(
    request: Request,
    query: Filters,
    metric: Metric = "f_true",
    recovery: bool = False,
    probes: Probes = False,
    zmax: Zmax = None,
    order: Annotated[
        Literal["added", "total", "name", "similar"],
        Query(
            description="the heatmap's rows: as added, largest Total first, by name, or similar "
            "rows together"
        ),
    ] = "added",
) -> HTMLResponse:
    cache = deps.map_cache(request)
    records = cache.records(query)
    cells = cache.cells(query)
    pairs = cache.pairs()
    shown = {c["pair_id"] for c in cells}
    columns = sorted(
        {c["column"] for c in cells}, key=category_sort_key if query.level == "category" else str
    )
    groups = None
    if query.level == "benchmark":
        category_of = {r["benchmark"]: r["category"] for r in records}
        columns.sort(key=lambda b: (category_sort_key(category_of[b]), b))
        cells, columns = _with_total(cache, query, cells, columns)
        # each column's category: the heatmap groups its benchmarks under them
        groups = [category_of.get(c, TOTAL) for c in columns]
    if probes:
        cells = with_newest_probes(deps.store(request), cells, query.level)
    return html_page(
        request,
        "map.html",
        query=query,
        metric=metric,
        metrics=METRICS,
        zmax=zmax,
        order=order,
        pairs=[p for p in pairs if p["id"] in shown],
        all_pairs=pairs,
        cells=cells,
        columns=columns,
        groups=groups,
        stages=sorted({p["stage"] for p in pairs if p["stage"]}),
        families=sorted({p["family"] for p in pairs if p["family"]}),
        categories=CATEGORIES,
        recovery={r["pair_id"]: r for r in deps.recovery_column(request)} if recovery else None,
        probes=probes,
        series=series_groups(cache),
        score_sets=deps.score_set_names(request),
        outside_total=_outside_total(request, records),
        category_history=_category_changes(request),
    )


def _with_total(
    cache: MapCache, query: MapQuery, cells: list[dict], columns: list[str]
) -> tuple[list[dict], list[str]]:
    """A benchmark-level map's cells and columns with the category map's Total after the
    benchmarks: the same number at both levels, so that a row reads alike at either. Not where
    a benchmark is itself named Total."""
    if not columns or TOTAL in columns:
        return cells, columns
    totals = [c for c in cache.cells(replace(query, level="category")) if c["column"] == TOTAL]
    if not totals:
        return cells, columns
    return [*cells, *totals], [*columns, TOTAL]


def _outside_total(request: Request, records: list[dict]) -> dict[str, list[str]]:
    """The benchmarks that Total leaves out, by category (Uncategorized, Not scored), when the map
    shows any: named on the page, so that a Total over 9 of 10 benchmarks says so."""
    shown = {r["category"] for r in records} & OUTSIDE_TOTAL
    if not shown:
        return {}
    with deps.store(request).read() as conn:
        stored = queries.benchmarks(conn)
    return {c: sorted(b["name"] for b in stored if b["category"] == c) for c in sorted(shown)}


@router.get("/api/map", tags=["api"], responses=ID_ERRORS)
def api_map(
    request: Request,
    query: Filters,
    page: Annotated[int | None, Query(ge=1, description="pages of page_size pairs")] = None,
    page_size: Annotated[int, Query(ge=1, le=1000)] = 50,
    probes: Probes = False,
) -> Response:
    """The forgetting map: the same records as `forgetmap map --format json`; with ``page``, the
    records of page_size pairs at a time (header X-Total-Pairs: pairs in all pages)."""
    cache = deps.map_cache(request)
    if page is None:
        body = cache.json(query)
        headers = {}
    else:
        body, total = cache.page_json(query, page, page_size)
        headers = {"X-Total-Pairs": str(total)}
    if probes:
        records = orjson.loads(body)
        body = orjson.dumps(with_newest_probes(deps.store(request), records, query.level))
    return Response(body, media_type="application/json", headers=headers)


@router.get("/api/map/cells", tags=["api"], responses=ID_ERRORS)
def api_map_cells(request: Request, query: Filters) -> list[dict]:
    """The heatmap's cells: one per (pair, category or benchmark), seeds averaged."""
    return deps.map_cache(request).cells(query)


@router.get("/api/models", tags=["api"])
def api_models(request: Request) -> list[dict]:
    with deps.store(request).read() as conn:
        return queries.models(conn)


@router.get("/api/benchmarks", tags=["api"])
def api_benchmarks(request: Request) -> list[dict]:
    with deps.store(request).read() as conn:
        return queries.benchmarks(conn)


@router.get("/api/benchmarks/category-changes", tags=["api"])
def api_category_changes(request: Request) -> list[dict]:
    """Every change an import made to a stored benchmark's category, newest first (at most 200):
    benchmark, ``old`` and ``new`` category, ``changed_at`` (UTC), ``source`` (what named it) and
    ``pairs``: the pairs holding the benchmark, whose numbers the change moved."""
    return _category_changes(request)


def _category_changes(request: Request) -> list[dict]:
    def load() -> list[dict]:
        with deps.store(request).read() as conn:
            return category_changes(conn)

    return deps.map_cache(request).cache.get(("category-changes",), load)
