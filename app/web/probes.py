"""Probes of a pair (issue 53): the form ``/pairs/{id}/probe`` (a login with role submit; a
cell's drill-down opens it for its benchmark), the pair's stored probes with their reports
(``/api/pairs/{id}/probes``) and one probe's outcomes (``/api/probes/{id}/outcomes``). A probe is
also submitted as a job (``POST /api/jobs`` with ``"kind": "probe"``, or ``forgetmap probe``);
the pair page shows the newest (pairs.py, templates/_probe.html)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from forgetmap.core.errors import InputError
from forgetmap.db import jobs as jobs_db
from forgetmap.db import judge as judge_db
from forgetmap.db import probe as probe_db
from forgetmap.db import queries
from forgetmap.services.probe import create_probe_job
from forgetmap.services.queue import send_and_record
from forgetmap.services.tokens import Role
from forgetmap.web import deps
from forgetmap.web.forms import parse_probe
from forgetmap.web.responses import ID_ERRORS
from forgetmap.web.session import check_csrf, csrf_token, require_login
from forgetmap.web.templating import html_page

router = APIRouter()
PROBE_DEFAULTS = {"cause": "all", "max_flips": "2000", "kept": "200", "seed": "0", "engine": "vllm"}


def _probe_page(request: Request, pair: dict, values: dict, errors: dict) -> HTMLResponse:
    return html_page(
        request,
        "probe.html",
        pair=pair,
        values={**PROBE_DEFAULTS, **values},
        errors=errors,
        csrf=csrf_token(request),
    )


@router.get("/pairs/{pair_id}/probe", response_class=HTMLResponse, include_in_schema=False)
def probe_page(
    request: Request,
    pair_id: deps.Id,
    benchmark: Annotated[str | None, Query(max_length=200)] = None,
    cause: Annotated[Literal["all", "answered", "no_answer"], Query()] = "all",
) -> HTMLResponse:
    require_login(request, Role.submit)
    pair = deps.get_pair(request, pair_id)
    with deps.store(request).read() as conn:
        specs = queries.model_specs(conn, [pair["base"], pair["post"]])
    values = {
        "base_path": (specs.get(pair["base"]) or {}).get("path", ""),
        "post_path": (specs.get(pair["post"]) or {}).get("path", ""),
        "benchmark": benchmark or "",
        "cause": cause,
    }
    return _probe_page(request, pair, values, {})


@router.post("/pairs/{pair_id}/probe", include_in_schema=False)
async def probe_submit(request: Request, pair_id: deps.Id) -> Response:
    principal = require_login(request, Role.submit)
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    pair = deps.get_pair(request, pair_id)
    values = {k: str(v) for k, v in form.items() if k != "csrf"}
    probe_request, errors = parse_probe(request, pair, values)
    if probe_request is None:
        return _probe_page(request, pair, values, errors)
    try:
        with deps.store(request).transaction() as conn:
            job_id, to_send = create_probe_job(conn, probe_request)
            jobs_db.set_owner(conn, job_id, principal.name)
    except InputError as exc:
        return _probe_page(request, pair, values, {"form": str(exc)})
    _, problem = send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return RedirectResponse(f"/jobs/{job_id}" + ("?queue=down" if problem else ""), status_code=303)


@router.get("/api/pairs/{pair_id}/probes", tags=["api"], responses=ID_ERRORS)
def api_pair_probes(request: Request, pair_id: deps.Id) -> list[dict]:
    """The pair's probes, newest first: the models and options each ran with, and its report:
    per arm (the flips, and the shuffled, kept and base controls) the items probed, recovered,
    the rate and the chance rate; the flips' recovery beyond the shuffled control with its 95%
    interval; the flips per benchmark; what was left out and why."""
    deps.get_pair(request, pair_id)
    return deps.pair_probes(request, pair_id)


@router.get("/api/probes/{probe_id}/outcomes", tags=["api"], responses=ID_ERRORS)
def api_probe_outcomes(
    request: Request,
    probe_id: deps.Id,
    arm: Annotated[Literal["flips", "shuffled", "kept", "base"] | None, Query()] = None,
) -> list[dict]:
    """Every outcome of a probe (of one arm): the row it asked about, its option count, the gold
    option and the one the model ranked first (null: a tie at the top)."""
    with deps.store(request).read() as conn:
        if not probe_db.probe_exists(conn, probe_id):
            raise HTTPException(404, f"probe {probe_id} does not exist")
        return probe_db.probe_outcomes(conn, probe_id, arm)


@router.get("/api/pairs/{pair_id}/judges", tags=["api"], responses=ID_ERRORS)
def api_pair_judges(request: Request, pair_id: deps.Id) -> list[dict]:
    """The pair's judge runs, newest first: the score set each wrote (``scores=`` of the map),
    the judge's model and prompt, and its audit: on rows the harness read an option from, how
    often the judge named the same one; how many unread answers it found an option in."""
    deps.get_pair(request, pair_id)
    with deps.store(request).read() as conn:
        return judge_db.pair_judges(conn, pair_id)
