"""Jobs and shards: every read and write of ``jobs`` and ``shards`` (app/services/jobs.py holds the
logic: what a request means, which shards to run, how a job's status follows from its shards')."""

from __future__ import annotations

import json
from collections.abc import Sequence
from enum import Enum
from typing import Any, Literal, cast

from forgetmap.db.ingest import ensure_models
from forgetmap.db.store import Connection, one_row

SHARD_KEYS = (
    "id",
    "job_id",
    "status",
    "spec",
    "benchmark",
    "seed",
    "config_hash",
    "model",
    "done",
    "total",
    "error",
    "attempts",
    "kind",
)
JOB_SHARD_KEYS = (
    "id",
    "model",
    "benchmark",
    "seed",
    "status",
    "done",
    "total",
    "error",
    "attempts",
    "worker",
    "started_at",
    "finished_at",
    "resends",
)


class _Missing(Enum):
    """A sentinel that the type checker narrows away (``job_owner``)."""

    JOB = "no such job"


NO_SUCH_JOB = _Missing.JOB


def _placeholders(values: list[Any]) -> str:
    return ", ".join("?" for _ in values)


# ------------------------------------------------------------------------------------ models


def save_model_specs(conn: Connection, specs: dict[str, dict[str, Any]]) -> None:
    """Make sure the models exist and remember the checkpoint each names (later forms prefill
    it)."""
    ensure_models(conn, list(specs))
    for name, spec in specs.items():
        conn.execute("UPDATE models SET spec = ? WHERE name = ?", [json.dumps(spec), name])


def model_id(conn: Connection, name: str) -> int:
    return int(one_row(conn.execute("SELECT id FROM models WHERE name = ?", [name]).fetchone())[0])


def set_fingerprint(conn: Connection, model: str, fingerprint: str) -> None:
    conn.execute("UPDATE models SET fingerprint = ? WHERE name = ?", [fingerprint, model])


# ------------------------------------------------------------------------------------ jobs


def insert_job(conn: Connection, kind: str, payload: dict[str, Any]) -> int:
    return int(
        conn.execute(
            "INSERT INTO jobs (kind, status, payload) VALUES (?, 'queued', ?) RETURNING id",
            [kind, json.dumps(payload)],
        ).fetchall()[0][0]
    )


def set_owner(conn: Connection, job_id: int, owner: str) -> None:
    """Record the token name that submitted a job (shown on job pages; cancel/retry rights)."""
    conn.execute("UPDATE jobs SET owner = ? WHERE id = ?", [owner, job_id])


def job_owner(conn: Connection, job_id: int) -> str | None | Literal[_Missing.JOB]:
    """The job's owner (None for jobs older than owners), or NO_SUCH_JOB."""
    row = conn.execute("SELECT owner FROM jobs WHERE id = ?", [job_id]).fetchone()
    return NO_SUCH_JOB if row is None else row[0]


def job_status(conn: Connection, job_id: int) -> str:
    return str(
        one_row(conn.execute("SELECT status FROM jobs WHERE id = ?", [job_id]).fetchone())[0]
    )


def set_job_status(conn: Connection, job_id: int, status: str) -> None:
    conn.execute("UPDATE jobs SET status = ?, updated_at = now() WHERE id = ?", [status, job_id])


def shard_status_counts(conn: Connection, job_id: int) -> dict[str, int]:
    return dict(
        conn.execute(
            "SELECT status, count(*) FROM shards WHERE job_id = ? GROUP BY status", [job_id]
        ).fetchall()
    )


def job_row(conn: Connection, job_id: int) -> tuple[Any, ...] | None:
    """(id, kind, status, payload, created_at, updated_at, owner, error), or None."""
    return conn.execute(
        "SELECT id, kind, status, payload, created_at, updated_at, owner, error FROM jobs "
        "WHERE id = ?",
        [job_id],
    ).fetchone()


def job_kind(conn: Connection, job_id: int) -> str | None:
    row = conn.execute("SELECT kind FROM jobs WHERE id = ?", [job_id]).fetchone()
    return row[0] if row else None


def job_payload(conn: Connection, job_id: int) -> dict[str, Any]:
    row = one_row(conn.execute("SELECT payload FROM jobs WHERE id = ?", [job_id]).fetchone())
    return cast(dict[str, Any], json.loads(row[0]))


def unfinished_jobs(conn: Connection, kind: str) -> list[int]:
    """Ids of the jobs of ``kind`` still queued or running."""
    rows = conn.execute(
        "SELECT id FROM jobs WHERE kind = ? AND status IN ('queued', 'running') ORDER BY id",
        [kind],
    ).fetchall()
    return [r[0] for r in rows]


def end_job(
    conn: Connection,
    job_id: int,
    status: str,
    *,
    payload: dict[str, Any] | None = None,
    error: str | None = None,
) -> None:
    """A job without shards (an import) ends: its status, its error, and its payload if given."""
    conn.execute(
        "UPDATE jobs SET status = ?, error = ?, payload = coalesce(?, payload), updated_at = now() "
        "WHERE id = ?",
        [status, error, json.dumps(payload) if payload is not None else None, job_id],
    )


def job_shards(conn: Connection, job_id: int) -> list[dict[str, Any]]:
    """The job's shards in id order, keyed by JOB_SHARD_KEYS."""
    rows = conn.execute(
        """
            SELECT s.id, m.name, s.benchmark, s.seed, s.status, s.done, s.total, s.error,
                   s.attempts, s.worker, s.started_at, s.finished_at, coalesce(s.resends, 0)
            FROM shards s JOIN models m ON m.id = s.model_id WHERE s.job_id = ? ORDER BY s.id
            """,
        [job_id],
    ).fetchall()
    return [dict(zip(JOB_SHARD_KEYS, r, strict=True)) for r in rows]


def cancel_job(conn: Connection, job_id: int) -> list[int]:
    """Cancel a job and its queued and running shards; returns the ids of the shards it stopped."""
    stopped = conn.execute(
        "UPDATE shards SET status = 'cancelled', finished_at = now() "
        "WHERE job_id = ? AND status IN ('queued', 'running') RETURNING id",
        [job_id],
    ).fetchall()
    conn.execute("UPDATE jobs SET status = 'cancelled', updated_at = now() WHERE id = ?", [job_id])
    return sorted(r[0] for r in stopped)


def failed_shard_ids(conn: Connection, job_id: int) -> list[int]:
    rows = conn.execute(
        "SELECT id FROM shards WHERE job_id = ? AND status = 'failed' ORDER BY id", [job_id]
    ).fetchall()
    return [r[0] for r in rows]


def mark_reused(conn: Connection, shard_id: int) -> None:
    """A failed shard whose samples another shard evaluated: finished, not to run again."""
    conn.execute(
        "UPDATE shards SET status = 'reused', error = NULL, finished_at = now() "
        "WHERE id = ? AND status = 'failed'",
        [shard_id],
    )


def requeue_failed(conn: Connection, job_id: int) -> list[int]:
    """Put a job's failed shards back in the queue (and the job, unless cancelled); the ids of
    those to send (a merge shard's evaluations go with their merge shard, never alone)."""
    rows = conn.execute(
        "UPDATE shards SET status = 'queued', error = NULL, done = 0, sent_at = NULL, "
        "finished_at = NULL WHERE job_id = ? AND status = 'failed' RETURNING id, parent_id",
        [job_id],
    ).fetchall()
    if rows:
        conn.execute(
            "UPDATE jobs SET status = 'queued' WHERE id = ? AND status <> 'cancelled'", [job_id]
        )
    return sorted(r[0] for r in rows if r[1] is None)


# ------------------------------------------------------------------------------------ shards


def insert_shard(
    conn: Connection,
    *,
    job_id: int,
    model: str,
    benchmark: str,
    seed: int,
    config_hash: str,
    spec: dict[str, Any],
    status: str,
    kind: str = "evaluate",
) -> int:
    """A shard of a job; a ``reused`` one is finished at once."""
    return int(
        conn.execute(
            """
            INSERT INTO shards (job_id, model_id, benchmark, seed, config_hash, spec, status, kind,
                                finished_at)
            SELECT ?, id, ?, ?, ?, ?, ?, ?, CASE WHEN ? = 'reused' THEN now() END
            FROM models WHERE name = ?
            RETURNING id
            """,
            [job_id, benchmark, seed, config_hash, json.dumps(spec), status, kind, status, model],
        ).fetchall()[0][0]
    )


def insert_evaluation_shards(
    conn: Connection,
    *,
    job_id: int,
    model_id: int,
    config_hash: str,
    spec: dict[str, Any],
    rows: Sequence[tuple[str, int, str]],
    parent_id: int | None = None,
) -> list[tuple[int, str]]:
    """One model's (benchmark, seed, status) shards in one statement (a paper-suite job has
    hundreds); a ``reused`` one is finished at once. ``parent_id``: the merge shard whose worker
    runs them (they are never sent alone). Returns (id, status) of each."""
    values = ", ".join(
        "(?, ?, ?, ?, ?, ?, ?, 'evaluate', CASE WHEN ? = 'reused' THEN now() END, ?)" for _ in rows
    )
    spec_json = json.dumps(spec)
    params = [
        p
        for b, sd, st in rows
        for p in (job_id, model_id, b, sd, config_hash, spec_json, st, st, parent_id)
    ]
    return conn.execute(
        "INSERT INTO shards (job_id, model_id, benchmark, seed, config_hash, spec, status, "
        f"kind, finished_at, parent_id) VALUES {values} RETURNING id, status",
        params,
    ).fetchall()


def evaluated(conn: Connection, model_id: int, config_hash: str) -> list[tuple[str, int]]:
    """(benchmark as requested, seed) of the model's finished shards with this eval config that
    leave no sample out: an adaptive round's slice counts only when it reached the benchmark's
    end (its rounds start where the stored prefix ends, so the earlier ones are done too)."""
    return conn.execute(
        "SELECT DISTINCT benchmark, seed FROM shards "
        "WHERE model_id = ? AND config_hash = ? AND status = 'done' "
        "AND (json_extract(spec, '$.slice') IS NULL "
        "     OR json_extract(spec, '$.slice.end')::BIGINT "
        "        >= json_extract(spec, '$.full_size')::BIGINT)",
        [model_id, config_hash],
    ).fetchall()


def shard(conn: Connection, shard_id: int) -> dict[str, Any] | None:
    """A shard keyed by SHARD_KEYS, its spec parsed; None if there is none."""
    row = conn.execute(
        """
            SELECT s.id, s.job_id, s.status, s.spec, s.benchmark, s.seed, s.config_hash, m.name,
                   s.done, s.total, s.error, s.attempts, s.kind
            FROM shards s JOIN models m ON m.id = s.model_id WHERE s.id = ?
            """,
        [shard_id],
    ).fetchone()
    if row is None:
        return None
    out = dict(zip(SHARD_KEYS, row, strict=True))
    out["spec"] = json.loads(out["spec"])
    return out


def shard_status(conn: Connection, shard_id: int) -> str | None:
    row = conn.execute("SELECT status FROM shards WHERE id = ?", [shard_id]).fetchone()
    return row[0] if row else None


def claim(conn: Connection, shard_id: int, stale_seconds: float) -> tuple[str | None, bool]:
    """(the delivery that claimed the shard, whether its worker is silent for ``stale_seconds``)."""
    delivery, silent = one_row(
        conn.execute(
            "SELECT delivery, coalesce(heartbeat_at <= now() - to_seconds(?::DOUBLE), true) "
            "FROM shards WHERE id = ?",
            [stale_seconds, shard_id],
        ).fetchone()
    )
    return delivery, silent


def mark_running(conn: Connection, shard_id: int, worker: str, delivery: str | None) -> None:
    conn.execute(
        """
        UPDATE shards SET status = 'running', attempts = attempts + 1, worker = ?, delivery = ?,
               started_at = now(), heartbeat_at = now(), error = NULL
        WHERE id = ?
        """,
        [worker, delivery, shard_id],
    )


def record_progress(conn: Connection, shard_id: int, done: int, total: int | None) -> None:
    """A running shard's progress; it keeps its parent (the merge shard that runs it) alive."""
    conn.execute(
        "UPDATE shards SET done = ?, total = coalesce(?, total), heartbeat_at = now() "
        "WHERE id = ? AND status = 'running'",
        [done, total, shard_id],
    )
    conn.execute(
        "UPDATE shards SET heartbeat_at = now() WHERE status = 'running' "
        "AND id = (SELECT parent_id FROM shards WHERE id = ?)",
        [shard_id],
    )


def children(conn: Connection, parent_id: int) -> list[tuple[int, str]]:
    """(id, status) of the shards a merge shard's worker runs, in id order."""
    return conn.execute(
        "SELECT id, status FROM shards WHERE parent_id = ? ORDER BY id", [parent_id]
    ).fetchall()


def set_spec(conn: Connection, shard_id: int, spec: dict[str, Any]) -> None:
    conn.execute("UPDATE shards SET spec = ? WHERE id = ?", [json.dumps(spec), shard_id])


def mark_done(conn: Connection, shard_id: int) -> None:
    conn.execute(
        "UPDATE shards SET status = 'done', done = coalesce(total, done), finished_at = now() "
        "WHERE id = ? AND status <> 'cancelled'",
        [shard_id],
    )


def mark_failed(conn: Connection, shard_id: int, error: str) -> None:
    conn.execute(
        "UPDATE shards SET status = 'failed', error = ?, finished_at = now() "
        "WHERE id = ? AND status <> 'cancelled'",
        [error, shard_id],
    )


def mark_sent(conn: Connection, shard_ids: list[int], *, resend: bool = False) -> None:
    """Record that shards were handed to the broker (``resend``: again, after a lost message)."""
    if shard_ids:
        bump = ", resends = resends + 1" if resend else ""
        conn.execute(
            f"UPDATE shards SET sent_at = now(){bump} "
            f"WHERE id IN ({_placeholders(shard_ids)}) AND status = 'queued'",
            shard_ids,
        )


def unsent_shards(conn: Connection, limit: int = 1000) -> list[int]:
    """Queued shards never handed to the broker (it was down when their job was saved)."""
    rows = conn.execute(
        "SELECT id FROM shards WHERE status = 'queued' AND sent_at IS NULL "
        "AND parent_id IS NULL ORDER BY id LIMIT ?",
        [limit],
    ).fetchall()
    return [r[0] for r in rows]


def waiting_shards(conn: Connection, older_than: float, *, backoff: bool) -> list[int]:
    """Queued shards sent more than ``older_than`` seconds ago that no worker has started.

    ``backoff``: wait ``older_than * 2^resends`` (at most 32x) instead, for when the broker cannot
    be asked whether it still holds the message, so a long queue is not flooded with copies.
    """
    factor = "power(2, least(resends, 5))" if backoff else "1"
    rows = conn.execute(
        "SELECT id FROM shards WHERE status = 'queued' AND sent_at IS NOT NULL "
        "AND parent_id IS NULL "
        f"AND sent_at < now() - to_seconds(?::DOUBLE * {factor}) ORDER BY id",
        [older_than],
    ).fetchall()
    return [r[0] for r in rows]


def stale_shards(conn: Connection, seconds: float) -> list[int]:
    """Running shards whose worker has not reported for ``seconds`` (it probably died). A merge
    shard's evaluations are not among them: their progress keeps the merge shard alive, and the
    merge shard's next delivery takes them over."""
    rows = conn.execute(
        "SELECT id FROM shards WHERE status = 'running' AND parent_id IS NULL "
        "AND heartbeat_at < now() - to_seconds(?::DOUBLE) ORDER BY id",
        [seconds],
    ).fetchall()
    return [r[0] for r in rows]


def requeue_stale(conn: Connection, shard_ids: list[int]) -> None:
    """Put silent running shards back in the queue (their worker died): the next delivery,
    whatever message carries it, claims them."""
    conn.execute(
        "UPDATE shards SET status = 'queued', heartbeat_at = now() "
        f"WHERE status = 'running' AND id IN ({_placeholders(shard_ids)})",
        shard_ids,
    )


RESULT_TABLES = {"recover": "recoveries", "probe": "probes", "judge": "judge_runs"}
"""Where each kind of one-shard analysis keeps its result (a row per shard, with its pair)."""


def finished_result(conn: Connection, kind: str, pair_id: int, config_hash: str) -> bool:
    """Whether the pair holds a result of ``kind`` from a finished shard with this spec."""
    table = RESULT_TABLES[kind]  # a fixed name: never a caller's text
    rows = conn.execute(
        f"""
        SELECT 1 FROM {table} r JOIN shards s ON s.id = r.shard_id
        WHERE r.pair_id = ? AND s.config_hash = ? AND s.status = 'done' LIMIT 1
        """,
        [pair_id, config_hash],
    ).fetchall()
    return bool(rows)
