"""The atlas: the page ``/atlas`` (questions ranked by how many independent recipes forget them
beyond chance, paged and filtered, with the size scatter), its JSON ``/api/atlas``, the whole
ranking as a file ``/api/atlas.csv|parquet``, and one question across every pair
(``/atlas/question`` and ``/api/atlas/question``). Numbers come from forgetmap.services.atlas."""

from __future__ import annotations

from typing import Annotated, Literal

import pyarrow as pa
from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from forgetmap.db import queries
from forgetmap.services.atlas import FATES, RANK_FIELDS, AtlasQuery, page, question_view, ranking
from forgetmap.web import deps
from forgetmap.web.responses import ID_ERRORS, TABLE, table_response
from forgetmap.web.templating import cached_for_readers, html_page

router = APIRouter(tags=["api"])
Text = Annotated[str | None, Query(max_length=500)]


def atlas_query(
    sizes: Annotated[deps.SizeRange, Depends(deps.size_range)],
    category: Text = None,
    benchmark: Text = None,
    family: Annotated[str | None, Query(max_length=200, description="the base's family")] = None,
    stage: Annotated[str | None, Query(max_length=50, description="the pair's stage")] = None,
    recovered_by_most: Annotated[
        bool,
        Query(
            description="only questions that most of the recipes which asked them again "
            "(their newest probe) recovered"
        ),
    ] = False,
) -> AtlasQuery:
    """The atlas's filters, the same for the page, its JSON and its files; empty means all (the
    page's form sends every field)."""
    return AtlasQuery(
        category=category or None,
        benchmark=benchmark or None,
        family=family or None,
        stage=stage or None,
        min_size=sizes.min_size,
        max_size=sizes.max_size,
        recovered_by_most=recovered_by_most,
    )


Filters = Annotated[AtlasQuery, Depends(atlas_query)]
Page = Annotated[int, Query(ge=1, le=1_000_000)]


@router.get("/api/atlas")
def api_atlas(
    request: Request,
    query: Filters,
    page_number: Annotated[int, Query(alias="page", ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=500)] = deps.PAGE_SIZE,
) -> dict:
    """Questions forgotten by at least one recipe, ranked by ``beyond`` = forgot - chance: how
    many independent recipes (a pair, or a whole series counted once) forgot each, beyond what
    guessing explains. ``recipes``: how many the filters keep; ``total``: questions ranked."""
    return page(deps.map_cache(request), query, page_number, page_size)


@router.get("/api/atlas.{fmt}", response_class=Response, responses=TABLE)
def api_atlas_file(request: Request, query: Filters, fmt: Literal["csv", "parquet"]) -> Response:
    """The whole ranking (every question some recipe forgot or learned) as CSV or Parquet."""
    rows = ranking(deps.map_cache(request), query)["questions"]
    table = pa.Table.from_pylist(
        [{f: r[f] for f in RANK_FIELDS} for r in rows],
        schema=pa.schema(
            [
                ("benchmark", pa.string()),
                ("category", pa.string()),
                ("sample_id", pa.string()),
                ("k", pa.int16()),
                ("forgot", pa.int64()),
                ("learned", pa.int64()),
                ("held", pa.int64()),
                ("chance", pa.float64()),
                ("beyond", pa.float64()),
                ("forgot_reliable", pa.int64()),
                ("learned_reliable", pa.int64()),
                ("probed", pa.int64()),
                ("recovered", pa.int64()),
                ("recovered_control", pa.int64()),
            ]
        ),
    )
    return table_response(table, fmt, "atlas")


def _question(request: Request, benchmark: str, sample_id: str) -> dict:
    found = question_view(deps.map_cache(request), benchmark, sample_id)
    if found is None:
        raise HTTPException(404, f"no question {sample_id!r} of benchmark {benchmark!r} is stored")
    return found


@router.get("/api/atlas/question", responses=ID_ERRORS)
def api_atlas_question(
    request: Request, ref: Annotated[deps.SampleRef, Depends(deps.sample_ref)]
) -> dict:
    """One question in every pair that holds it: each pair's fate (forgot, learned, kept, never,
    mixed), its series and step, and both answers per seed; ``recipe_counts`` counts the fates
    of the independent recipes only."""
    return _question(request, ref.benchmark, ref.sample_id)


@router.get("/atlas", response_class=HTMLResponse, include_in_schema=False)
@cached_for_readers
def atlas_page(
    request: Request,
    query: Filters,
    page_number: Annotated[int, Query(alias="page", ge=1, le=1_000_000)] = 1,
) -> HTMLResponse:
    cache = deps.map_cache(request)
    shown = page(cache, query, page_number, deps.PAGE_SIZE)
    with deps.store(request).read() as conn:
        known = queries.benchmarks(conn)
    pairs = cache.pairs()
    return html_page(
        request,
        "atlas.html",
        atlas=shown,
        query=query,
        pages=max((shown["total"] + deps.PAGE_SIZE - 1) // deps.PAGE_SIZE, 1),
        categories=sorted({b["category"] for b in known}),
        benchmarks=[b["name"] for b in known],
        families=sorted({p["family"] for p in pairs if p["family"]}),
        stages=sorted({p["stage"] for p in pairs if p["stage"]}),
        has_pairs=bool(pairs),
        query_string=request.url.query,
    )


@router.get("/atlas/question", response_class=HTMLResponse, include_in_schema=False)
@cached_for_readers
def atlas_question_page(
    request: Request, ref: Annotated[deps.SampleRef, Depends(deps.sample_ref)]
) -> HTMLResponse:
    q = _question(request, ref.benchmark, ref.sample_id)
    # the compact grid: a row per pair, a column per seed any pair ran, each cell that seed's
    # answers (None: the pair did not run it)
    seeds = sorted({s["seed"] for p in q["pairs"] for s in p["seeds"]})
    grid = {
        p["pair_id"]: [next((s for s in p["seeds"] if s["seed"] == seed), None) for seed in seeds]
        for p in q["pairs"]
    }
    return html_page(request, "atlas_question.html", q=q, fates=FATES, seeds=seeds, grid=grid)


@router.get("/cross", include_in_schema=False)
def cross_page() -> RedirectResponse:
    """The old "Across pairs" page is the atlas now."""
    return RedirectResponse("/atlas", status_code=308)
