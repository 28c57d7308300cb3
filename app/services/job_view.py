"""A job as its page and the API show it: what it evaluates in words, its shards, an adaptive job's
savings, and why its queued shards do not move."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from forgetmap.contract.jobs import ShardStatus
from forgetmap.db import adaptive as adaptive_db
from forgetmap.db import jobs as jobs_db
from forgetmap.db import queries
from forgetmap.db.store import Connection
from forgetmap.services.jobs import stored_benchmark_name
from forgetmap.services.rejections import Rejection
from forgetmap.services.rounds import rule_of


def job_subject(payload: dict, series: tuple[str, int] | None = None) -> str:
    """What a job evaluates, in words: a series' checkpoint, else its pairs (label, or
    ``base -> post``), else its models. Plain text: pages and charts escape it."""
    if series is not None:
        return f"series {series[0]}, step {series[1]}"
    if "import" in payload:  # an upload imported by the app (app/services/imports.py)
        return f"{payload['import']['file']} ({payload['import']['kind']})"
    pairs = payload.get("pairs") or []
    if pairs:
        return "; ".join(p.get("label") or f"{p['base']} -> {p['post']}" for p in pairs)
    return ", ".join(m["name"] for m in payload.get("models", []) if "name" in m)


def job_detail(conn: Connection, job_id: int) -> dict | None:
    row = jobs_db.job_row(conn, job_id)
    if row is None:
        return None
    request = json.loads(row[3])
    found = queries.job_series(conn, job_id)
    series = found[1:] if found else None
    shard_rows = jobs_db.job_shards(conn, job_id)
    for d in shard_rows:
        for k in ("started_at", "finished_at"):
            d[k] = d[k].isoformat() if d[k] else None
    return {
        "id": row[0],
        "kind": row[1],
        "status": row[2],
        "request": request,
        "subject": job_subject(request, series),
        "series_id": found[0] if found else None,
        "series": series[0] if series else None,
        "step": series[1] if series else None,
        "created_at": row[4].isoformat(),
        "updated_at": row[5].isoformat(),
        "owner": row[6],
        "error": row[7],
        "resends": sum(r["resends"] for r in shard_rows),
        "shards": shard_rows,
        "adaptive": adaptive_summary(conn, request),
    }


NO_WORKER_AFTER_SECONDS = 30
"""How long a job waits with no worker heard from before its page says so (a worker that has just
started takes a few seconds to call)."""


def waiting_reason(
    job: dict,
    rejection: Rejection | None,
    now: float,
    *,
    worker_heard_at: float | None = None,
    app_started_at: float | None = None,
) -> str | None:
    """Why a job's queued shards do not move, when none of them runs:

    - a worker was refused (``RejectionLog.blocking``): "waiting: worker W rejected: REASON (N s
      ago, at HH:MM:SS UTC)";
    - no worker's call has been accepted since the app started (``app_started_at``; the job has
      waited NO_WORKER_AFTER_SECONDS): "waiting: no worker has called this app since it started
      ...", with the command that starts one.

    None otherwise (nothing queued, something running, or a worker is known to be there)."""
    statuses = {s["status"] for s in job["shards"]}
    if ShardStatus.queued not in statuses or ShardStatus.running in statuses:
        return None
    if rejection is not None:
        ago = max(0, round(now - rejection.at))
        clock = time.strftime("%H:%M:%S UTC", time.gmtime(rejection.at))
        return (
            f"waiting: worker {rejection.worker} rejected: {rejection.reason} ({ago} s ago, at "
            f"{clock})"
        )
    if app_started_at is None or worker_heard_at is not None:
        return None
    created = datetime.fromisoformat(job["created_at"]).replace(tzinfo=UTC).timestamp()
    if now - created < NO_WORKER_AFTER_SECONDS:
        return None
    clock = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(app_started_at))
    return (
        f"waiting: no worker has called this app since it started ({clock}); start one on a "
        "machine that reaches the queue: `forgetmap worker`, with a token of role worker "
        "(`forgetmap token create NAME --role worker`)"
    )


def adaptive_summary(conn: Connection, payload: dict) -> dict | None:
    """An adaptive job's savings: per benchmark, each pair's n (of the full size) and why it
    stopped; in total, samples and generated tokens used against a full run's (tokens of the
    full run estimated per model and benchmark as tokens used / samples used * full size)."""
    if not payload.get("adaptive"):
        return None
    seeds = list(payload["seeds"])
    names = [m["name"] for m in payload["models"]]
    benchmarks, used, full, tokens, tokens_full = [], 0, 0, 0, 0.0
    for bench, state in (payload.get("rounds") or {}).items():
        stored = stored_benchmark_name(bench)
        size = state.get("full_size")
        per_model = adaptive_db.usage(conn, names, stored, seeds)
        for n_rows, n_tokens in per_model.values():
            used += n_rows
            tokens += n_tokens
            if size is not None and n_rows:
                full += size * len(seeds)
                tokens_full += n_tokens / n_rows * size * len(seeds)
        benchmarks.append(
            {
                "benchmark": stored,
                "requested": bench,
                "full_size": size,
                "round": state["round"],
                "done": all(p["stopped"] for p in state["pairs"]),
                "waiting_for_shards": [w["shard"] for w in state.get("waiting", [])],
                "pairs": [
                    {
                        k: p[k]
                        for k in ("base", "post", "n", "stopped", "f_half_points", "bt_half_points")
                    }
                    for p in state["pairs"]
                ],
            }
        )
    return {
        # a job from before round_growth was a setting ran with the rule's default
        "settings": {
            "round_growth": rule_of(payload["adaptive"]).round_growth,
            **payload["adaptive"],
        },
        "benchmarks": benchmarks,
        "samples_used": used,
        "samples_full": full,
        "tokens_used": tokens,
        "tokens_full_estimated": round(tokens_full),
    }
