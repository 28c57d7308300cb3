"""Write endpoints: every one needs ``Authorization: Bearer <token>`` (``forgetmap token create``)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, Field

from app import jobs, recovery
from app.auth import token_owner
from app.db.ingest import add_pair, ingest
from app.importers.common import InputError, build_table, prepare
from app.queue import send_and_record
from app.web import deps

router = APIRouter(tags=["write"])
MAX_UPLOAD_BYTES = 64 * 1024 * 1024


def require_token(request: Request) -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise HTTPException(
            401,
            "this endpoint needs a token: send 'Authorization: Bearer <token>' "
            "(create one with `forgetmap token create NAME`)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    with deps.store(request).read() as conn:
        owner = token_owner(conn, token.strip())
    if owner is None:
        raise HTTPException(401, "invalid or revoked token", headers={"WWW-Authenticate": "Bearer"})
    return owner


Owner = Annotated[str, Depends(require_token)]


def _input_error(exc: InputError) -> HTTPException:
    return HTTPException(422, str(exc))


class PairIn(BaseModel):
    base: str
    post: str
    label: str | None = None
    stage: str | None = None


@router.post("/api/pairs", status_code=201)
def create_pair(request: Request, body: PairIn, owner: Owner) -> dict:
    try:
        with deps.store(request).transaction() as conn:
            pair_id, created, unpaired = add_pair(
                conn, body.base, body.post, label=body.label, stage=body.stage
            )
    except InputError as exc:
        raise _input_error(exc) from exc
    return {"id": pair_id, "created": created, "unpaired": unpaired}


class ResultRow(BaseModel):
    sample_id: str
    correct: bool
    num_choices: int | None = Field(default=None, ge=2)
    category: str | None = None
    prompt: str | None = None
    response: str | None = None
    prediction: str | None = None
    gold: str | None = None
    choices: list[str] | None = None
    doc_hash: str | None = None
    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)


class ResultsIn(BaseModel):
    shard_id: int
    rows: list[ResultRow]


def refuse_oversize(request: Request) -> None:
    length = int(request.headers.get("content-length") or 0)
    if length > MAX_UPLOAD_BYTES:
        raise HTTPException(
            413, f"upload of {length} bytes is over {MAX_UPLOAD_BYTES}; send smaller batches"
        )


@router.post("/api/results")
def upload_results(request: Request, body: ResultsIn, owner: Owner) -> dict:
    """A batch of per-sample results of one shard. Idempotent: a (model, benchmark, seed, sample)
    already stored is kept as it is, so a retried batch or a re-run shard adds nothing twice."""
    refuse_oversize(request)
    if not body.rows:
        return {"rows_added": 0, "rows_unchanged": 0}
    store = deps.store(request)
    try:
        with store.transaction() as conn:
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


@router.post("/api/jobs", status_code=201)
def submit_job(request: Request, body: dict[str, Any], owner: Owner) -> dict:
    """Create a job and send its shards to the workers: an evaluation (models x benchmarks x
    seeds), or with ``"kind": "recover"`` a recoverability analysis of a pair on a corpus."""
    extra: dict = {}
    try:
        kind = body.get("kind", "evaluate")
        with deps.store(request).transaction() as conn:
            if kind == "evaluate":
                job_id, to_send = jobs.create_job(conn, jobs.JobRequest.from_dict(body))
            elif kind == "series":  # a run: a base and checkpoint folders (app/series.py)
                from app.series import submit_run

                extra, to_send = submit_run(
                    conn, body, list(request.app.state.settings.model_roots)
                )
                job_id = extra["jobs"][0]
            elif kind == "recover":
                recovery_request = recovery.RecoveryRequest.from_dict(body)
                for model in (recovery_request.base, recovery_request.post):
                    jobs.check_model_path(model.path, list(request.app.state.settings.model_roots))
                job_id, to_send = recovery.create_recovery_job(conn, recovery_request)
            else:
                raise InputError(
                    f"unknown job kind {kind!r}; use 'evaluate', 'recover' or 'series'"
                )
    except InputError as exc:
        raise _input_error(exc) from exc
    sent, problem = send_and_record(deps.store(request), request.app.state.enqueuer, to_send)
    return {"id": job_id, "shards_to_run": len(to_send), "sent": sent, "queue_error": problem,
            **extra}  # fmt: skip


@router.post("/api/jobs/{job_id}/retry")
def retry(request: Request, job_id: int, owner: Owner) -> dict:
    """Queue a job's failed shards again."""
    with deps.store(request).transaction() as conn:
        if jobs.job_detail(conn, job_id) is None:
            raise HTTPException(404, f"job {job_id} does not exist")
        shard_ids = jobs.retry_failed(conn, job_id)
    sent, problem = send_and_record(deps.store(request), request.app.state.enqueuer, shard_ids)
    return {"id": job_id, "retried": len(shard_ids), "sent": sent, "queue_error": problem}


@router.post("/api/jobs/{job_id}/cancel")
def cancel(request: Request, job_id: int, owner: Owner) -> dict:
    with deps.store(request).transaction() as conn:
        if jobs.job_detail(conn, job_id) is None:
            raise HTTPException(404, f"job {job_id} does not exist")
        n = jobs.cancel_job(conn, job_id)
    return {"id": job_id, "cancelled_shards": n}


class StartIn(BaseModel):
    worker: str = "unknown"


@router.post("/api/shards/{shard_id}/start")
def shard_start(request: Request, shard_id: int, body: StartIn, owner: Owner) -> dict:
    with deps.store(request).transaction() as conn:
        s = jobs.start_shard(conn, shard_id, body.worker)
    return {"run": s is not None, "shard": s}


class ProgressIn(BaseModel):
    done: int = Field(ge=0)
    total: int | None = Field(default=None, ge=0)


@router.post("/api/shards/{shard_id}/progress")
def shard_progress(request: Request, shard_id: int, body: ProgressIn, owner: Owner) -> dict:
    with deps.store(request).transaction() as conn:
        status = jobs.shard_progress(conn, shard_id, body.done, body.total)
    return {"status": status}


class ShardData(BaseModel):
    """The data a shard was evaluated on: a local copy (file, sha256) or the hub."""

    source: str = Field(pattern="^(local|hub)$")
    file: str | None = Field(default=None, max_length=300)
    sha256: str | None = Field(default=None, pattern="^[0-9a-f]{64}$")


class FinishIn(BaseModel):
    fingerprint: str | None = None
    data: ShardData | None = None


@router.post("/api/shards/{shard_id}/finish")
def shard_finish(request: Request, shard_id: int, body: FinishIn, owner: Owner) -> dict:
    try:
        with deps.store(request).transaction() as conn:
            data = body.data.model_dump(exclude_none=True) if body.data else None
            jobs.finish_shard(conn, shard_id, fingerprint=body.fingerprint, data=data)
    except InputError as exc:
        raise HTTPException(404, str(exc)) from exc
    return {"status": "done"}


class FailIn(BaseModel):
    error: str


@router.post("/api/shards/{shard_id}/fail")
def shard_fail(request: Request, shard_id: int, body: FailIn, owner: Owner) -> dict:
    try:
        with deps.store(request).transaction() as conn:
            jobs.fail_shard(conn, shard_id, body.error)
    except InputError as exc:
        raise HTTPException(404, str(exc)) from exc
    return {"status": "failed"}


class RecoveryIn(BaseModel):
    table: dict[str, list]
    corrections: dict[str, dict[str, dict]] = Field(default_factory=dict)
    controls: dict[str, dict] = Field(default_factory=dict)
    timing: dict[str, dict] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)


@router.post("/api/shards/{shard_id}/recovery")
def shard_recovery(request: Request, shard_id: int, body: RecoveryIn, owner: Owner) -> dict:
    """The results of a recoverability shard: per-document loss sums and fitted corrections.
    The app recomputes every share from the sums; a repeated upload replaces the earlier one."""
    refuse_oversize(request)
    try:
        with deps.store(request).transaction() as conn:
            s = jobs.shard(conn, shard_id)
            if s is None:
                raise HTTPException(404, f"shard {shard_id} does not exist")
            if s["kind"] != "recover":
                raise InputError(f"shard {shard_id} is not a recoverability shard")
            if s["status"] == "cancelled":
                raise InputError(f"shard {shard_id} was cancelled; its results are not stored")
            recovery_id = recovery.store_upload(
                conn, s, recovery.RecoveryUpload(**body.model_dump())
            )
    except InputError as exc:
        raise _input_error(exc) from exc
    return {"recovery_id": recovery_id}
