"""SQL of judges (forgetmap.services.judge; migration 0017): the rows a judge reads and the runs
it leaves (its readings are a score set: forgetmap.db.scores). All values are parameters."""

from __future__ import annotations

import json
from typing import Any

from forgetmap.core.sample_marks import AMBIGUOUS_MARK
from forgetmap.db.prompts import full_prompt
from forgetmap.db.store import Connection
from forgetmap.db.texts import answer_files, response_texts

ROW_FIELDS = (
    "model",
    "model_id",
    "benchmark",
    "benchmark_id",
    "seed",
    "sample_id",
    "num_choices",
    "gold",
    "choices",
    "prompt",
    "response",
    "prediction",
    "answer_status",
)


def judge_rows(
    conn: Connection, pair: dict[str, Any], benchmarks: list[str] | None
) -> list[dict[str, Any]]:
    """Both models' multiple-choice rows with an answer text, on the benchmarks the pair covers
    (``coverage``), each with its prompt as the model saw it, its answer (long ones read from the
    answer files), the harness's prediction and the answer's status. Ambiguous keys are left
    out, as the map leaves them out."""
    files = answer_files(conn)
    join, (text,) = response_texts(files, "r")
    params: dict[str, Any] = {
        "pair": pair["id"],
        "models": [pair["base_model_id"], pair["post_model_id"]],
        "mark": AMBIGUOUS_MARK,
        "every_benchmark": benchmarks is None,
        "benchmarks": list(benchmarks or []),
    }
    if files:
        params["files"] = files
    rows = conn.execute(
        f"""
        SELECT m.name, r.model_id, bm.name, r.benchmark_id, r.seed, r.sample_id, r.num_choices,
               r.gold, r.choices, {full_prompt("r")}, {text}, r.prediction, r.answer_status
        FROM results r
        JOIN models m ON m.id = r.model_id
        JOIN benchmarks bm ON bm.id = r.benchmark_id
        {join}
        WHERE list_contains($models, r.model_id) AND r.num_choices >= 2
          AND r.benchmark_id IN (SELECT benchmark_id FROM coverage WHERE pair_id = $pair)
          AND strpos(r.sample_id, $mark) = 0 AND {text} IS NOT NULL
          AND ($every_benchmark OR list_contains($benchmarks::VARCHAR[], bm.name))
        ORDER BY m.name, bm.name, r.seed, r.sample_id
        """,
        params,
    ).fetchall()
    return [dict(zip(ROW_FIELDS, row, strict=True)) for row in rows]


def save_judge_run(
    conn: Connection,
    *,
    pair_id: int,
    shard_id: int,
    score_set_id: int,
    config: dict[str, Any],
    audit: dict[str, Any],
) -> int:
    """Keep what a judge's score set was made from, replacing an earlier upload of the shard."""
    conn.execute("DELETE FROM judge_runs WHERE shard_id = ?", [shard_id])
    row = conn.execute(
        "INSERT INTO judge_runs (pair_id, shard_id, score_set_id, config, audit) "
        "VALUES (?, ?, ?, ?, ?) RETURNING id",
        [pair_id, shard_id, score_set_id, json.dumps(config), json.dumps(audit)],
    ).fetchall()
    return int(row[0][0])


def pair_judges(conn: Connection, pair_id: int) -> list[dict[str, Any]]:
    """A pair's judge runs, newest first: the score set, the job, the judge and its audit."""
    rows = conn.execute(
        """
        SELECT j.id, s.name, sh.job_id, j.config, j.audit, j.created_at
        FROM judge_runs j JOIN score_sets s ON s.id = j.score_set_id
        JOIN shards sh ON sh.id = j.shard_id
        WHERE j.pair_id = ? ORDER BY j.id DESC
        """,
        [pair_id],
    ).fetchall()
    keys = ("id", "score_set", "job_id", "config", "audit", "created_at")
    out = []
    for row in rows:
        run = dict(zip(keys, row, strict=True))
        run["config"] = json.loads(run["config"])
        run["audit"] = json.loads(run["audit"])
        run["created_at"] = run["created_at"].isoformat()
        out.append(run)
    return out
