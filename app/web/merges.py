"""Merge sweeps of a pair (issue 54): the form ``/pairs/{id}/merge`` (a login with role submit)
that sends a sweep as a job, as ``POST /api/jobs`` with ``"kind": "merge"`` or `forgetmap merge
sweep` do. The sweep's own page is its series' (/series/{id}); the pair page lists the pair's
sweeps (templates/_merge.html)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from forgetmap.contract.merge import DEFAULT_MIXES
from forgetmap.core.errors import InputError
from forgetmap.db import jobs as jobs_db
from forgetmap.db import queries
from forgetmap.services.merge import create_merge_job
from forgetmap.services.queue import send_and_record
from forgetmap.services.tokens import Role
from forgetmap.web import deps
from forgetmap.web.forms import parse_merge
from forgetmap.web.session import check_csrf, csrf_token, require_login
from forgetmap.web.templating import html_page

router = APIRouter()
MERGE_DEFAULTS = {
    "method": "linear",
    "density": "0.5",
    "mixes": ", ".join(f"{m:g}" for m in DEFAULT_MIXES),
    "series": "",
}


def _stored(request: Request, pair: dict) -> tuple[dict[str, str], dict[str, str]]:
    """Each side's stored checkpoint path and prompting (what its evaluations ran with)."""
    with deps.store(request).read() as conn:
        specs = queries.model_specs(conn, [pair["base"], pair["post"]])
    paths, prompting = {}, {}
    for side, default in (("base", "base"), ("post", "chat")):
        spec = specs.get(pair[side]) or {}
        paths[f"{side}_path"] = spec.get("path", "")
        prompting[side] = spec.get("prompting") or default
    return paths, prompting


def _merge_page(request: Request, pair: dict, values: dict, errors: dict) -> HTMLResponse:
    return html_page(
        request,
        "merge.html",
        pair=pair,
        values={**MERGE_DEFAULTS, **values},
        errors=errors,
        csrf=csrf_token(request),
    )


@router.get("/pairs/{pair_id}/merge", response_class=HTMLResponse, include_in_schema=False)
def merge_page(request: Request, pair_id: deps.Id) -> HTMLResponse:
    require_login(request, Role.submit)
    pair = deps.get_pair(request, pair_id)
    paths, _ = _stored(request, pair)
    return _merge_page(request, pair, paths, {})


@router.post("/pairs/{pair_id}/merge", include_in_schema=False)
async def merge_submit(request: Request, pair_id: deps.Id) -> Response:
    principal = require_login(request, Role.submit)
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    pair = deps.get_pair(request, pair_id)
    values = {k: str(v) for k, v in form.items() if k != "csrf"}
    _, prompting = _stored(request, pair)
    sweep, errors = parse_merge(request, pair, values, prompting)
    if sweep is None:
        return _merge_page(request, pair, values, errors)
    try:
        with deps.store(request).transaction() as conn:
            job_id, to_send = create_merge_job(conn, sweep)
            jobs_db.set_owner(conn, job_id, principal.name)
    except InputError as exc:
        return _merge_page(request, pair, values, {"form": str(exc)})
    _, problem = send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return RedirectResponse(f"/jobs/{job_id}" + ("?queue=down" if problem else ""), status_code=303)
