"""Recoverability: a pair's form ``/pairs/{id}/recover`` (a login with role submit), its analyses
(``/api/pairs/{id}/recoveries``, ``/api/recoveries/{id}``, the per-document table
``/api/recoveries/{id}/documents.csv|parquet``) and the map's recoverability column
(``/api/recovery``). The pair page shows the newest analysis (pairs.py)."""

from __future__ import annotations

from typing import Annotated, Literal

import pyarrow as pa
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from forgetmap.core.errors import InputError
from forgetmap.db import jobs as jobs_db
from forgetmap.db import queries
from forgetmap.db import recoverability as recoveries
from forgetmap.services.queue import send_and_record
from forgetmap.services.recovery import create_recovery_job
from forgetmap.services.tokens import Role
from forgetmap.web import deps
from forgetmap.web.forms import local_corpora, parse_recovery
from forgetmap.web.responses import ID_ERRORS, TABLE, table_response
from forgetmap.web.session import check_csrf, csrf_token, require_login
from forgetmap.web.templating import html_page

router = APIRouter()
RECOVER_DEFAULTS = {
    "corpus_kind": "local",
    "hf_split": "train",
    "text_field": "text",
    "max_docs": "2000",
    "max_tokens": "2047",
    "k": "4096",
    "seed": "0",
}


def _recover_page(request: Request, pair: dict, values: dict, errors: dict) -> HTMLResponse:
    return html_page(
        request,
        "recover.html",
        pair=pair,
        values={**RECOVER_DEFAULTS, **values},
        errors=errors,
        csrf=csrf_token(request),
        local=local_corpora(request),
    )


@router.get("/pairs/{pair_id}/recover", response_class=HTMLResponse, include_in_schema=False)
def recover_page(request: Request, pair_id: int) -> HTMLResponse:
    require_login(request, Role.submit)
    pair = deps.get_pair(request, pair_id)
    with deps.store(request).read() as conn:
        specs = queries.model_specs(conn, [pair["base"], pair["post"]])
    values = {}
    for side in ("base", "post"):
        spec = specs.get(pair[side]) or {}
        values[f"{side}_path"] = spec.get("path", "")
        values[f"{side}_revision"] = spec.get("revision") or ""
    return _recover_page(request, pair, values, {})


@router.post("/pairs/{pair_id}/recover", include_in_schema=False)
async def recover_submit(request: Request, pair_id: int) -> Response:
    principal = require_login(request, Role.submit)
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    pair = deps.get_pair(request, pair_id)
    values = {k: str(v) for k, v in form.items() if k != "csrf"}
    recovery_request, errors = parse_recovery(request, pair, values)
    if recovery_request is None:
        return _recover_page(request, pair, values, errors)
    try:
        with deps.store(request).transaction() as conn:
            job_id, to_send = create_recovery_job(conn, recovery_request)
            jobs_db.set_owner(conn, job_id, principal.name)
    except InputError as exc:
        return _recover_page(request, pair, values, {"form": str(exc)})
    _, problem = send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return RedirectResponse(f"/jobs/{job_id}" + ("?queue=down" if problem else ""), status_code=303)


@router.get("/api/pairs/{pair_id}/recoveries", tags=["api"], responses=ID_ERRORS)
def api_pair_recoveries(request: Request, pair_id: deps.Id) -> list[dict]:
    """The pair's recoverability analyses, newest first: settings, fitted corrections, and the
    share / symmetric share of the post model and of each control, with 95% bootstrap CIs."""
    deps.get_pair(request, pair_id)
    return deps.pair_recoveries(request, pair_id)


@router.get("/api/recoveries/{recovery_id}", tags=["api"], responses=ID_ERRORS)
def api_recovery(request: Request, recovery_id: deps.Id) -> dict:
    return deps.get_recovery(request, recovery_id)


@router.get(
    "/api/recoveries/{recovery_id}/documents.{fmt}",
    tags=["api"],
    response_class=Response,
    responses={**ID_ERRORS, **TABLE},
)
def api_recovery_documents(
    request: Request, recovery_id: deps.Id, fmt: Literal["csv", "parquet"]
) -> Response:
    """The per-document table (doc_id, split, n_tokens, one loss-sum column per model/correction,
    in nats): every share of the analysis can be recomputed from it."""
    deps.get_recovery(request, recovery_id)
    with deps.store(request).read() as conn:
        table = recoveries.documents_table(conn, recovery_id)
    return table_response(pa.table(table), fmt, f"recovery-{recovery_id}-documents")


@router.get("/api/recovery", tags=["api"])
def api_recovery_column(
    request: Request,
    correction: Annotated[
        Literal["bias", "temp", "bias_temp", "closed_bias"], Query()
    ] = "bias_temp",
) -> list[dict]:
    """The map's optional recoverability column: per pair, the newest analysis' symmetric share
    under one correction, beside the weight-noise control's (the random-corruption yardstick)."""
    return deps.recovery_column(request, correction)
