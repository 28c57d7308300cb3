"""Write endpoints: every one needs ``Authorization: Bearer <token>`` of a role allowed to call it
(``forgetmap token create NAME --role ...``; app.services.tokens lists the roles). A refused call is a 403
whose message names the role needed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request

from app.contract.jobs import EvaluateJobIn, PairSpecIn, SeriesJobIn, ShardStatus
from app.contract.recovery import RecoveryIn
from app.contract.results import ResultsIn
from app.contract.shards import (
    FailIn,
    FinishIn,
    ProgressIn,
    ShardClaim,
    ShardState,
    StartIn,
)
from app.core.errors import InputError
from app.db import jobs as jobs_db
from app.db.pairing import add_pair
from app.runtime.paths import check_model_path
from app.services import jobs
from app.services import recovery as recovery
from app.services.queue import send_and_record
from app.services.series import submit_run
from app.services.tokens import Principal, Role
from app.web import deps
from app.web.schemas import WRITE_ERRORS, WRITE_ID_ERRORS, Id, JobIn, errors

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
    try:
        with deps.store(request).transaction() as conn:
            _shard_or_404(conn, body.shard_id)
            summary = jobs.store_results(conn, body)
    except InputError as exc:
        raise _input_error(exc) from exc
    return {"rows_added": summary.rows_added, "rows_unchanged": summary.rows_unchanged}


@router.post("/api/jobs", status_code=201, responses=WRITE_ERRORS)
def submit_job(request: Request, body: JobIn, principal: Submitter) -> dict:
    """Create a job and send its shards to the workers (role submit): an evaluation (models x
    benchmarks x seeds), or with ``"kind": "recover"`` a recoverability analysis of a pair on a
    corpus, or with ``"kind": "series"`` a training run (a base and checkpoint folders). The
    job's owner is the token's name."""
    extra: dict = {}
    try:
        with deps.store(request).transaction() as conn:
            if isinstance(body, EvaluateJobIn):
                job_id, to_send = jobs.create_job(conn, body)
                owned = [job_id]
            elif isinstance(body, SeriesJobIn):  # a run: a base and checkpoint folders
                extra, to_send = submit_run(
                    conn, body, list(request.app.state.settings.model_roots)
                )
                owned = extra["jobs"]
                job_id = owned[0] if owned else None
            else:
                for model in (body.base, body.post):
                    check_model_path(model.path, list(request.app.state.settings.model_roots))
                job_id, to_send = recovery.create_recovery_job(conn, body)
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


@router.post("/api/shards/{shard_id}/start", responses=WRITE_ID_ERRORS)
def shard_start(request: Request, shard_id: Id, body: StartIn, principal: Worker) -> ShardClaim:
    """Claim a shard (role worker). Idempotent: a shard that is finished, cancelled, or already
    running (a duplicate delivery of a re-sent message) answers ``run: false``."""
    with deps.store(request).transaction() as conn:
        _shard_or_404(conn, shard_id)
        s = jobs.start_shard(conn, shard_id, body.worker, body.delivery,
                             stale_seconds=request.app.state.settings.stale_seconds)  # fmt: skip
    return ShardClaim(run=s is not None, shard=s)


@router.post("/api/shards/{shard_id}/progress", responses=WRITE_ID_ERRORS)
def shard_progress(
    request: Request, shard_id: Id, body: ProgressIn, principal: Worker
) -> ShardState:
    """Items done so far (role worker); answers the shard's status ('cancelled': stop)."""
    with deps.store(request).transaction() as conn:
        _shard_or_404(conn, shard_id)
        status = jobs.shard_progress(conn, shard_id, body.done, body.total)
    return ShardState(status=status)


@router.post("/api/shards/{shard_id}/finish", responses=WRITE_ID_ERRORS)
def shard_finish(request: Request, shard_id: Id, body: FinishIn, principal: Worker) -> ShardState:
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
    return ShardState(status=status)


@router.post("/api/shards/{shard_id}/fail", responses=WRITE_ID_ERRORS)
def shard_fail(request: Request, shard_id: Id, body: FailIn, principal: Worker) -> ShardState:
    try:
        with deps.store(request).transaction() as conn:
            to_send = jobs.fail_shard(conn, shard_id, body.error)
    except InputError as exc:
        raise HTTPException(404, str(exc)) from exc
    # adaptive jobs that waited for this shard evaluate its slice themselves
    if to_send:
        send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return ShardState(status=ShardStatus.failed)


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
            recovery_id = recovery.store_upload(conn, s, body)
    except InputError as exc:
        raise _input_error(exc) from exc
    return {"recovery_id": recovery_id}
