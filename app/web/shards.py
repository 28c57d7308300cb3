"""The worker's routes: its token check at start (``GET /api/workers/me``), claiming a shard, its
progress, its end (finished or failed), and its uploads (``POST /api/results`` for per-sample
rows, ``POST /api/shards/{id}/recovery`` for a recoverability shard's loss sums), and a probe
shard's items and outcomes (``GET`` and ``POST /api/shards/{id}/probe``), a judge shard's
(``.../judge``). Every one needs
a token of role worker; a refused call is remembered (forgetmap.services.rejections) for the job
pages."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from forgetmap.contract.jobs import ShardStatus
from forgetmap.contract.judge import JudgeIn, JudgeItemsOut
from forgetmap.contract.probe import ProbeIn, ProbeItemsOut
from forgetmap.contract.recovery import RecoveryIn
from forgetmap.contract.results import ResultsIn
from forgetmap.contract.shards import (
    FailIn,
    FinishIn,
    ProgressIn,
    ShardClaim,
    ShardState,
    StartIn,
)
from forgetmap.core.errors import InputError
from forgetmap.db import jobs as jobs_db
from forgetmap.services import jobs, judge, probe, recovery
from forgetmap.services.queue import send_and_record
from forgetmap.web import deps
from forgetmap.web.responses import WRITE_ID_ERRORS, errors

router = APIRouter(tags=["write"])
# The uploads' size (forgetmap.web.limits.WORKER_UPLOAD_MAX_BYTES) and the worker's token are
# checked before the body is read, by the app's BodyLimits middleware: a 413 or 401 comes before a
# route.


@router.get("/api/workers/me", responses=errors(401, 403))
def worker_me(request: Request, principal: deps.Worker) -> dict:
    """Who the app takes this worker for (role worker): its token's name and role, and the name
    the worker sent in ``X-Forgetmap-Worker``. A worker calls it once at start, so a token the
    app refuses stops it before it takes a shard."""
    return {
        "token": principal.name,
        "role": principal.role.value,
        "worker": deps.worker_name(request, principal),
    }


@router.post("/api/results", responses={**WRITE_ID_ERRORS, **errors(413)})
def upload_results(request: Request, body: ResultsIn, principal: deps.Worker) -> dict:
    """A batch of per-sample results of one shard (role worker). Idempotent: a (model,
    benchmark, seed, sample) already stored is kept as it is, so a retried batch or a re-run
    shard adds nothing twice."""
    if not body.rows:
        return {"rows_added": 0, "rows_unchanged": 0}
    try:
        store = deps.store(request)
        with store.transaction() as conn:
            _shard_or_404(conn, body.shard_id)
            summary, shown = jobs.store_results(conn, body)
            if not shown:  # the pages' caches stay: the map does not move while a job runs
                store.pages_unchanged()
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    return {"rows_added": summary.rows_added, "rows_unchanged": summary.rows_unchanged}


def _shard_or_404(conn, shard_id: int) -> dict:
    s = jobs_db.shard(conn, shard_id)
    if s is None:
        raise HTTPException(404, f"shard {shard_id} does not exist")
    return s


@router.post("/api/shards/{shard_id}/start", responses=WRITE_ID_ERRORS)
def shard_start(
    request: Request, shard_id: deps.Id, body: StartIn, principal: deps.Worker
) -> ShardClaim:
    """Claim a shard (role worker). Idempotent: a shard that is finished, cancelled, or already
    running (a duplicate delivery of a re-sent message) answers ``run: false``."""
    store = deps.store(request)
    with store.transaction() as conn:
        store.pages_unchanged()  # a shard's bookkeeping: no read page shows it
        _shard_or_404(conn, shard_id)
        s = jobs.start_shard(
            conn,
            shard_id,
            body.worker,
            body.delivery,
            stale_seconds=request.app.state.settings.stale_seconds,
        )
    return ShardClaim(run=s is not None, shard=s)


@router.post("/api/shards/{shard_id}/progress", responses=WRITE_ID_ERRORS)
def shard_progress(
    request: Request, shard_id: deps.Id, body: ProgressIn, principal: deps.Worker
) -> ShardState:
    """Items done so far (role worker); answers the shard's status ('cancelled': stop)."""
    store = deps.store(request)
    with store.transaction() as conn:
        store.pages_unchanged()
        _shard_or_404(conn, shard_id)
        status = jobs.shard_progress(conn, shard_id, body.done, body.total)
    return ShardState(status=status)


@router.post("/api/shards/{shard_id}/finish", responses=WRITE_ID_ERRORS)
def shard_finish(
    request: Request, shard_id: deps.Id, body: FinishIn, principal: deps.Worker
) -> ShardState:
    try:
        with deps.store(request).transaction() as conn:
            _shard_or_404(conn, shard_id)
            data = body.data.model_dump(exclude_none=True) if body.data else None
            to_send = jobs.finish_shard(
                conn, shard_id, fingerprint=body.fingerprint, data=data, full_size=body.full_size
            )
            status = jobs_db.shard_status(conn, shard_id)  # cancelled while its last batch ran
            assert status is not None  # _shard_or_404 found it in this transaction
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    # an adaptive job's next round (the reconciler sends it if the queue is down now)
    if to_send:
        send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return ShardState(status=status)


@router.post("/api/shards/{shard_id}/fail", responses=WRITE_ID_ERRORS)
def shard_fail(
    request: Request, shard_id: deps.Id, body: FailIn, principal: deps.Worker
) -> ShardState:
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
def shard_recovery(
    request: Request, shard_id: deps.Id, body: RecoveryIn, principal: deps.Worker
) -> dict:
    """The results of a recoverability shard (role worker): per-document loss sums and fitted
    corrections.
    The app recomputes every share from the sums; a repeated upload replaces the earlier one."""
    try:
        with deps.store(request).transaction() as conn:
            s = _shard_or_404(conn, shard_id)
            if s["kind"] != "recover":
                raise InputError(f"shard {shard_id} is not a recoverability shard")
            if s["status"] == ShardStatus.cancelled:
                raise InputError(f"shard {shard_id} was cancelled; its results are not stored")
            recovery_id = recovery.store_upload(conn, s, body)
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    return {"recovery_id": recovery_id}


def _probe_shard(conn, shard_id: int, kind: str = "probe") -> dict:
    s = _shard_or_404(conn, shard_id)
    if s["kind"] != kind:
        raise InputError(f"shard {shard_id} is not a {kind} shard")
    if s["status"] == ShardStatus.cancelled:
        raise InputError(f"shard {shard_id} was cancelled")
    return s


@router.get("/api/shards/{shard_id}/probe", responses=WRITE_ID_ERRORS)
def shard_probe_items(request: Request, shard_id: deps.Id, principal: deps.Worker) -> ProbeItemsOut:
    """The items of a probe shard (role worker): each row to ask again, with the prompt its
    model saw, the answer to show after it, its options and the gold one; and what was left
    out, counted."""
    try:
        with deps.store(request).read() as conn:
            return probe.shard_items(conn, _probe_shard(conn, shard_id))
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc


@router.post("/api/shards/{shard_id}/probe", responses={**WRITE_ID_ERRORS, **errors(413)})
def shard_probe(request: Request, shard_id: deps.Id, body: ProbeIn, principal: deps.Worker) -> dict:
    """The outcomes of a probe shard (role worker), one per item it fetched: checked against the
    items, kept, and reported (a repeated upload replaces the earlier one)."""
    try:
        with deps.store(request).transaction() as conn:
            probe_id = probe.store_upload(conn, _probe_shard(conn, shard_id), body)
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    return {"probe_id": probe_id}


@router.get("/api/shards/{shard_id}/judge", responses=WRITE_ID_ERRORS)
def shard_judge_items(request: Request, shard_id: deps.Id, principal: deps.Worker) -> JudgeItemsOut:
    """The items of a judge shard (role worker): each answer to read, with the prompt its model
    saw, its options and the gold one, the judge's template; what was left out, counted."""
    try:
        with deps.store(request).read() as conn:
            return judge.shard_items(conn, _probe_shard(conn, shard_id, "judge"))
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc


@router.post("/api/shards/{shard_id}/judge", responses={**WRITE_ID_ERRORS, **errors(413)})
def shard_judge(request: Request, shard_id: deps.Id, body: JudgeIn, principal: deps.Worker) -> dict:
    """A judge shard's readings (role worker), one per item: checked against the items and kept
    as the judge's score set with its audit (a repeated upload replaces the earlier one)."""
    try:
        with deps.store(request).transaction() as conn:
            run_id = judge.store_upload(conn, _probe_shard(conn, shard_id, "judge"), body)
    except InputError as exc:
        raise HTTPException(422, str(exc)) from exc
    return {"judge_run_id": run_id}
