"""A pair's samples: the drill-down page ``/pairs/{id}/samples`` and its JSON
``/api/pairs/{id}/samples``, one sample's page ``/pairs/{id}/sample`` and its JSON
``/api/pairs/{id}/sample``, and every paired sample as a file
(``/api/pairs/{id}/samples.csv|parquet``). Each page and its JSON take their query through the same
dependency (deps.samples_query, deps.sample_ref)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from forgetmap.db import flips, queries
from forgetmap.services.map import category_sort_key
from forgetmap.services.pair_report import expected_flips
from forgetmap.services.series import series_groups
from forgetmap.web import deps
from forgetmap.web.pairs import public
from forgetmap.web.responses import ID_ERRORS, TABLE, table_response
from forgetmap.web.templating import cached_for_readers, html_page, is_htmx

router = APIRouter()
DrillDown = Annotated[deps.SamplesQuery, Depends(deps.samples_query)]
Sample = Annotated[deps.SampleRef, Depends(deps.sample_ref)]


@router.get("/pairs/{pair_id}/samples", response_class=HTMLResponse, include_in_schema=False)
@cached_for_readers
def samples_page(request: Request, pair_id: deps.Id, query: DrillDown) -> HTMLResponse:
    pair = deps.get_pair(request, pair_id)
    total, rows = deps.flipped(request, pair, query)
    with deps.store(request).read() as conn:
        bench_rows = queries.pair_benchmarks(conn, pair_id)
    context = dict(
        pair=pair,
        rows=rows,
        total=total,
        page=query.page,
        page_size=query.page_size,
        pages=max((total + query.page_size - 1) // query.page_size, 1),
        benchmark=query.benchmark,
        category=query.category,
        transition=query.transition,
        q=query.q or "",
        exclude=",".join(sorted(query.exclude)),
        cause=query.cause or "",
        benchmarks=[b for b, _ in bench_rows],
        categories=sorted({c for _, c in bench_rows}, key=category_sort_key),
        expected=expected_flips(
            deps.pair_rows(request, pair_id, frozenset(query.exclude)),
            query.transition,
            benchmark=query.benchmark,
            category=query.category,
        ),
    )
    template = "_sample_rows.html" if is_htmx(request) else "samples.html"
    return html_page(request, template, **context)


@router.get("/api/pairs/{pair_id}/samples", tags=["api"], responses=ID_ERRORS)
def api_pair_samples(request: Request, pair_id: deps.Id, query: DrillDown) -> dict:
    """Samples of the pair with the given transition (1->0 by default) in at least one seed;
    ``exclude=no_answer,truncated`` (or ``truncated=exclude``) leaves out the seeds whose answer
    (either side's) had one of those causes, ``cause=`` keeps only the seeds with that one; each
    sample lists its ``causes`` (and says ``truncated``)."""
    pair = deps.get_pair(request, pair_id)
    total, rows = deps.flipped(request, pair, query)
    return {
        "pair": public(pair),
        "transition": query.transition,
        "truncated": "exclude" if "truncated" in query.exclude else "include",
        "exclude": sorted(query.exclude),
        "cause": query.cause,
        "total": total,
        "page": query.page,
        "page_size": query.page_size,
        "samples": rows,
    }


@router.get("/pairs/{pair_id}/sample", response_class=HTMLResponse, include_in_schema=False)
@cached_for_readers
def sample_page(request: Request, pair_id: deps.Id, ref: Sample) -> HTMLResponse:
    pair = deps.get_pair(request, pair_id)
    seeds = deps.sample_seeds(request, pair, ref)
    # the runs this pair is a checkpoint of: the question's history along each
    runs = [
        s
        for s in series_groups(deps.map_cache(request))
        if any(step["pair_id"] == pair_id for step in s["steps"])
    ]
    context = dict(
        pair=pair,
        benchmark=ref.benchmark,
        sample_id=ref.sample_id,
        seeds=seeds,
        first=seeds[0],
        runs=runs,
    )
    return html_page(request, "_sample.html" if is_htmx(request) else "sample.html", **context)


@router.get("/api/pairs/{pair_id}/sample", tags=["api"], responses=ID_ERRORS)
def api_pair_sample(request: Request, pair_id: deps.Id, ref: Sample) -> dict:
    """One sample: prompt, choices, gold, and both models' answers for every seed."""
    pair = deps.get_pair(request, pair_id)
    seeds = deps.sample_seeds(request, pair, ref)
    return {
        "pair": public(pair),
        "benchmark": ref.benchmark,
        "sample_id": ref.sample_id,
        "seeds": seeds,
    }


@router.get(
    "/api/pairs/{pair_id}/samples.{fmt}",
    tags=["api"],
    response_class=Response,
    responses={**ID_ERRORS, **TABLE},
)
def api_pair_samples_export(
    request: Request, pair_id: deps.Id, fmt: Literal["csv", "parquet"]
) -> Response:
    """Every paired per-sample row of the pair, both models side by side, as CSV or Parquet."""
    pair = deps.get_pair(request, pair_id)
    with deps.store(request).read() as conn:
        table = flips.pair_sample_rows(conn, pair)
    return table_response(table, fmt, f"pair-{pair_id}-samples")
