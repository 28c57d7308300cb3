"""Evaluation jobs: what to evaluate, split into shards of (model, benchmark, seed).

A job is written to the database before anything is enqueued, so a broker outage loses nothing.
Each shard is one Celery task; workers report back over HTTP (start, progress, results, finish or
fail) and never open the database. A shard whose (model, benchmark, seed, eval config) was already
evaluated is marked ``reused`` and not run again: a base model shared by many pairs is evaluated
once.

Shard states: queued -> running -> done | failed; queued -> reused | cancelled.

Lost messages: a queued shard's broker message can vanish (a Redis restart without persistence,
a failover, FLUSHDB). The reconciler (app.queue) sends such a shard again and counts it in
``resends``; a duplicate delivery is harmless because :func:`start_shard` lets one delivery run a
shard at a time.
Job states: queued, running, done (every shard done or reused), failed (some shard failed),
cancelled.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlalchemy import Connection

from app.errors import InputError

TERMINAL = ("done", "failed", "reused", "cancelled")
ENGINES = ("vllm", "transformers")
MODES = ("generate", "loglik")
PROMPTING = ("chat", "base")
# models x benchmarks x seeds of one job: the paper's suite for two models and three seeds is 564,
# the form's largest (ten seeds) 1,880; saving and sending take ~2 ms a shard here (bench: 564 in
# 1.2 s), so one request stays within a few seconds
MAX_SHARDS_PER_JOB = 2000


@dataclass(frozen=True)
class ModelSpec:
    """A checkpoint: a Hugging Face id (optionally at a revision) or a local path under the roots."""

    name: str
    path: str
    revision: str | None = None
    prompting: str = "chat"  # chat: zero-shot CoT through the chat template; base: few-shot


@dataclass(frozen=True)
class EvalConfig:
    """Everything that changes a model's answers; its hash keys evaluation reuse."""

    engine: str = "vllm"
    mode: str = "generate"  # generate + extract an answer, or loglik: score the choices
    temperature: float = 0.6
    top_p: float = 0.95
    max_tokens: int = 2048
    shots: int = 3
    limit: int | None = None  # items per benchmark (None: all)

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise InputError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.mode not in MODES:
            raise InputError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not 0 <= self.temperature <= 5:
            raise InputError(f"temperature must be in [0, 5], got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise InputError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise InputError("max_tokens must be at least 1")


@dataclass(frozen=True)
class JobRequest:
    models: list[ModelSpec]
    benchmarks: list[str]
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    config: EvalConfig = field(default_factory=EvalConfig)
    # (base name, post name, label, stage): pairs to create over the job's models
    pairs: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict) -> JobRequest:
        try:
            models = [ModelSpec(**m) for m in data["models"]]
            config = EvalConfig(**data.get("config", {}))
            pairs = [
                (p["base"], p["post"], p.get("label"), p.get("stage"))
                for p in data.get("pairs", [])
            ]
            request = cls(
                models=models,
                benchmarks=list(data["benchmarks"]),
                seeds=[int(s) for s in data.get("seeds", [0, 1, 2])],
                config=config,
                pairs=pairs,
            )
        except (KeyError, TypeError) as exc:
            raise InputError(f"malformed job request: {exc}") from exc
        request.validate()
        return request

    def validate(self) -> None:
        if not self.models:
            raise InputError("a job needs at least one model")
        if not self.benchmarks:
            raise InputError("a job needs at least one benchmark")
        if not self.seeds:
            raise InputError("a job needs at least one seed")
        shards = len(self.models) * len(self.benchmarks) * len(self.seeds)
        if shards > MAX_SHARDS_PER_JOB:
            raise InputError(
                f"this job has {shards} shards (models x benchmarks x seeds), over the limit of "
                f"{MAX_SHARDS_PER_JOB}; split it into several jobs"
            )
        names = [m.name for m in self.models]
        if len(set(names)) != len(names):
            raise InputError("model names in a job must be distinct")
        for m in self.models:
            if m.prompting not in PROMPTING:
                raise InputError(f"prompting must be chat or base, got {m.prompting!r}")
        for base, post, _, _ in self.pairs:
            for name in (base, post):
                if name not in names:
                    raise InputError(f"pair names {name!r}, which is not one of the job's models")

    def to_dict(self) -> dict:
        return {
            "models": [asdict(m) for m in self.models],
            "benchmarks": self.benchmarks,
            "seeds": self.seeds,
            "config": asdict(self.config),
            "pairs": [
                {"base": b, "post": p, "label": lab, "stage": st} for b, p, lab, st in self.pairs
            ],
        }


def shard_config(model: ModelSpec, config: EvalConfig) -> dict:
    """The eval config of one shard: the job's settings plus how this model is prompted."""
    return {**asdict(config), "prompting": model.prompting, "revision": model.revision}


def stored_benchmark_name(name: str) -> str:
    """The benchmark name results are stored under: ``local:dir/toy.jsonl`` -> ``toy``; the
    taxonomy's canonical name for the paper's benchmarks."""
    from app.taxonomy import canonical_name

    if name.startswith("local:"):
        return Path(name[len("local:") :]).stem
    return canonical_name(name)


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------ jobs


def _duck(conn: Connection):
    return conn.connection.driver_connection


def register_models(conn: Connection, models: list[ModelSpec]) -> None:
    """Make sure the models exist and remember the checkpoint each names (later forms prefill it)."""
    from app.db.ingest import ensure_models

    ensure_models(conn, [m.name for m in models])
    for m in models:
        _duck(conn).execute(
            "UPDATE models SET spec = ? WHERE name = ?", [json.dumps(asdict(m)), m.name]
        )


def set_owner(conn: Connection, job_id: int, owner: str) -> None:
    """Record the token name that submitted a job (shown on job pages; cancel/retry rights)."""
    _duck(conn).execute("UPDATE jobs SET owner = ? WHERE id = ?", [owner, job_id])


NO_SUCH_JOB = object()


def job_owner(conn: Connection, job_id: int):
    """The job's owner (None for jobs older than owners), or NO_SUCH_JOB."""
    row = _duck(conn).execute("SELECT owner FROM jobs WHERE id = ?", [job_id]).fetchone()
    return NO_SUCH_JOB if row is None else row[0]


def insert_job(conn: Connection, kind: str, payload: dict) -> int:
    return (
        _duck(conn)
        .execute(
            "INSERT INTO jobs (kind, status, payload) VALUES (?, 'queued', ?) RETURNING id",
            [kind, json.dumps(payload)],
        )
        .fetchall()[0][0]
    )


def insert_shard(
    conn: Connection,
    *,
    job_id: int,
    model: str,
    benchmark: str,
    seed: int,
    config_hash: str,
    spec: dict,
    status: str,
    kind: str = "evaluate",
) -> int:
    """A shard of a job; a ``reused`` one is finished at once."""
    return (
        _duck(conn)
        .execute(
            """
            INSERT INTO shards (job_id, model_id, benchmark, seed, config_hash, spec, status, kind,
                                finished_at)
            SELECT ?, id, ?, ?, ?, ?, ?, ?, CASE WHEN ? = 'reused' THEN now() END
            FROM models WHERE name = ?
            RETURNING id
            """,
            [job_id, benchmark, seed, config_hash, json.dumps(spec), status, kind, status, model],
        )
        .fetchall()[0][0]
    )


def create_job(conn: Connection, request: JobRequest) -> tuple[int, list[int]]:
    """Write a job and its shards; returns (job id, ids of the shards to enqueue)."""
    from app.db.ingest import add_pair

    request.validate()
    duck = _duck(conn)
    register_models(conn, request.models)
    job_id = insert_job(conn, "evaluate", request.to_dict())
    to_enqueue = []
    for m in request.models:
        model_id = duck.execute("SELECT id FROM models WHERE name = ?", [m.name]).fetchone()[0]
        cfg = shard_config(m, request.config)
        chash = config_hash(cfg)
        spec = json.dumps({"model": asdict(m), "config": cfg})
        done = _evaluated(duck, model_id, chash)
        rows = [
            (bench, seed, "reused" if (stored_benchmark_name(bench), seed) in done else "queued")
            for bench in request.benchmarks
            for seed in request.seeds
        ]
        # one statement per model: a paper-suite job has hundreds of shards
        values = ", ".join("(?, ?, ?, ?, ?, ?, ?, 'evaluate', CASE WHEN ? = 'reused' THEN now() END)"
                           for _ in rows)  # fmt: skip
        params = [p for b, sd, st in rows for p in (job_id, model_id, b, sd, chash, spec, st, st)]
        ids = duck.execute(
            "INSERT INTO shards (job_id, model_id, benchmark, seed, config_hash, spec, status, kind, "
            f"finished_at) VALUES {values} RETURNING id, status",
            params,
        ).fetchall()
        to_enqueue += sorted(i for i, status in ids if status == "queued")
    for base, post, label, stage in request.pairs:
        add_pair(conn, base, post, label=label, stage=stage)
    update_job_status(conn, job_id)
    return job_id, to_enqueue


def _evaluated(duck, model_id: int, chash: str) -> set[tuple[str, int]]:
    """(stored benchmark name, seed) of the model's finished shards with this eval config."""
    rows = duck.execute(
        "SELECT DISTINCT benchmark, seed FROM shards "
        "WHERE model_id = ? AND config_hash = ? AND status = 'done'",
        [model_id, chash],
    ).fetchall()
    return {(stored_benchmark_name(b), seed) for b, seed in rows}


def update_job_status(conn: Connection, job_id: int) -> str:
    duck = _duck(conn)
    current = duck.execute("SELECT status FROM jobs WHERE id = ?", [job_id]).fetchone()[0]
    if current == "cancelled":
        return current
    counts = dict(
        duck.execute(
            "SELECT status, count(*) FROM shards WHERE job_id = ? GROUP BY status", [job_id]
        ).fetchall()
    )
    pending = sum(v for k, v in counts.items() if k not in TERMINAL)
    if pending == 0:
        status = "failed" if counts.get("failed") else "done"
    elif counts.get("running") or any(counts.get(k) for k in TERMINAL):
        status = "running"
    else:
        status = "queued"
    duck.execute("UPDATE jobs SET status = ?, updated_at = now() WHERE id = ?", [status, job_id])
    return status


def shard(conn: Connection, shard_id: int) -> dict | None:
    row = (
        _duck(conn)
        .execute(
            """
        SELECT s.id, s.job_id, s.status, s.spec, s.benchmark, s.seed, s.config_hash, m.name,
               s.done, s.total, s.error, s.attempts, s.kind
        FROM shards s JOIN models m ON m.id = s.model_id WHERE s.id = ?
        """,
            [shard_id],
        )
        .fetchone()
    )
    if row is None:
        return None
    keys = ("id", "job_id", "status", "spec", "benchmark", "seed", "config_hash", "model", "done",
            "total", "error", "attempts", "kind")  # fmt: skip
    out = dict(zip(keys, row, strict=True))
    out["spec"] = json.loads(out["spec"])
    return out


def start_shard(
    conn: Connection,
    shard_id: int,
    worker: str,
    delivery: str | None = None,
    stale_seconds: float = 1800.0,
) -> dict | None:
    """Claim a shard for a worker. Returns the shard to run, or None if there is nothing to do.

    ``delivery`` identifies the broker message (Celery's task id: a message re-delivered after
    its worker died keeps it, a re-send gets a new one). A running shard is taken over by a
    re-delivery of the message that claimed it, or by any delivery once its worker has been
    silent for ``stale_seconds``; another delivery of a live shard (a duplicate of a re-sent
    message) gets None, so nothing runs twice at once.
    """
    s = shard(conn, shard_id)
    if s is None or s["status"] in TERMINAL:
        return None
    duck = _duck(conn)
    if s["status"] == "running" and delivery is not None:
        claimed_by, silent = duck.execute(
            "SELECT delivery, coalesce(heartbeat_at <= now() - to_seconds(?::DOUBLE), true) "
            "FROM shards WHERE id = ?",
            [stale_seconds, shard_id],
        ).fetchone()
        if claimed_by is not None and claimed_by != delivery and not silent:
            return None
    duck.execute(
        """
        UPDATE shards SET status = 'running', attempts = attempts + 1, worker = ?, delivery = ?,
               started_at = now(), heartbeat_at = now(), error = NULL
        WHERE id = ?
        """,
        [worker, delivery, shard_id],
    )
    update_job_status(conn, s["job_id"])
    return shard(conn, shard_id)


def shard_progress(conn: Connection, shard_id: int, done: int, total: int | None) -> str:
    """Record progress; returns the shard's status (a worker stops when it reads 'cancelled')."""
    duck = _duck(conn)
    duck.execute(
        "UPDATE shards SET done = ?, total = coalesce(?, total), heartbeat_at = now() "
        "WHERE id = ? AND status = 'running'",
        [done, total, shard_id],
    )
    row = duck.execute("SELECT status FROM shards WHERE id = ?", [shard_id]).fetchone()
    return row[0] if row else "missing"


def finish_shard(
    conn: Connection, shard_id: int, *, fingerprint: str | None = None, data: dict | None = None
) -> None:
    """Mark a shard done. ``data`` (the worker's ``{source, file, sha256}``) goes into the shard's
    eval config, so the results name the exact benchmark copy they were computed on."""
    s = shard(conn, shard_id)
    if s is None:
        raise InputError(f"shard {shard_id} does not exist")
    duck = _duck(conn)
    if data:
        spec = {**s["spec"], "config": {**s["spec"]["config"], "data": data}}
        duck.execute("UPDATE shards SET spec = ? WHERE id = ?", [json.dumps(spec), shard_id])
    duck.execute(
        "UPDATE shards SET status = 'done', done = coalesce(total, done), finished_at = now() "
        "WHERE id = ? AND status <> 'cancelled'",
        [shard_id],
    )
    if fingerprint:
        duck.execute("UPDATE models SET fingerprint = ? WHERE name = ?", [fingerprint, s["model"]])
    update_job_status(conn, s["job_id"])


def fail_shard(conn: Connection, shard_id: int, error: str) -> None:
    s = shard(conn, shard_id)
    if s is None:
        raise InputError(f"shard {shard_id} does not exist")
    _duck(conn).execute(
        "UPDATE shards SET status = 'failed', error = ?, finished_at = now() "
        "WHERE id = ? AND status <> 'cancelled'",
        [error[:4000], shard_id],
    )
    update_job_status(conn, s["job_id"])


def mark_sent(conn: Connection, shard_ids: list[int], *, resend: bool = False) -> None:
    """Record that shards were handed to the broker (``resend``: again, after a lost message)."""
    if shard_ids:
        bump = ", resends = resends + 1" if resend else ""
        _duck(conn).execute(
            f"UPDATE shards SET sent_at = now(){bump} "
            f"WHERE id IN ({', '.join('?' for _ in shard_ids)}) AND status = 'queued'",
            shard_ids,
        )


def unsent_shards(conn: Connection, limit: int = 1000) -> list[int]:
    """Queued shards never handed to the broker (it was down when their job was saved)."""
    rows = (
        _duck(conn)
        .execute(
            "SELECT id FROM shards WHERE status = 'queued' AND sent_at IS NULL ORDER BY id LIMIT ?",
            [limit],
        )
        .fetchall()
    )
    return [r[0] for r in rows]


def waiting_shards(conn: Connection, older_than: float, *, backoff: bool) -> list[int]:
    """Queued shards sent more than ``older_than`` seconds ago that no worker has started.

    ``backoff``: wait ``older_than * 2^resends`` (at most 32x) instead, for when the broker cannot
    be asked whether it still holds the message, so a long queue is not flooded with copies.
    """
    factor = "power(2, least(resends, 5))" if backoff else "1"
    rows = (
        _duck(conn)
        .execute(
            "SELECT id FROM shards WHERE status = 'queued' AND sent_at IS NOT NULL "
            f"AND sent_at < now() - to_seconds(?::DOUBLE * {factor}) ORDER BY id",
            [older_than],
        )
        .fetchall()
    )
    return [r[0] for r in rows]


def stale_shards(conn: Connection, seconds: float) -> list[int]:
    """Running shards whose worker has not reported for ``seconds`` (it probably died)."""
    rows = (
        _duck(conn)
        .execute(
            "SELECT id FROM shards WHERE status = 'running' "
            "AND heartbeat_at < now() - to_seconds(?::DOUBLE) ORDER BY id",
            [seconds],
        )
        .fetchall()
    )
    return [r[0] for r in rows]


def requeue_stale(conn: Connection, shard_ids: list[int]) -> None:
    """Put silent running shards back in the queue (their worker died): the next delivery,
    whatever message carries it, claims them."""
    _duck(conn).execute(
        "UPDATE shards SET status = 'queued', heartbeat_at = now() "
        f"WHERE status = 'running' AND id IN ({', '.join('?' for _ in shard_ids)})",
        shard_ids,
    )


def retry_failed(conn: Connection, job_id: int) -> list[int]:
    """Put a job's failed shards back in the queue; returns their ids (to send)."""
    duck = _duck(conn)
    rows = duck.execute(
        "UPDATE shards SET status = 'queued', error = NULL, done = 0, sent_at = NULL, finished_at = NULL "
        "WHERE job_id = ? AND status = 'failed' RETURNING id",
        [job_id],
    ).fetchall()
    if rows:
        duck.execute(
            "UPDATE jobs SET status = 'queued' WHERE id = ? AND status <> 'cancelled'", [job_id]
        )
        update_job_status(conn, job_id)
    return sorted(r[0] for r in rows)


def cancel_job(conn: Connection, job_id: int) -> int:
    """Cancel a job: queued shards will not run, running ones stop at their next progress report."""
    duck = _duck(conn)
    n = duck.execute(
        "UPDATE shards SET status = 'cancelled', finished_at = now() "
        "WHERE job_id = ? AND status IN ('queued', 'running') RETURNING id",
        [job_id],
    ).fetchall()
    duck.execute("UPDATE jobs SET status = 'cancelled', updated_at = now() WHERE id = ?", [job_id])
    return len(n)


def job_detail(conn: Connection, job_id: int) -> dict | None:
    duck = _duck(conn)
    row = duck.execute(
        "SELECT id, kind, status, payload, created_at, updated_at, owner FROM jobs WHERE id = ?",
        [job_id],
    ).fetchone()
    if row is None:
        return None
    shards = duck.execute(
        """
        SELECT s.id, m.name, s.benchmark, s.seed, s.status, s.done, s.total, s.error, s.attempts,
               s.worker, s.started_at, s.finished_at, coalesce(s.resends, 0)
        FROM shards s JOIN models m ON m.id = s.model_id WHERE s.job_id = ? ORDER BY s.id
        """,
        [job_id],
    ).fetchall()
    keys = ("id", "model", "benchmark", "seed", "status", "done", "total", "error", "attempts",
            "worker", "started_at", "finished_at", "resends")  # fmt: skip
    shard_rows = []
    for r in shards:
        d = dict(zip(keys, r, strict=True))
        for k in ("started_at", "finished_at"):
            d[k] = d[k].isoformat() if d[k] else None
        shard_rows.append(d)
    return {
        "id": row[0],
        "kind": row[1],
        "status": row[2],
        "request": json.loads(row[3]),
        "created_at": row[4].isoformat(),
        "updated_at": row[5].isoformat(),
        "owner": row[6],
        "resends": sum(r["resends"] for r in shard_rows),
        "shards": shard_rows,
    }


def results_target(conn: Connection, shard_id: int) -> dict:
    """Where a shard's uploaded rows go: its model, benchmark, seed and eval config."""
    s = shard(conn, shard_id)
    if s is None:
        raise InputError(f"shard {shard_id} does not exist")
    if s["status"] == "cancelled":
        raise InputError(f"shard {shard_id} was cancelled; its results are not stored")
    if s["kind"] != "evaluate":
        raise InputError(
            f"shard {shard_id} is a {s['kind']} shard: per-sample results belong to evaluation "
            f"shards (recoverability results go to /api/shards/{shard_id}/recovery)"
        )
    return {**s, "benchmark": stored_benchmark_name(s["benchmark"])}
