"""JSON endpoints (public contract: docs/api.md and docs/design.md). Every page's data is available here too."""

from __future__ import annotations

import io
from typing import Annotated, Literal

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response

from app.analysis.lab import LabBusy, LabParams, lab_data
from app.core.errors import InputError
from app.db import queries
from app.db import recoverability as recoveries
from app.services.jobs import job_detail, job_subject
from app.services.map import MapQuery
from app.services.pair_report import quadrants
from app.web import deps, pages
from app.web.schemas import ID_ERRORS, Id, errors

router = APIRouter(prefix="", tags=["api"])
# the export routes answer a file, CSV or Parquet by the path's suffix
TABLE = {200: {"description": "the table as a file",
               "content": {"text/csv": {"schema": {"type": "string"}},
                           "application/vnd.apache.parquet": {"schema": {"type": "string", "format": "binary"}}}}}  # fmt: skip


@router.get("/healthz")
def healthz(request: Request) -> dict:
    deps.store(request).ping()
    return {"status": "ok"}


@router.get("/api/map")
def api_map(
    request: Request,
    query: Annotated[MapQuery, Depends(deps.map_query)],
    page: Annotated[int | None, Query(ge=1, description="pages of page_size pairs")] = None,
    page_size: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> JSONResponse:
    """The forgetting map: the same records as `forgetmap map --format json`; with ``page``, the
    records of page_size pairs at a time (header X-Total-Pairs: pairs in all pages)."""
    if page is None:
        return Response(deps.map_cache(request).json(query), media_type="application/json")
    body, total = deps.map_cache(request).page_json(query, page, page_size)
    return Response(body, media_type="application/json", headers={"X-Total-Pairs": str(total)})


@router.get("/api/map/cells")
def api_map_cells(
    request: Request, query: Annotated[MapQuery, Depends(deps.map_query)]
) -> list[dict]:
    """The heatmap's cells: one per (pair, category or benchmark), seeds averaged."""
    return deps.map_cache(request).cells(query)


@router.get("/api/pairs")
def api_pairs(request: Request) -> list[dict]:
    return deps.map_cache(request).pairs()


@router.get("/api/models")
def api_models(request: Request) -> list[dict]:
    with deps.store(request).read() as conn:
        return queries.models(conn)


@router.get("/api/benchmarks")
def api_benchmarks(request: Request) -> list[dict]:
    with deps.store(request).read() as conn:
        return queries.benchmarks(conn)


@router.get("/api/pairs/{pair_id}", responses=ID_ERRORS)
def api_pair(request: Request, pair_id: Id) -> dict:
    """A pair with its per-benchmark table (means across seeds, the paired 95% interval, bootstrap
    CIs, McNemar p)."""
    pair = deps.get_pair(request, pair_id)
    rows = deps.pair_rows(request, pair_id)
    return {**_public(pair), "benchmarks": rows, "quadrants": quadrants(rows)}


def _public(pair: dict) -> dict:
    return {k: pair[k] for k in ("id", "base", "post", "label", "stage")}


@router.get(
    "/api/pairs/{pair_id}/benchmarks.{fmt}",
    response_class=Response,
    responses={**ID_ERRORS, **TABLE},
)
def api_pair_table_export(
    request: Request, pair_id: Id, fmt: Literal["csv", "parquet"]
) -> Response:
    """The pair page's table as CSV or Parquet."""
    import pyarrow as pa

    deps.get_pair(request, pair_id)
    rows = [dict(r) for r in deps.pair_rows(request, pair_id)]
    for r in rows:
        r["f_true_ci_low"], r["f_true_ci_high"] = r.pop("f_true_ci")
        r["bt_true_ci_low"], r["bt_true_ci_high"] = r.pop("bt_true_ci")
    return _table_response(pa.Table.from_pylist(rows), fmt, f"pair-{pair_id}-benchmarks")


@router.get(
    "/api/pairs/{pair_id}/samples.{fmt}", response_class=Response, responses={**ID_ERRORS, **TABLE}
)
def api_pair_samples_export(
    request: Request, pair_id: Id, fmt: Literal["csv", "parquet"]
) -> Response:
    """Every paired per-sample row of the pair, both models side by side, as CSV or Parquet."""
    pair = deps.get_pair(request, pair_id)
    with deps.store(request).read() as conn:
        table = queries.pair_sample_rows(conn, pair)
    return _table_response(table, fmt, f"pair-{pair_id}-samples")


def _table_response(table, fmt: str, stem: str) -> Response:
    buf = io.BytesIO()
    if fmt == "csv":
        pacsv.write_csv(table, buf)
        media = "text/csv; charset=utf-8"
    else:
        pq.write_table(table, buf)
        media = "application/vnd.apache.parquet"
    return Response(
        buf.getvalue(),
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="{stem}.{fmt}"'},
    )


@router.get("/api/pairs/{pair_id}/samples", responses=ID_ERRORS)
def api_pair_samples(
    request: Request, pair_id: Id, query: Annotated[deps.SamplesQuery, Depends(deps.samples_query)]
) -> dict:
    """Samples of the pair with the given transition (1->0 by default) in at least one seed;
    ``truncated=exclude`` leaves out the seeds whose answer was cut off (each sample says
    ``truncated``)."""
    pair = deps.get_pair(request, pair_id)
    total, rows = deps.flipped(request, pair, query)
    return {
        "pair": _public(pair),
        "transition": query.transition,
        "truncated": query.truncated,
        "total": total,
        "page": query.page,
        "page_size": query.page_size,
        "samples": rows,
    }


@router.get("/api/pairs/{pair_id}/sample", responses=ID_ERRORS)
def api_pair_sample(
    request: Request, pair_id: Id, ref: Annotated[deps.SampleRef, Depends(deps.sample_ref)]
) -> dict:
    """One sample: prompt, choices, gold, and both models' answers for every seed."""
    pair = deps.get_pair(request, pair_id)
    seeds = deps.sample_seeds(request, pair, ref)
    return {"pair": _public(pair), "benchmark": ref.benchmark, "sample_id": ref.sample_id,
            "seeds": seeds}  # fmt: skip


@router.get("/api/jobs")
def api_jobs(request: Request) -> list[dict]:
    with deps.store(request).read() as conn:
        jobs = queries.jobs_summary(conn)
    for job in jobs:
        series = (job["series"], job["step"]) if job["series"] is not None else None
        job["subject"] = job_subject(job.pop("payload"), series)
    return jobs


@router.get("/api/jobs/{job_id}", responses=ID_ERRORS)
def api_job(request: Request, job_id: Id) -> dict:
    """A job with every shard's state, progress and error."""
    with deps.store(request).read() as conn:
        job = job_detail(conn, job_id)
    if job is None:
        raise HTTPException(404, f"job {job_id} does not exist; GET /api/jobs lists the jobs")
    return job


@router.get("/api/pairs/{pair_id}/recoveries", responses=ID_ERRORS)
def api_pair_recoveries(request: Request, pair_id: Id) -> list[dict]:
    """The pair's recoverability analyses, newest first: settings, fitted corrections, and the
    share / symmetric share of the post model and of each control, with 95% bootstrap CIs."""
    deps.get_pair(request, pair_id)
    return deps.pair_recoveries(request, pair_id)


@router.get("/api/recoveries/{recovery_id}", responses=ID_ERRORS)
def api_recovery(request: Request, recovery_id: Id) -> dict:
    return deps.get_recovery(request, recovery_id)


@router.get(
    "/api/recoveries/{recovery_id}/documents.{fmt}",
    response_class=Response,
    responses={**ID_ERRORS, **TABLE},
)
def api_recovery_documents(
    request: Request, recovery_id: Id, fmt: Literal["csv", "parquet"]
) -> Response:
    """The per-document table (doc_id, split, n_tokens, one loss-sum column per model/correction,
    in nats): every share of the analysis can be recomputed from it."""
    deps.get_recovery(request, recovery_id)
    with deps.store(request).read() as conn:
        table = recoveries.documents_table(conn, recovery_id)
    return _table_response(pa.table(table), fmt, f"recovery-{recovery_id}-documents")


@router.get("/api/recovery")
def api_recovery_column(
    request: Request,
    correction: Annotated[
        Literal["bias", "temp", "bias_temp", "closed_bias"], Query()
    ] = "bias_temp",
) -> list[dict]:
    """The map's optional recoverability column: per pair, the newest analysis' symmetric share
    under one correction, beside the weight-noise control's (the random-corruption yardstick)."""
    return deps.recovery_column(request, correction)


@router.get("/api/cross/forgotten")
def api_most_forgotten(
    request: Request, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> list[dict]:
    """Samples forgotten (1->0 in most seeds) by the most pairs."""
    with deps.store(request).read() as conn:
        return queries.most_forgotten(conn, limit=limit)


@router.get("/api/cross/size")
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


@router.get("/api/theory", responses=errors(503))
def api_theory(params: Annotated[LabParams, Depends(pages.lab_params)]) -> dict:
    """The theory lab's four plots (two-mode mixture: forward vs reverse KL, replay). Cached per
    parameter set; 422 when the dynamics diverge or the computation runs past its time budget
    (FORGETMAP_THEORY_SECONDS), 503 while another computation holds the lab."""
    try:
        return lab_data(params)
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    except LabBusy as exc:
        raise HTTPException(503, str(exc), headers={"Retry-After": "5"}) from exc
