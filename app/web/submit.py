"""Pages that change things: login, the submission form, jobs with progress, cancel and retry.

Every form carries a CSRF token bound to the signed session; every change needs a login.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from app.contract.base import problems, validated
from app.contract.jobs import (
    TERMINAL,
    EvaluateJobIn,
    JobStatus,
    ModelIn,
    Prompting,
    SeriesJobIn,
    ShardStatus,
    Stage,
)
from app.contract.recovery import (
    MAX_TABLE_DOCS,
    CorpusIn,
    RecoverJobIn,
    RecoveryOptionsIn,
)
from app.core.errors import InputError
from app.core.taxonomy import CATEGORIES, lookup, scored_benchmarks
from app.db import jobs as jobs_db
from app.db import queries
from app.db import series as series_db
from app.runtime.paths import check_model_path
from app.services import jobs
from app.services.queue import send_and_record
from app.services.recovery import create_recovery_job
from app.services.series import submit_run
from app.services.tokens import Role
from app.web import deps
from app.web.api import api_jobs
from app.web.pages import _is_htmx, _page
from app.web.session import (
    check_csrf,
    csrf_token,
    current_principal,
    login,
    require_login,
    safe_next,
)

router = APIRouter(include_in_schema=False)
STAGES = tuple(Stage)
SUITES = ("paper", "categories", "benchmarks", "local")


# ------------------------------------------------------------------------------------ login


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> HTMLResponse:
    return _page(request, "login.html", next=safe_next(next), error=None, csrf=csrf_token(request))


@router.post("/login")
async def login_submit(request: Request) -> Response:
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    next_url = safe_next(form.get("next"))
    if login(request, str(form.get("token") or "")) is None:
        return _page(request, "login.html", next=next_url, csrf=csrf_token(request),
                     error="That token is not valid (create one with `forgetmap token create NAME`).")  # fmt: skip
    return RedirectResponse(next_url, status_code=303)


@router.post("/logout")
async def logout(request: Request) -> Response:
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    request.session.clear()
    return RedirectResponse("/", status_code=303)


# ------------------------------------------------------------------------------ submission


def local_benchmarks(request: Request) -> list[str]:
    settings = request.app.state.settings
    names = set()
    for folder in settings.benchmark_dirs:
        if Path(folder).is_dir():
            names.update(p.name for p in Path(folder).glob("*.jsonl"))
    return sorted(names)


DEFAULTS = {
    "base_prompting": "base", "post_prompting": "chat", "suite": "paper", "seeds": "3",
    "engine": "vllm", "mode": "generate", "temperature": "0.6", "top_p": "0.95", "max_tokens": "2048",
    "stage": "instruct", "target": "pair", "adaptive_target": "1.5",
}  # fmt: skip


def _form_page(request: Request, values: dict, errors: dict, status: int = 200) -> HTMLResponse:
    context = dict(
        values={**DEFAULTS, **values}, errors=errors, csrf=csrf_token(request), stages=STAGES,
        categories=CATEGORIES, local=local_benchmarks(request), paper_count=len(scored_benchmarks()),
    )  # fmt: skip
    template = "_submit_form.html" if _is_htmx(request) else "submit.html"
    return _page(request, template, **context)


@router.get("/submit", response_class=HTMLResponse)
def submit_page(request: Request) -> HTMLResponse:
    require_login(request, Role.submit)
    return _form_page(request, {}, {})


def _number(values: dict, errors: dict, name: str, cast, low, high, what: str):
    try:
        value = cast(values.get(name, ""))
    except ValueError:
        errors[name] = f"{what} must be a number"
        return None
    if not low <= value <= high:
        errors[name] = f"{what} must be between {low} and {high}"
        return None
    return value


# where the form shows a problem the boundary found at a location of the job's JSON form
SIDES = ("base", "post")


def _form_field(loc: tuple) -> str:
    """The form field of a location in EvaluateJobIn, e.g. ("models", 0, "path") -> base_path."""
    match loc:
        case ("models", int(i), str(name), *_) if i < len(SIDES):
            return f"{SIDES[i]}_{name}"
        case ("config", str(name), *_):
            return name
        case ("pairs", _, str(name), *_):
            return name
        case ("benchmarks", *_):
            return "suite"
        case ("seeds", *_):
            return "seeds"
        case ("adaptive", *_):
            return "adaptive_target"
    return "form"


def _benchmarks(request: Request, values: dict, form, errors: dict) -> list[str]:
    """The benchmarks of the form's suite choice (problems go to ``errors["suite"]``)."""
    suite = values.get("suite", "paper")
    if suite == "paper":
        return [b.name for b in scored_benchmarks()]
    if suite == "categories":
        chosen = form.getlist("categories")
        benchmarks = [b.name for b in scored_benchmarks() if b.category in chosen]
        if not benchmarks:
            errors["suite"] = "choose at least one category"
        return benchmarks
    if suite == "benchmarks":
        benchmarks = [
            b.strip()
            for b in (values.get("benchmarks") or "").replace(",", "\n").splitlines()
            if b.strip()
        ]
        unknown = [b for b in benchmarks if lookup(b) is None]
        if not benchmarks:
            errors["suite"] = "list at least one benchmark"
        elif unknown:
            errors["suite"] = (
                f"unknown benchmark{'s' if len(unknown) > 1 else ''}: {', '.join(unknown[:5])}"
            )
        return benchmarks
    if suite == "local":
        available = set(local_benchmarks(request))
        chosen = form.getlist("local")
        benchmarks = [f"local:{name}" for name in chosen if name in available]
        if not benchmarks:
            errors["suite"] = (
                "choose at least one local benchmark (files in FORGETMAP_BENCHMARK_DIRS)"
            )
        return benchmarks
    errors["suite"] = "choose a suite"
    return []


def _model(request: Request, values: dict, side: str, errors: dict) -> dict:
    """One side's model as the boundary takes it; a path outside the roots is an error."""
    path = (values.get(f"{side}_path") or "").strip()
    if not path:
        errors[f"{side}_path"] = (
            "give a Hugging Face id (org/name) or a local path under the model roots"
        )
    else:
        try:
            check_model_path(path, list(request.app.state.settings.model_roots))
        except InputError as exc:
            errors[f"{side}_path"] = str(exc)
    name = (values.get(f"{side}_name") or "").strip() or path.rstrip("/").split("/")[-1]
    revision = (values.get(f"{side}_revision") or "").strip() or None
    prompting = values.get(f"{side}_prompting") or Prompting.chat
    return {"name": name, "path": path, "revision": revision, "prompting": prompting}


def parse_submission(request: Request, values: dict, form) -> tuple[EvaluateJobIn | None, dict]:
    """Validate the form (a pair) through the boundary (app.contract.jobs.EvaluateJobIn, the API's
    body); returns (request, {}) or (None, {field: message})."""
    errors: dict[str, str] = {}
    models = [_model(request, values, side, errors) for side in SIDES]
    if models[0]["name"] and models[0]["name"] == models[1]["name"]:
        errors["post_name"] = "the two models need different names"
    benchmarks = _benchmarks(request, values, form, errors)
    seeds = _number(values, errors, "seeds", int, 1, 10, "seeds")  # how many: seeds 0 .. n-1
    label = (values.get("label") or "").strip() or f"{models[0]['name']} → {models[1]['name']}"
    data = {
        "models": models, "benchmarks": benchmarks, "seeds": list(range(seeds or 1)),
        "config": {k: values.get(k) for k in ("engine", "mode", "temperature", "top_p", "max_tokens")},
        "pairs": [{"base": models[0]["name"], "post": models[1]["name"], "label": label,
                   "stage": values.get("stage") or Stage.other}],
    }  # fmt: skip
    if values.get("adaptive"):  # the checkbox; the other settings keep their defaults
        data["adaptive"] = {"target_points": values.get("adaptive_target")}
    try:
        body = EvaluateJobIn.model_validate(data, strict=False)  # form values are all text
    except ValidationError as exc:
        for loc, message in problems(exc):
            errors.setdefault(_form_field(loc), message)
        return None, errors
    if errors:
        return None, errors
    return body, {}


def parse_series_submission(
    request: Request, values: dict, form
) -> tuple[SeriesJobIn | None, dict]:
    """Validate the form (a training run: a base plus checkpoint folders or globs, one per line)
    through the boundary (app.contract.jobs.SeriesJobIn, the body of ``POST /api/jobs`` with
    ``"kind": "series"``); returns (body, {}) or (None, {field: message})."""
    errors: dict[str, str] = {}
    base = _model(request, values, "base", errors)
    checkpoints = [c.strip() for c in (values.get("checkpoints") or "").splitlines() if c.strip()]
    if not checkpoints:
        errors["checkpoints"] = (
            "list the checkpoint folders, or a glob such as /runs/sft/checkpoint-*"
        )
    benchmarks = _benchmarks(request, values, form, errors)
    seeds = _number(values, errors, "seeds", int, 1, 10, "seeds")
    data = {
        "kind": "series", "series": (values.get("series") or "").strip(), "base": base["name"],
        "base_path": base["path"], "checkpoints": checkpoints, "benchmarks": benchmarks,
        "seeds": list(range(seeds or 1)),
        "config": {k: values.get(k) for k in ("engine", "mode", "temperature", "top_p", "max_tokens")},
        "prompting": values.get("post_prompting") or Prompting.chat,
        "base_prompting": base["prompting"],
    }  # fmt: skip
    try:
        body = SeriesJobIn.model_validate(data, strict=False)
    except ValidationError as exc:
        for loc, message in problems(exc):
            field = {"series": "series", "checkpoints": "checkpoints", "base_path": "base_path",
                     "prompting": "post_prompting"}.get(loc[0]) if loc else None  # fmt: skip
            errors.setdefault(field or _form_field(loc), message)
        return None, errors
    if errors:
        return None, errors
    return body, {}


@router.post("/submit")
async def submit(request: Request) -> Response:
    principal = require_login(request, Role.submit)
    form = await request.form()
    check_csrf(request, form.get("csrf"))
    values = {k: str(v) for k, v in form.items() if k not in ("csrf", "categories", "local")}
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
    if _is_htmx(request):
        return Response(status_code=204, headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)


def _submit_series(request: Request, principal, values: dict, form) -> Response:
    """A training run from the form: each checkpoint submitted as the watcher would, then the
    series' page (its curves fill in as the jobs finish)."""
    body, errors = parse_series_submission(request, values, form)
    if body is None:
        return _form_page(request, values, errors)
    try:
        with deps.store(request).transaction() as conn:
            summary, to_send = submit_run(conn, body, list(request.app.state.settings.model_roots))
            for job_id in summary["jobs"]:
                jobs_db.set_owner(conn, job_id, principal.name)
            series_id = series_db.get_series(conn, name=summary["series"])["id"]
    except InputError as exc:
        return _form_page(request, values, {"checkpoints": str(exc)})
    return _send_and_go(request, to_send, summary["jobs"][0], f"/series/{series_id}")


# ------------------------------------------------------------------------- recoverability


def local_corpora(request: Request) -> list[str]:
    """Files and folders a ``local:NAME`` corpus may name (FORGETMAP_CORPUS_DIRS, else the
    benchmark folders)."""
    settings = request.app.state.settings
    names = set()
    for folder in settings.corpus_dirs or settings.benchmark_dirs:
        if Path(folder).is_dir():
            names.update(p.name for p in Path(folder).iterdir()
                         if p.is_dir() or p.suffix in (".txt", ".jsonl", ".json"))  # fmt: skip
    return sorted(names)


RECOVER_DEFAULTS = {"corpus_kind": "local", "hf_split": "train", "text_field": "text",
                    "max_docs": "2000", "max_tokens": "2047", "k": "4096", "seed": "0"}  # fmt: skip


def _recover_page(request: Request, pair: dict, values: dict, errors: dict) -> HTMLResponse:
    return _page(request, "recover.html", pair=pair, values={**RECOVER_DEFAULTS, **values},
                 errors=errors, csrf=csrf_token(request), local=local_corpora(request))  # fmt: skip


@router.get("/pairs/{pair_id}/recover", response_class=HTMLResponse)
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


def parse_recovery(request: Request, pair: dict, values: dict) -> tuple[RecoverJobIn | None, dict]:
    """Validate the recoverability form; returns (request, {}) or (None, {field: message})."""
    settings = request.app.state.settings
    errors: dict[str, str] = {}
    models = {}
    for side in ("base", "post"):
        path = (values.get(f"{side}_path") or "").strip()
        try:
            if not path:
                raise InputError(
                    "give a Hugging Face id (org/name) or a local path under the model roots"
                )
            check_model_path(path, list(settings.model_roots))
        except InputError as exc:
            errors[f"{side}_path"] = str(exc)
            continue
        revision = (values.get(f"{side}_revision") or "").strip() or None
        models[side] = ModelIn(name=pair[side], path=path, revision=revision)
    if values.get("corpus_kind") == "hf":
        hf_id = (values.get("hf_id") or "").strip()
        source = f"hf:{hf_id}"
    else:
        name = values.get("local_corpus") or ""
        source = f"local:{name}"
        if name not in local_corpora(request):
            errors["corpus"] = "choose a local corpus (files or folders in FORGETMAP_CORPUS_DIRS)"
    max_docs = _number(values, errors, "max_docs", int, 3, MAX_TABLE_DOCS, "documents")
    max_tokens = _number(values, errors, "max_tokens", int, 16, 32768, "max tokens")
    k = _number(values, errors, "k", int, 1, 262144, "K")
    seed = _number(values, errors, "seed", int, 0, 2**31 - 1, "seed")
    if errors:
        return None, errors
    corpus = {"source": source, "text_field": (values.get("text_field") or "text").strip(),
              "separator": "\n\n" if values.get("split_paragraphs") else None, "max_docs": max_docs,
              "config": (values.get("hf_config") or "").strip() or None,
              "split": (values.get("hf_split") or "train").strip()}  # fmt: skip
    try:
        checked = validated(CorpusIn, corpus).check()
    except InputError as exc:
        return None, {"corpus": str(exc)}
    options = RecoveryOptionsIn(max_tokens=max_tokens, k=k, seed=seed)
    return RecoverJobIn(kind="recover", base=models["base"], post=models["post"], corpus=checked,
                        options=options), {}  # fmt: skip


@router.post("/pairs/{pair_id}/recover")
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


# ------------------------------------------------------------------------------------ jobs


def _progress(job: dict) -> dict:
    """Per (model, benchmark): shards by state and items done; the job's ETA from its pace."""
    groups: dict[tuple[str, str], dict] = {}
    for s in job["shards"]:
        g = groups.setdefault((s["model"], s["benchmark"]), {"model": s["model"], "benchmark": s["benchmark"],
                                                             "shards": [], "done": 0, "total": 0})  # fmt: skip
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
    return {"groups": list(groups.values()), "done": done, "total": total, "eta": eta,
            "finished": finished, "shards": len(job["shards"]),
            "failures": [s for s in job["shards"] if s["status"] == ShardStatus.failed]}  # fmt: skip


def _job_or_404(request: Request, job_id: int) -> dict:
    with deps.store(request).read() as conn:
        job = jobs.job_detail(conn, job_id)
    if job is None:
        raise HTTPException(404, f"job {job_id} does not exist")
    return job


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(request: Request) -> HTMLResponse:
    return _page(request, "jobs.html", jobs=api_jobs(request))


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(request: Request, job_id: int, queue: str | None = None) -> HTMLResponse:
    job = _job_or_404(request, job_id)
    pair_id = None
    with deps.store(request).read() as conn:
        for p in job["request"].get("pairs", []):
            pair_id = pair_id or queries.pair_id_by_names(conn, p["base"], p["post"])
    template = "_job_progress.html" if _is_htmx(request) else "job.html"
    principal = current_principal(request)
    return _page(request, template, job=job, progress=_progress(job), queue_down=queue == "down",
                 csrf=csrf_token(request), pair_id=pair_id,
                 may_manage=principal is not None and principal.may_manage(job["owner"]))  # fmt: skip


def _check_manager(request: Request, job_id: int, principal) -> None:
    """403 unless the logged-in token owns the job (role submit) or is an admin."""
    job = _job_or_404(request, job_id)
    if not principal.may_manage(job["owner"]):
        raise HTTPException(403, f"job {job_id} belongs to {job['owner'] or 'nobody'}; only its "
                                 "owner or a token with role admin may change it")  # fmt: skip


@router.post("/jobs/{job_id}/cancel")
async def job_cancel(request: Request, job_id: int) -> Response:
    principal = require_login(request, Role.submit)
    check_csrf(request, (await request.form()).get("csrf"))
    _check_manager(request, job_id, principal)
    with deps.store(request).transaction() as conn:
        _, to_send = jobs.cancel_job(conn, job_id)
    if to_send:  # adaptive jobs that waited for a cancelled shard evaluate its slice themselves
        send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return RedirectResponse(f"/jobs/{job_id}", status_code=303)


@router.post("/jobs/{job_id}/retry")
async def job_retry(request: Request, job_id: int) -> Response:
    principal = require_login(request, Role.submit)
    check_csrf(request, (await request.form()).get("csrf"))
    _check_manager(request, job_id, principal)
    with deps.store(request).transaction() as conn:
        shard_ids = jobs.retry_failed(conn, job_id)
    _, problem = send_and_record(deps.store(request), request.app.state.enqueuer, shard_ids)
    return RedirectResponse(f"/jobs/{job_id}" + ("?queue=down" if problem else ""), status_code=303)
