"""Adaptive jobs' reads and writes (app/services/jobs.py decides): how far a model is already
evaluated on a benchmark, which unfinished shard already covers a slice, the jobs waiting for such a
shard, the paired correctness a round's look needs, benchmarks' full sizes, and the samples and
generated tokens a job used."""

from __future__ import annotations

import json
from typing import Any

from forgetmap.db.store import Connection


def stored_prefix(
    conn: Connection, model_id: int, benchmark: str, seed: int, config_hash: str
) -> tuple[int, bool]:
    """(prefix length, whole) of the benchmark's evaluation order this model has finished shards
    for under this eval config: the furthest slice end of its finished adaptive shards, or
    ``whole`` when a finished shard covered the whole benchmark or a finished slice reached its
    end (a slice may end past it: its size is known once a worker has loaded it). Rounds start
    where their model's prefix ends, so these prefixes have no holes."""
    rows = conn.execute(
        "SELECT spec FROM shards WHERE model_id = ? AND benchmark = ? AND seed = ? "
        "AND config_hash = ? AND status = 'done' AND kind = 'evaluate'",
        [model_id, benchmark, seed, config_hash],
    ).fetchall()
    prefix, whole = 0, False
    for (spec_json,) in rows:
        spec = json.loads(spec_json)
        part = spec.get("slice")
        if part is None:
            return 0, True
        end, size = part["end"], spec.get("full_size")
        if size is not None and end >= size:
            end, whole = size, True
        prefix = max(prefix, end)
    return prefix, whole


def unfinished_cover(
    conn: Connection, model_id: int, benchmark: str, seed: int, config_hash: str, start: int
) -> int | None:
    """The id of an unfinished (queued or running) evaluation shard of this model, benchmark,
    seed and eval config, of any job, that evaluates sample ``start`` of the evaluation order:
    a slice from at or before ``start`` to past it, or a shard of the whole benchmark."""
    rows = conn.execute(
        "SELECT id, spec FROM shards WHERE model_id = ? AND benchmark = ? AND seed = ? "
        "AND config_hash = ? AND status IN ('queued', 'running') AND kind = 'evaluate' "
        "ORDER BY id",
        [model_id, benchmark, seed, config_hash],
    ).fetchall()
    for shard_id, spec_json in rows:
        part = json.loads(spec_json).get("slice")
        if part is None or part["start"] <= start < part["end"]:
            return int(shard_id)
    return None


def jobs_waiting_on(conn: Connection, shard_id: int) -> list[tuple[int, str]]:
    """(job id, requested benchmark) of each unfinished adaptive job whose current round waits
    for the shard (app/services/jobs.py keeps the waits in the payload's ``rounds``)."""
    rows = conn.execute(
        "SELECT id, payload FROM jobs WHERE status IN ('queued', 'running') "
        "AND payload LIKE '%\"waiting\"%' ORDER BY id"
    ).fetchall()
    return [
        (job_id, bench)
        for job_id, payload_json in rows
        for bench, state in (json.loads(payload_json).get("rounds") or {}).items()
        if any(w["shard"] == shard_id for w in state.get("waiting", ()))
    ]


def paired_correctness(
    conn: Connection, base: str, post: str, benchmark: str, seeds: list[int]
) -> list[tuple[str, int, bool, bool, int | None]]:
    """(sample_id, seed, base correct, post correct, option count) of every sample both models
    have stored for the (stored) benchmark under one of ``seeds``."""
    return conn.execute(
        f"""
            SELECT b.sample_id, b.seed, b.correct, p.correct, coalesce(b.num_choices, p.num_choices)
            FROM results b
            JOIN results p ON p.benchmark_id = b.benchmark_id AND p.seed = b.seed
                          AND p.sample_id = b.sample_id
            WHERE b.model_id = (SELECT id FROM models WHERE name = ?)
              AND p.model_id = (SELECT id FROM models WHERE name = ?)
              AND b.benchmark_id = (SELECT id FROM benchmarks WHERE name = ?)
              AND b.seed IN ({", ".join("?" for _ in seeds)})
            """,
        [base, post, benchmark, *seeds],
    ).fetchall()


def set_full_size(conn: Connection, benchmark: str, full_size: int) -> None:
    """Record how many samples the (stored) benchmark has, as a worker's loader saw it."""
    conn.execute("UPDATE benchmarks SET full_size = ? WHERE name = ?", [full_size, benchmark])


def full_size(conn: Connection, benchmark: str) -> int | None:
    row = conn.execute("SELECT full_size FROM benchmarks WHERE name = ?", [benchmark]).fetchone()
    return row[0] if row else None


def usage(
    conn: Connection, models: list[str], benchmark: str, seeds: list[int]
) -> dict[str, tuple[int, int]]:
    """Per model: (samples stored, generated tokens) on the (stored) benchmark over ``seeds``."""
    if not models:
        return {}
    rows = conn.execute(
        f"""
            SELECT m.name, count(*), coalesce(sum(r.completion_tokens), 0)
            FROM results r JOIN models m ON m.id = r.model_id
            WHERE m.name IN ({", ".join("?" for _ in models)})
              AND r.benchmark_id = (SELECT id FROM benchmarks WHERE name = ?)
              AND r.seed IN ({", ".join("?" for _ in seeds)})
            GROUP BY m.name
            """,
        [*models, benchmark, *seeds],
    ).fetchall()
    return {name: (int(n), int(tokens)) for name, n, tokens in rows}


def round_shards(conn: Connection, job_id: int, benchmark: str) -> list[tuple[str, dict[str, Any]]]:
    """(status, spec) of the job's shards on the (requested) benchmark."""
    rows = conn.execute(
        "SELECT status, spec FROM shards WHERE job_id = ? AND benchmark = ? ORDER BY id",
        [job_id, benchmark],
    ).fetchall()
    return [(status, json.loads(spec)) for status, spec in rows]


def set_payload(conn: Connection, job_id: int, payload: dict[str, Any]) -> None:
    """Rewrite a job's payload (an adaptive job keeps its rounds' state there)."""
    conn.execute(
        "UPDATE jobs SET payload = ?, updated_at = now() WHERE id = ?",
        [json.dumps(payload), job_id],
    )
