"""Pairs: the pair page ``/pairs/{id}`` and its JSON ``/api/pairs/{id}``, the list
``GET /api/pairs``, pairing two imported models (``POST /api/pairs``, role submit) and the pair
page's table as a file (``/api/pairs/{id}/benchmarks.csv|parquet``)."""

from __future__ import annotations

from typing import Annotated, Literal

import pyarrow as pa
from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from forgetmap.contract.jobs import PairSpecIn
from forgetmap.core.errors import InputError
from forgetmap.db import queries
from forgetmap.db.pairing import add_pair
from forgetmap.services.pair_report import quadrants
from forgetmap.services.recovery import base_temperatures, view_rows
from forgetmap.web import deps
from forgetmap.web.responses import ID_ERRORS, TABLE, WRITE_ERRORS, table_response
from forgetmap.web.templating import cached_for_readers, html_page

PairExclude = Annotated[frozenset[str], Depends(deps.pair_exclude)]

router = APIRouter()


def public(pair: dict) -> dict:
    """What the JSON routes say about a pair."""
    return {k: pair[k] for k in ("id", "base", "post", "label", "stage")}


@router.get("/pairs/{pair_id}", response_class=HTMLResponse, include_in_schema=False)
@cached_for_readers
def pair_page(request: Request, pair_id: deps.Id, exclude: PairExclude) -> HTMLResponse:
    pair = deps.get_pair(request, pair_id)
    rows = deps.pair_rows(request, pair_id, exclude)
    recoveries = deps.pair_recoveries(request, pair_id)
    pairing = deps.pairing(request, pair_id)
    # the other recipes of this base: each a link to the two-pair comparison (app/web/versus.py)
    siblings = [
        p
        for p in deps.map_cache(request).pairs()
        if p["base"] == pair["base"] and p["id"] != pair_id
    ]
    return html_page(
        request,
        "pair.html",
        pair=pair,
        rows=rows,
        quadrants=quadrants(rows),
        siblings=siblings,
        pairing=pairing,
        pairing_rule=queries.pairing_rule,
        recoveries=recoveries,
        probes=deps.pair_probes(request, pair_id),
        sweeps=deps.pair_sweeps(request, pair),
        recovery_rows=view_rows(recoveries[0]) if recoveries else [],
        base_temperatures=base_temperatures,
        exclude=",".join(sorted(exclude)),
        logged_in=bool(request.session.get("user")),
    )


@router.get("/api/pairs", tags=["api"])
def api_pairs(request: Request) -> list[dict]:
    return deps.map_cache(request).pairs()


@router.get("/api/pairs/{pair_id}", tags=["api"], responses=ID_ERRORS)
def api_pair(request: Request, pair_id: deps.Id, exclude: PairExclude) -> dict:
    """A pair with its per-benchmark table (means across seeds, the paired 95% interval, bootstrap
    CIs, McNemar p, the 1->0 flips of each cause); ``exclude=no_answer,truncated`` leaves those
    causes' samples out of every count."""
    pair = deps.get_pair(request, pair_id)
    rows = deps.pair_rows(request, pair_id, exclude)
    return {**public(pair), "benchmarks": rows, "quadrants": quadrants(rows)}


@router.get(
    "/api/pairs/{pair_id}/benchmarks.{fmt}",
    tags=["api"],
    response_class=Response,
    responses={**ID_ERRORS, **TABLE},
)
def api_pair_table_export(
    request: Request, pair_id: deps.Id, fmt: Literal["csv", "parquet"]
) -> Response:
    """The pair page's table as CSV or Parquet."""
    deps.get_pair(request, pair_id)
    rows = [dict(r) for r in deps.pair_rows(request, pair_id)]
    for r in rows:
        r["f_true_ci_low"], r["f_true_ci_high"] = r.pop("f_true_ci")
        r["bt_true_ci_low"], r["bt_true_ci_high"] = r.pop("bt_true_ci")
    return table_response(pa.Table.from_pylist(rows), fmt, f"pair-{pair_id}-benchmarks")


@router.post("/api/pairs", tags=["write"], status_code=201, responses=WRITE_ERRORS)
def create_pair(request: Request, body: PairSpecIn, principal: deps.Submitter) -> dict:
    """Pair two imported models (role submit)."""
    try:
        with deps.store(request).transaction() as conn:
            pair_id, created, unpaired = add_pair(
                conn, body.base, body.post, label=body.label, stage=body.stage
            )
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    return {"id": pair_id, "created": created, "unpaired": unpaired}
