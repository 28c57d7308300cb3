"""Jobs: the submission form ``/submit``, the jobs pages ``/jobs`` and ``/jobs/{id}`` with their
JSON (``GET /api/jobs``, ``GET /api/jobs/{id}``), submitting a job (``POST /api/jobs``, or the
form), and cancel and retry (``POST /api/jobs/{id}/cancel|retry``, or the job page's buttons).

Writes through the API need a token of role submit; the pages need a login and a CSRF token bound
to the signed session. Either way only a job's owner, or an admin, may cancel or retry it.
"""

from __future__ import annotations

import time
from datetime import datetime

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from forgetmap.contract.job_in import JobIn
from forgetmap.contract.jobs import (
    TERMINAL,
    EvaluateJobIn,
    JobStatus,
    SeriesJobIn,
    ShardStatus,
)
from forgetmap.contract.judge import JudgeJobIn
from forgetmap.contract.merge import MergeJobIn, SoupJobIn
from forgetmap.contract.probe import ProbeJobIn
from forgetmap.core.errors import InputError
from forgetmap.core.stages import Stage
from forgetmap.core.taxonomy import CATEGORIES, scored_benchmarks
from forgetmap.db import jobs as jobs_db
from forgetmap.db import queries
from forgetmap.db import series as series_db
from forgetmap.services import job_view, jobs
from forgetmap.services.judge import create_judge_job
from forgetmap.services.merge import create_merge_job, create_soup_job
from forgetmap.services.probe import create_probe_job
from forgetmap.services.queue import send_and_record
from forgetmap.services.recovery import create_recovery_job
from forgetmap.services.series import submit_run
from forgetmap.services.tokens import Principal, Role
from forgetmap.web import deps
from forgetmap.web.forms import (
    local_benchmarks,
    model_rules,
    parse_series_submission,
    parse_submission,
)
from forgetmap.web.responses import ID_ERRORS, WRITE_ERRORS, WRITE_ID_ERRORS
from forgetmap.web.session import check_csrf, csrf_token, current_principal, require_login
from forgetmap.web.templating import html_page, is_htmx

router = APIRouter()
DEFAULTS = {
    "base_prompting": "base",
    "post_prompting": "chat",
    "suite": "paper",
    "seeds": "3",
    "engine": "vllm",
    "mode": "generate",
    "temperature": "0.6",
    "top_p": "0.95",
    "max_tokens": "2048",
    "stage": "instruct",
    "target": "pair",
    "adaptive_target": "1.5",
}


def job_summaries(request: Request) -> list[dict]:
    """Every job, newest first, each with a one-line subject (the jobs page and its JSON)."""
    with deps.store(request).read() as conn:
        summaries = queries.jobs_summary(conn)
    for job in summaries:
        series = (job["series"], job["step"]) if job["series"] is not None else None
        job["subject"] = job_view.job_subject(job.pop("payload"), series)
    return summaries


@router.get("/jobs", response_class=HTMLResponse, include_in_schema=False)
def jobs_page(request: Request) -> HTMLResponse:
    return html_page(request, "jobs.html", jobs=job_summaries(request))


@router.get("/api/jobs", tags=["api"])
def api_jobs(request: Request) -> list[dict]:
    return job_summaries(request)


def _progress(job: dict) -> dict:
    """Per (model, benchmark): shards by state and items done; the job's ETA from its pace."""
    groups: dict[tuple[str, str], dict] = {}
    for s in job["shards"]:
        g = groups.setdefault(
            (s["model"], s["benchmark"]),
            {"model": s["model"], "benchmark": s["benchmark"], "shards": [], "done": 0, "total": 0},
        )
        g["shards"].append(s)
        g["done"] += s["done"] or 0
        g["total"] += s["total"] or 0
    done = sum(g["done"] for g in groups.values())
    total = sum(g["total"] for g in groups.values())
    started = [s["started_at"] for s in job["shards"] if s["started_at"]]
    eta = None
    if started and 0 < done < total and job["status"] in (JobStatus.queued, JobStatus.running):
        elapsed = time.time() - min(datetime.fromisoformat(t).timestamp() for t in started)
        eta = elapsed / done * (total - done)
    finished = sum(s["status"] in TERMINAL for s in job["shards"])
    return {
        "groups": list(groups.values()),
        "done": done,
        "total": total,
        "eta": eta,
        "finished": finished,
        "shards": len(job["shards"]),
        "failures": [s for s in job["shards"] if s["status"] == ShardStatus.failed],
    }


def job_with_waiting(request: Request, job_id: int) -> dict:
    """A job with every shard (deps.get_job) and ``waiting_reason``: why its queued shards do not
    move, when the app recently refused a worker's token or has heard from no worker since it
    started (null otherwise)."""
    job = deps.get_job(request, job_id)
    now = time.time()
    log = deps.worker_rejections(request)
    job["waiting_reason"] = job_view.waiting_reason(
        job, log.blocking(now), now, worker_heard_at=log.accepted_at, app_started_at=log.started_at
    )
    return job


@router.get("/jobs/{job_id}", response_class=HTMLResponse, include_in_schema=False)
def job_page(request: Request, job_id: int, queue: str | None = None) -> HTMLResponse:
    job = job_with_waiting(request, job_id)
    pair_id = None
    with deps.store(request).read() as conn:
        for p in job["request"].get("pairs", []):
            pair_id = pair_id or queries.pair_id_by_names(conn, p["base"], p["post"])
    template = "_job_progress.html" if is_htmx(request) else "job.html"
    principal = current_principal(request)
    return html_page(
        request,
        template,
        job=job,
        progress=_progress(job),
        queue_down=queue == "down",
        csrf=csrf_token(request),
        pair_id=pair_id,
        may_manage=principal is not None and principal.may_manage(job["owner"]),
    )


@router.get("/api/jobs/{job_id}", tags=["api"], responses=ID_ERRORS)
def api_job(request: Request, job_id: deps.Id) -> dict:
    """A job with every shard's state, progress and error; ``waiting_reason``: why its queued
    shards do not move when the app recently refused a worker, or has heard from no worker since
    it started and the job has waited 30 s (null otherwise)."""
    return job_with_waiting(request, job_id)


# ---------------------------------------------------------------------------------- submitting


def _form_page(request: Request, values: dict, errors: dict) -> HTMLResponse:
    context = dict(
        values={**DEFAULTS, **values},
        errors=errors,
        csrf=csrf_token(request),
        stages=tuple(Stage),
        categories=CATEGORIES,
        local=local_benchmarks(request),
        paper_count=len(scored_benchmarks()),
    )
    template = "_submit_form.html" if is_htmx(request) else "submit.html"
    return html_page(request, template, **context)


@router.get("/submit", response_class=HTMLResponse, include_in_schema=False)
def submit_page(request: Request) -> HTMLResponse:
    require_login(request, Role.submit)
    return _form_page(request, {}, {})


@router.post("/submit", include_in_schema=False)
async def submit(request: Request) -> Response:
    principal = require_login(request, Role.submit)
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    values: dict = {k: str(v) for k, v in form.items() if k not in ("csrf", "categories", "local")}
    # the ticked boxes, so that a form shown again with its errors keeps them ticked
    values["categories"] = [str(v) for v in form.getlist("categories")]
    values["local"] = [str(v) for v in form.getlist("local")]
    if values.get("target") == "series":
        return _submit_series(request, principal, values, form)
    job_request, errors = parse_submission(request, values, form)
    if job_request is None:
        return _form_page(request, values, errors)
    try:
        with deps.store(request).transaction() as conn:
            job_id, to_send = jobs.create_job(conn, job_request)
            jobs_db.set_owner(conn, job_id, principal.name)
    except InputError as exc:
        return _form_page(request, values, {"form": str(exc)})
    return _send_and_go(request, to_send, job_id, f"/jobs/{job_id}")


def _send_and_go(request: Request, to_send: list[int], job_id: int, then: str) -> Response:
    """Send a new submission's shards, then go to ``then``; when the queue is down, to the job's
    page, which says so (the reconciler sends the shards when it is back)."""
    _, problem = send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    url = f"/jobs/{job_id}?queue=down" if problem else then
    if is_htmx(request):
        return Response(status_code=204, headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)


def _submit_series(request: Request, principal: Principal, values: dict, form) -> Response:
    """A training run from the form: each checkpoint submitted as the watcher would, then the
    series' page (its curves fill in as the jobs finish)."""
    body, errors = parse_series_submission(request, values, form)
    if body is None:
        return _form_page(request, values, errors)
    try:
        with deps.store(request).transaction() as conn:
            summary, to_send = submit_run(conn, body, model_rules(request))
            for job_id in summary["jobs"]:
                jobs_db.set_owner(conn, job_id, principal.name)
            series = series_db.get_series(conn, name=summary["series"])
            assert series is not None  # submit_run made it, in this transaction
            series_id = series["id"]
    except InputError as exc:
        return _form_page(request, values, {"checkpoints": str(exc)})
    return _send_and_go(request, to_send, summary["jobs"][0], f"/series/{series_id}")


@router.post("/api/jobs", tags=["write"], status_code=201, responses=WRITE_ERRORS)
def submit_job(request: Request, body: JobIn, principal: deps.Submitter) -> dict:
    """Create a job and send its shards to the workers (role submit): an evaluation (models x
    benchmarks x seeds), or with ``"kind": "recover"`` a recoverability analysis of a pair on a
    corpus, or with ``"kind": "series"`` a training run (a base and checkpoint folders), or with
    ``"kind": "probe"`` a probe of a stored pair's flips (its post model asked again), or with
    ``"kind": "judge"`` a judge model's reading of a stored pair's unread answers, or with
    ``"kind": "merge"`` a sweep of merges of a stored pair (mixes built and evaluated), or with
    ``"kind": "soup"`` soups of a stored training run's last checkpoints. The
    job's owner is the token's name. Every model path, of every kind, is checked against the
    model roots (forgetmap.runtime.paths) before anything is written."""
    extra: dict = {}
    rules = model_rules(request)
    job_id: int | None
    try:
        with deps.store(request).transaction() as conn:
            if isinstance(body, EvaluateJobIn):
                job_id, to_send = jobs.create_job(conn, jobs.with_checked_models(body, rules))
                owned = [job_id]
            elif isinstance(body, SeriesJobIn):  # a run: a base and checkpoint folders
                extra, to_send = submit_run(conn, body, rules)
                owned = extra["jobs"]
                job_id = owned[0] if owned else None
            elif isinstance(body, ProbeJobIn):  # a stored pair's flips, asked again
                job_id, to_send = create_probe_job(conn, jobs.with_checked_models(body, rules))
                owned = [job_id]
            elif isinstance(body, JudgeJobIn):  # a judge model reads a pair's unread answers
                job_id, to_send = create_judge_job(conn, jobs.with_checked_models(body, rules))
                owned = [job_id]
            elif isinstance(body, MergeJobIn):  # a pair's base mixed back in, mix by mix
                job_id, to_send = create_merge_job(conn, jobs.with_checked_models(body, rules))
                owned = [job_id]
            elif isinstance(body, SoupJobIn):  # a run's last checkpoints averaged
                job_id, to_send = create_soup_job(conn, body)
                owned = [job_id]
            else:
                job_id, to_send = create_recovery_job(conn, jobs.with_checked_models(body, rules))
                owned = [job_id]
            for owned_id in owned:
                jobs_db.set_owner(conn, owned_id, principal.name)
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    sent, problem = send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return {
        "id": job_id,
        "shards_to_run": len(to_send),
        "sent": sent,
        "queue_error": problem,
        **extra,
    }


# ------------------------------------------------------------------------ cancel and retry


def _managed_job(conn, principal: Principal, job_id: int) -> None:
    """404 for an unknown job; 403 unless the caller owns it (role submit) or is an admin."""
    owner = jobs_db.job_owner(conn, job_id)
    if owner is jobs_db.NO_SUCH_JOB:
        raise HTTPException(404, f"job {job_id} does not exist; GET /api/jobs lists the jobs")
    if not principal.may_manage(owner):
        raise HTTPException(
            403,
            f"job {job_id} belongs to {owner or 'nobody (it predates job owners)'}; only its "
            f"owner or a token with role admin may change it",
        )


def _cancel(request: Request, principal: Principal, job_id: int) -> int:
    """Cancel the job: queued shards will not run, running ones stop; returns how many shards."""
    with deps.store(request).transaction() as conn:
        _managed_job(conn, principal, job_id)
        cancelled, to_send = jobs.cancel_job(conn, job_id)
    if to_send:  # adaptive jobs that waited for a cancelled shard evaluate its slice themselves
        send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return cancelled


def _retry(request: Request, principal: Principal, job_id: int) -> tuple[int, int, str | None]:
    """Queue the job's failed shards again; returns (shards retried, sent, the queue's problem)."""
    with deps.store(request).transaction() as conn:
        _managed_job(conn, principal, job_id)
        shard_ids = jobs.retry_failed(conn, job_id)
    sent, problem = send_and_record(deps.store(request), request.app.state.enqueuer, shard_ids)
    return len(shard_ids), sent, problem


@router.post("/api/jobs/{job_id}/retry", tags=["write"], responses=WRITE_ID_ERRORS)
def retry(request: Request, job_id: deps.Id, principal: deps.Submitter) -> dict:
    """Queue a job's failed shards again (its owner, or an admin)."""
    retried, sent, problem = _retry(request, principal, job_id)
    return {"id": job_id, "retried": retried, "sent": sent, "queue_error": problem}


@router.post("/api/jobs/{job_id}/cancel", tags=["write"], responses=WRITE_ID_ERRORS)
def cancel(request: Request, job_id: deps.Id, principal: deps.Submitter) -> dict:
    """Cancel a job (its owner, or an admin): queued shards will not run, running ones stop."""
    return {"id": job_id, "cancelled_shards": _cancel(request, principal, job_id)}


@router.post("/jobs/{job_id}/cancel", include_in_schema=False)
async def job_cancel(request: Request, job_id: int) -> Response:
    principal = require_login(request, Role.submit)
    check_csrf(request, (await request.form()).get("csrf"))
    _cancel(request, principal, job_id)
    return RedirectResponse(f"/jobs/{job_id}", status_code=303)


@router.post("/jobs/{job_id}/retry", include_in_schema=False)
async def job_retry(request: Request, job_id: int) -> Response:
    principal = require_login(request, Role.submit)
    check_csrf(request, (await request.form()).get("csrf"))
    _, _, problem = _retry(request, principal, job_id)
    return RedirectResponse(f"/jobs/{job_id}" + ("?queue=down" if problem else ""), status_code=303)
