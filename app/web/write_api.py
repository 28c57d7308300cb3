"""Write endpoints: every one needs ``Authorization: Bearer <token>`` of a role allowed to call it
(``forgetmap token create NAME --role ...``; app.services.tokens lists the roles). A refused call is a 403
whose message names the role needed."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import Field

from app.contract.jobs import EvaluateJobIn, Int, PairSpecIn, SeriesJobIn, ShardStatus, Strict
from app.db import jobs as jobs_db
from app.db.ingest import ingest
from app.db.pairing import add_pair
from app.importers.common import InputError, build_table, prepare
from app.runtime.paths import check_model_path
from app.services import jobs
from app.services import recovery as recovery
from app.services.queue import send_and_record
from app.services.series import submit_run
from app.services.tokens import Principal, Role
from app.web import deps
from app.web.schemas import MAX_ID, WRITE_ERRORS, WRITE_ID_ERRORS, Id, JobIn, errors

router = APIRouter(tags=["write"])
MAX_UPLOAD_BYTES = 64 * 1024 * 1024

Submitter = Annotated[Principal, Depends(deps.require_role(Role.submit))]
Worker = Annotated[Principal, Depends(deps.require_role(Role.worker))]


def _input_error(exc: InputError) -> HTTPException:
    return HTTPException(422, str(exc))


@router.post("/api/pairs", status_code=201, responses=WRITE_ERRORS)
def create_pair(request: Request, body: PairSpecIn, principal: Submitter) -> dict:
    """Pair two imported models (role submit)."""
    try:
        with deps.store(request).transaction() as conn:
            pair_id, created, unpaired = add_pair(
                conn, body.base, body.post, label=body.label, stage=body.stage
            )
    except InputError as exc:
        raise _input_error(exc) from exc
    return {"id": pair_id, "created": created, "unpaired": unpaired}


class ResultRow(Strict):
    sample_id: Annotated[str, Field(min_length=1, max_length=1000)]
    correct: bool
    num_choices: Annotated[Int, Field(ge=2, le=1000)] | None = None
    category: str | None = None
    prompt: str | None = None
    response: str | None = None
    prediction: str | None = None
    gold: str | None = None
    choices: list[str] | None = None
    doc_hash: str | None = None
    prompt_tokens: Annotated[Int, Field(ge=0, le=MAX_ID)] | None = None
    completion_tokens: Annotated[Int, Field(ge=0, le=MAX_ID)] | None = None
    # the answer was cut off: it used every token the shard allowed (null: not said)
    truncated: bool | None = None


class ResultsIn(Strict):
    shard_id: Annotated[Int, Field(ge=0, le=MAX_ID)]
    rows: Annotated[list[ResultRow], Field(max_length=100_000)]


def refuse_oversize(request: Request) -> None:
    length = int(request.headers.get("content-length") or 0)
    if length > MAX_UPLOAD_BYTES:
        raise HTTPException(
            413, f"upload of {length} bytes is over {MAX_UPLOAD_BYTES}; send smaller batches"
        )


@router.post("/api/results", responses={**WRITE_ID_ERRORS, **errors(413)})
def upload_results(request: Request, body: ResultsIn, principal: Worker) -> dict:
    """A batch of per-sample results of one shard (role worker). Idempotent: a (model,
    benchmark, seed, sample) already stored is kept as it is, so a retried batch or a re-run
    shard adds nothing twice."""
    refuse_oversize(request)
    if not body.rows:
        return {"rows_added": 0, "rows_unchanged": 0}
    store = deps.store(request)
    try:
        with store.transaction() as conn:
            if jobs_db.shard(conn, body.shard_id) is None:
                raise HTTPException(404, f"shard {body.shard_id} does not exist")
            target = jobs.results_target(conn, body.shard_id)
            n = len(body.rows)
            table = build_table(
                {
                    "model": [target["model"]] * n,
                    "benchmark": [target["benchmark"]] * n,
                    "seed": [target["seed"]] * n,
                    "sample_id": [r.sample_id for r in body.rows],
                    "correct": [r.correct for r in body.rows],
                    "num_choices": [r.num_choices for r in body.rows],
                    "category": [r.category for r in body.rows],
                    "prompt": [r.prompt for r in body.rows],
                    "response": [r.response for r in body.rows],
                    "prediction": [r.prediction for r in body.rows],
                    "gold": [r.gold for r in body.rows],
                    "choices": [
                        json.dumps(r.choices, ensure_ascii=False) if r.choices is not None else None
                        for r in body.rows
                    ],
                    "doc_hash": [r.doc_hash for r in body.rows],
                    "prompt_tokens": [r.prompt_tokens for r in body.rows],
                    "completion_tokens": [r.completion_tokens for r in body.rows],
                    "truncated": [r.truncated for r in body.rows],
                }
            )
            table, benchmarks = prepare(table, source=f"shard {body.shard_id}")
            summary = ingest(
                conn,
                table,
                benchmarks,
                config={"source": "worker", **target["spec"]["config"]},
                on_conflict="keep",
            )
    except InputError as exc:
        raise _input_error(exc) from exc
    return {"rows_added": summary.rows_added, "rows_unchanged": summary.rows_unchanged}


@router.post("/api/jobs", status_code=201, responses=WRITE_ERRORS)
def submit_job(request: Request, body: JobIn, principal: Submitter) -> dict:
    """Create a job and send its shards to the workers (role submit): an evaluation (models x
    benchmarks x seeds), or with ``"kind": "recover"`` a recoverability analysis of a pair on a
    corpus, or with ``"kind": "series"`` a training run (a base and checkpoint folders). The
    job's owner is the token's name."""
    data = body.model_dump()
    extra: dict = {}
    try:
        with deps.store(request).transaction() as conn:
            if isinstance(body, EvaluateJobIn):
                job_id, to_send = jobs.create_job(conn, jobs.JobRequest.from_dict(data))
                owned = [job_id]
            elif isinstance(body, SeriesJobIn):  # a run: a base and checkpoint folders
                extra, to_send = submit_run(
                    conn, data, list(request.app.state.settings.model_roots)
                )
                owned = extra["jobs"]
                job_id = owned[0] if owned else None
            else:
                recovery_request = recovery.RecoveryRequest.from_dict(data)
                for model in (recovery_request.base, recovery_request.post):
                    check_model_path(model.path, list(request.app.state.settings.model_roots))
                job_id, to_send = recovery.create_recovery_job(conn, recovery_request)
                owned = [job_id]
            for owned_id in owned:
                jobs_db.set_owner(conn, owned_id, principal.name)
    except InputError as exc:
        raise _input_error(exc) from exc
    sent, problem = send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return {"id": job_id, "shards_to_run": len(to_send), "sent": sent, "queue_error": problem,
            **extra}  # fmt: skip


def _managed_job(conn, principal: Principal, job_id: Id) -> None:
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


@router.post("/api/jobs/{job_id}/retry", responses=WRITE_ID_ERRORS)
def retry(request: Request, job_id: Id, principal: Submitter) -> dict:
    """Queue a job's failed shards again (its owner, or an admin)."""
    with deps.store(request).transaction() as conn:
        _managed_job(conn, principal, job_id)
        shard_ids = jobs.retry_failed(conn, job_id)
    sent, problem = send_and_record(deps.store(request), request.app.state.enqueuer, shard_ids)
    return {"id": job_id, "retried": len(shard_ids), "sent": sent, "queue_error": problem}


@router.post("/api/jobs/{job_id}/cancel", responses=WRITE_ID_ERRORS)
def cancel(request: Request, job_id: Id, principal: Submitter) -> dict:
    """Cancel a job (its owner, or an admin): queued shards will not run, running ones stop."""
    with deps.store(request).transaction() as conn:
        _managed_job(conn, principal, job_id)
        n, to_send = jobs.cancel_job(conn, job_id)
    # adaptive jobs that waited for a cancelled shard evaluate its slice themselves
    if to_send:
        send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return {"id": job_id, "cancelled_shards": n}


def _shard_or_404(conn, shard_id: Id) -> dict:
    s = jobs_db.shard(conn, shard_id)
    if s is None:
        raise HTTPException(404, f"shard {shard_id} does not exist")
    return s


class StartIn(Strict):
    worker: Annotated[str, Field(max_length=200)] = "unknown"
    # the broker message's id (Celery task id): a re-delivery of the claiming message may take
    # a running shard over, another message may not while the shard's worker is alive
    delivery: Annotated[str, Field(max_length=200)] | None = None


@router.post("/api/shards/{shard_id}/start", responses=WRITE_ID_ERRORS)
def shard_start(request: Request, shard_id: Id, body: StartIn, principal: Worker) -> dict:
    """Claim a shard (role worker). Idempotent: a shard that is finished, cancelled, or already
    running (a duplicate delivery of a re-sent message) answers ``run: false``."""
    with deps.store(request).transaction() as conn:
        _shard_or_404(conn, shard_id)
        s = jobs.start_shard(conn, shard_id, body.worker, body.delivery,
                             stale_seconds=request.app.state.settings.stale_seconds)  # fmt: skip
    return {"run": s is not None, "shard": s}


class ProgressIn(Strict):
    done: Annotated[Int, Field(ge=0, le=MAX_ID)]
    total: Annotated[Int, Field(ge=0, le=MAX_ID)] | None = None


@router.post("/api/shards/{shard_id}/progress", responses=WRITE_ID_ERRORS)
def shard_progress(request: Request, shard_id: Id, body: ProgressIn, principal: Worker) -> dict:
    """Items done so far (role worker); answers the shard's status ('cancelled': stop)."""
    with deps.store(request).transaction() as conn:
        _shard_or_404(conn, shard_id)
        status = jobs.shard_progress(conn, shard_id, body.done, body.total)
    return {"status": status}


class ShardData(Strict):
    """The data a shard was evaluated on: a local copy (file, sha256) or the hub."""

    source: Annotated[str, Field(pattern="^(local|hub)$")]
    file: Annotated[str, Field(max_length=300)] | None = None
    sha256: Annotated[str, Field(pattern="^[0-9a-f]{64}$")] | None = None


class FinishIn(Strict):
    fingerprint: Annotated[str, Field(max_length=200)] | None = None
    data: ShardData | None = None
    # the samples the worker's loader saw (benchmarks.full_size; adaptive rounds stop at it)
    full_size: Annotated[Int, Field(ge=0, le=MAX_ID)] | None = None


@router.post("/api/shards/{shard_id}/finish", responses=WRITE_ID_ERRORS)
def shard_finish(request: Request, shard_id: Id, body: FinishIn, principal: Worker) -> dict:
    try:
        with deps.store(request).transaction() as conn:
            _shard_or_404(conn, shard_id)
            data = body.data.model_dump(exclude_none=True) if body.data else None
            to_send = jobs.finish_shard(conn, shard_id, fingerprint=body.fingerprint, data=data,
                                        full_size=body.full_size)  # fmt: skip
            status = jobs_db.shard_status(conn, shard_id)  # cancelled while its last batch ran
    except InputError as exc:
        raise _input_error(exc) from exc
    # an adaptive job's next round (the reconciler sends it if the queue is down now)
    if to_send:
        send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return {"status": status}


class FailIn(Strict):
    error: Annotated[str, Field(max_length=1_000_000)]


@router.post("/api/shards/{shard_id}/fail", responses=WRITE_ID_ERRORS)
def shard_fail(request: Request, shard_id: Id, body: FailIn, principal: Worker) -> dict:
    try:
        with deps.store(request).transaction() as conn:
            to_send = jobs.fail_shard(conn, shard_id, body.error)
    except InputError as exc:
        raise HTTPException(404, str(exc)) from exc
    # adaptive jobs that waited for this shard evaluate its slice themselves
    if to_send:
        send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return {"status": ShardStatus.failed}


class RecoveryIn(Strict):
    table: dict[str, list]
    corrections: dict[str, dict[str, dict]] = Field(default_factory=dict)
    controls: dict[str, dict] = Field(default_factory=dict)
    timing: dict[str, dict] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)


@router.post("/api/shards/{shard_id}/recovery", responses={**WRITE_ID_ERRORS, **errors(413)})
def shard_recovery(request: Request, shard_id: Id, body: RecoveryIn, principal: Worker) -> dict:
    """The results of a recoverability shard (role worker): per-document loss sums and fitted
    corrections.
    The app recomputes every share from the sums; a repeated upload replaces the earlier one."""
    refuse_oversize(request)
    try:
        with deps.store(request).transaction() as conn:
            s = jobs_db.shard(conn, shard_id)
            if s is None:
                raise HTTPException(404, f"shard {shard_id} does not exist")
            if s["kind"] != "recover":
                raise InputError(f"shard {shard_id} is not a recoverability shard")
            if s["status"] == ShardStatus.cancelled:
                raise InputError(f"shard {shard_id} was cancelled; its results are not stored")
            recovery_id = recovery.store_upload(
                conn, s, recovery.RecoveryUpload(**body.model_dump())
            )
    except InputError as exc:
        raise _input_error(exc) from exc
    return {"recovery_id": recovery_id}
