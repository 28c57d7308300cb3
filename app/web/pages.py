"""HTML pages. Views are thin: data comes from the same functions as the JSON API."""

from __future__ import annotations

import functools
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.analysis.lab import LabBusy, LabParams, lab_data
from app.core.errors import InputError
from app.core.taxonomy import CATEGORIES
from app.db import queries
from app.runtime.resources import resource_dir
from app.services.map import MapQuery, category_sort_key
from app.services.pair_report import quadrants
from app.services.recovery import base_temperatures, view_rows
from app.services.series import series_groups
from app.web import deps, render
from app.web.openapi import validation_message
from app.web.schemas import Id
from app.web.session import csrf_token

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=resource_dir("templates"))
templates.env.globals.update(render=render, transition_labels=deps.TRANSITION_LABELS)


def _csrf(request: Request) -> str:
    return csrf_token(request)


templates.env.globals["csrf_token"] = _csrf


def _page(request: Request, name: str, **context) -> HTMLResponse:
    return templates.TemplateResponse(request, name, context)


def _is_htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"


def cached_for_readers(handler):
    """Serve a read page from cache until the next write, for visitors not logged in.

    Without a login a page depends only on its URL and the data (no CSRF token, no user name),
    so its HTML is kept per (data version, path, query, HTMX or not). Rendering costs 3-25 ms of
    CPU a request, which capped throughput under many clients. Errors are never cached.
    """

    @functools.wraps(handler)
    def wrapper(*args, **kwargs):
        request: Request = kwargs["request"]
        if request.session.get("user"):
            return handler(*args, **kwargs)
        key = ("html", request.url.path, request.url.query, _is_htmx(request))
        body = deps.map_cache(request).cache.get(key, lambda: handler(*args, **kwargs).body)
        return HTMLResponse(body)

    return wrapper


@router.get("/", response_class=HTMLResponse)
@cached_for_readers
def map_page(
    request: Request,
    query: Annotated[MapQuery, Depends(deps.map_query)],
    metric: str = "f_true",
    recovery: bool = False,
) -> HTMLResponse:
    cache = deps.map_cache(request)
    pairs = cache.pairs()
    records = cache.records(query)
    cells = cache.cells(query)
    shown = {c["pair_id"] for c in cells}
    columns = sorted(
        {c["column"] for c in cells}, key=category_sort_key if query.level == "category" else str
    )
    if query.level == "benchmark":
        category_of = {r["benchmark"]: r["category"] for r in records}
        columns.sort(key=lambda b: (category_sort_key(category_of[b]), b))
    return _page(
        request,
        "map.html",
        query=query,
        metric=metric,
        pairs=[p for p in pairs if p["id"] in shown],
        all_pairs=pairs,
        cells=cells,
        columns=columns,
        stages=sorted({p["stage"] for p in pairs if p["stage"]}),
        families=sorted({p["family"] for p in pairs if p["family"]}),
        categories=CATEGORIES,
        recovery={r["pair_id"]: r for r in deps.recovery_column(request)} if recovery else None,
        series=series_groups(cache),
    )


@router.get("/pairs/{pair_id}", response_class=HTMLResponse)
@cached_for_readers
def pair_page(request: Request, pair_id: Id) -> HTMLResponse:
    pair = deps.get_pair(request, pair_id)
    rows = deps.pair_rows(request, pair_id)
    recoveries = deps.pair_recoveries(request, pair_id)
    pairing = deps.pairing(request, pair_id)
    return _page(request, "pair.html", pair=pair, rows=rows, quadrants=quadrants(rows),
                 pairing=pairing, pairing_rule=queries.pairing_rule,
                 recoveries=recoveries, recovery_rows=view_rows(recoveries[0]) if recoveries else [],
                 base_temperatures=base_temperatures,
                 logged_in=bool(request.session.get("user")))  # fmt: skip


@router.get("/pairs/{pair_id}/samples", response_class=HTMLResponse)
@cached_for_readers
def samples_page(
    request: Request, pair_id: Id, query: Annotated[deps.SamplesQuery, Depends(deps.samples_query)]
) -> HTMLResponse:
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
        truncated=query.truncated,
        benchmarks=[b for b, _ in bench_rows],
        categories=sorted({c for _, c in bench_rows}, key=category_sort_key),
    )
    return _page(request, "_sample_rows.html" if _is_htmx(request) else "samples.html", **context)


@router.get("/pairs/{pair_id}/sample", response_class=HTMLResponse)
@cached_for_readers
def sample_page(
    request: Request, pair_id: Id, ref: Annotated[deps.SampleRef, Depends(deps.sample_ref)]
) -> HTMLResponse:
    pair = deps.get_pair(request, pair_id)
    seeds = deps.sample_seeds(request, pair, ref)
    context = dict(pair=pair, benchmark=ref.benchmark, sample_id=ref.sample_id, seeds=seeds,
                   first=seeds[0])  # fmt: skip
    return _page(request, "_sample.html" if _is_htmx(request) else "sample.html", **context)


@router.get("/cross", response_class=HTMLResponse)
@cached_for_readers
def cross_page(request: Request) -> HTMLResponse:
    with deps.store(request).read() as conn:
        forgotten = queries.most_forgotten(conn, limit=50)
        pairs = {p["id"]: p for p in queries.list_pairs(conn)}
    return _page(request, "cross.html", forgotten=forgotten, pairs=pairs)


def _wants_html(request: Request) -> bool:
    path = request.url.path
    return not (path.startswith("/api/") or path in ("/healthz", "/openapi.json")) and not _is_htmx(
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


def lab_params(
    separation: Annotated[
        float, Query(ge=2.0, le=12.0, description="distance between the modes")
    ] = 6.0,
    sigma: Annotated[float, Query(ge=0.25, le=4.0)] = 1.0,
    replay: Annotated[float, Query(ge=0.0, le=0.9, description="replay fraction lambda")] = 0.3,
    # above ~2.5 the lab's dynamics diverge; the grid cap and time budget back this range up
    lr: Annotated[float, Query(gt=0.0, le=2.0, description="gradient step size")] = 1.0,
    steps: Annotated[int, Query(ge=10, le=1000)] = 300,
    batch_size: Annotated[int, Query(ge=1, le=256)] = 8,
) -> LabParams:
    return LabParams(separation, sigma, replay, lr, steps, batch_size)


@router.get("/theory", response_class=HTMLResponse)
def theory_page(
    request: Request, params: Annotated[LabParams, Depends(lab_params)]
) -> HTMLResponse:
    try:
        data = lab_data(params)
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    except LabBusy as exc:
        raise HTTPException(503, str(exc), headers={"Retry-After": "5"}) from exc
    return _page(request, "theory.html", params=params, data=data)
