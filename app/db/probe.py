"""SQL of probes (forgetmap.analysis.probe; migration 0016): the rows a probe asks about, and the
outcomes and reports it leaves. Their jobs and shards are written like every other job's. All
values are parameters."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from forgetmap.core.sample_marks import AMBIGUOUS_MARK
from forgetmap.db.prompts import full_prompt
from forgetmap.db.store import Connection
from forgetmap.db.texts import answer_files, response_texts

if TYPE_CHECKING:
    import pyarrow as pa

ROW_FIELDS = (
    "benchmark",
    "benchmark_id",
    "seed",
    "sample_id",
    "post_correct",
    "num_choices",
    "gold",
    "choices",
    "base_prompt",
    "post_prompt",
    "base_response",
    "post_response",
    "post_status",
)


def probe_rows(
    conn: Connection, pair: dict[str, Any], benchmarks: list[str] | None
) -> list[dict[str, Any]]:
    """A pair's rows the base answered right (multiple-choice, and generative: no option count),
    each paired with the post model's
    row of the same question and seed (linked by question where the ids differ): the probe's
    flips (post wrong) and kept rows (post right). Both prompts as each model saw them, both
    answers (long ones read from the answer files), the post answer's status. Questions whose
    key is ambiguous are left out, as the map leaves them out."""
    files = answer_files(conn)
    joins, (base_response, post_response) = response_texts(files, "b", "p")
    params: dict[str, Any] = {
        "pair": pair["id"],
        "base": pair["base_model_id"],
        "post": pair["post_model_id"],
        "mark": AMBIGUOUS_MARK,
        "every_benchmark": benchmarks is None,
        "benchmarks": list(benchmarks or []),
    }
    if files:
        params["files"] = files
    rows = conn.execute(
        f"""
        SELECT bm.name, b.benchmark_id, b.seed, b.sample_id, p.correct,
               coalesce(b.num_choices, p.num_choices), coalesce(b.gold, p.gold),
               coalesce(b.choices, p.choices), {full_prompt("b")}, {full_prompt("p")},
               {base_response}, {post_response}, p.answer_status
        FROM results b
        JOIN benchmarks bm ON bm.id = b.benchmark_id
        LEFT JOIN sample_links l ON l.pair_id = $pair AND l.benchmark_id = b.benchmark_id
                                AND l.base_sample_id = b.sample_id
        JOIN results p ON p.model_id = $post AND p.benchmark_id = b.benchmark_id
                      AND p.seed = b.seed AND p.sample_id = coalesce(l.post_sample_id, b.sample_id)
        {joins}
        WHERE b.model_id = $base AND b.correct
          AND coalesce(b.num_choices, p.num_choices, 0) <> 1
          AND strpos(b.sample_id, $mark) = 0 AND strpos(p.sample_id, $mark) = 0
          AND ($every_benchmark OR list_contains($benchmarks::VARCHAR[], bm.name))
        ORDER BY bm.name, b.seed, b.sample_id
        """,
        params,
    ).fetchall()
    return [dict(zip(ROW_FIELDS, row, strict=True)) for row in rows]


def save_probe(
    conn: Connection,
    *,
    pair_id: int,
    shard_id: int,
    config: dict[str, Any],
    summary: dict[str, Any],
    outcomes: pa.Table,
) -> int:
    """Keep a probe shard's report and outcomes (``outcomes``: arm, benchmark_id, seed,
    sample_id, num_choices, gold, chosen), replacing an earlier upload of the same shard."""
    for (old_id,) in conn.execute(
        "SELECT id FROM probes WHERE shard_id = ?", [shard_id]
    ).fetchall():
        conn.execute("DELETE FROM probe_outcomes WHERE probe_id = ?", [old_id])
        conn.execute("DELETE FROM probes WHERE id = ?", [old_id])
    probe_id = conn.execute(
        "INSERT INTO probes (pair_id, shard_id, config, summary) VALUES (?, ?, ?, ?) RETURNING id",
        [pair_id, shard_id, json.dumps(config), json.dumps(summary)],
    ).fetchall()[0][0]
    conn.register("probe_rows", outcomes)
    try:
        conn.execute(
            "INSERT INTO probe_outcomes SELECT ?, arm, benchmark_id, seed, sample_id, num_choices, "
            "gold, chosen FROM probe_rows",
            [probe_id],
        )
    finally:
        conn.unregister("probe_rows")
    return int(probe_id)


_COLUMNS = ("id", "pair_id", "shard_id", "job_id", "config", "summary", "created_at")


def pair_probes(conn: Connection, pair_id: int) -> list[dict[str, Any]]:
    """A pair's stored probes, newest first, with their job."""
    rows = conn.execute(
        """
        SELECT pr.id, pr.pair_id, pr.shard_id, s.job_id, pr.config, pr.summary, pr.created_at
        FROM probes pr JOIN shards s ON s.id = pr.shard_id
        WHERE pr.pair_id = ? ORDER BY pr.id DESC
        """,
        [pair_id],
    ).fetchall()
    out = []
    for row in rows:
        probe = dict(zip(_COLUMNS, row, strict=True))
        probe["config"] = json.loads(probe["config"])
        probe["summary"] = json.loads(probe["summary"])
        probe["created_at"] = probe["created_at"].isoformat()
        out.append(probe)
    return out


def probe_outcomes(conn: Connection, probe_id: int, arm: str | None = None) -> list[dict[str, Any]]:
    """A probe's outcomes (of one arm), by benchmark, seed and sample."""
    rows = conn.execute(
        """
        SELECT o.arm, bm.name, o.seed, o.sample_id, o.num_choices, o.gold, o.chosen
        FROM probe_outcomes o JOIN benchmarks bm ON bm.id = o.benchmark_id
        WHERE o.probe_id = ? AND (? IS NULL OR o.arm = ?)
        ORDER BY o.arm, bm.name, o.seed, o.sample_id
        """,
        [probe_id, arm, arm],
    ).fetchall()
    keys = ("arm", "benchmark", "seed", "sample_id", "num_choices", "gold", "chosen")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def probe_exists(conn: Connection, probe_id: int) -> bool:
    return bool(conn.execute("SELECT 1 FROM probes WHERE id = ?", [probe_id]).fetchall())


PROBE_COUNT_FIELDS = (
    "pair_id",
    "probe_id",
    "benchmark",
    "category",
    "seed",
    "probed",
    "recovered",
    "control",
)


def newest_probe_counts(conn: Connection) -> list[dict[str, Any]]:
    """Per pair, its newest probe's flips by benchmark and seed: how many were asked again
    (``probed``), how many the probe recovered, and how many the shuffled control "recovered" on
    the same flips (``control``: each flip shown another flip's answer)."""
    rows = conn.execute(
        """
        WITH newest AS (SELECT pair_id, max(id) AS probe_id FROM probes GROUP BY pair_id)
        SELECT n.pair_id, n.probe_id, bm.name, bm.category, o.seed,
               count(*) FILTER (WHERE o.arm = 'flips'),
               count(*) FILTER (WHERE o.arm = 'flips' AND o.chosen = o.gold),
               count(*) FILTER (WHERE o.arm = 'shuffled' AND o.chosen = o.gold)
        FROM newest n
        JOIN probe_outcomes o ON o.probe_id = n.probe_id
        JOIN benchmarks bm ON bm.id = o.benchmark_id
        WHERE o.arm IN ('flips', 'shuffled')
        GROUP BY ALL
        ORDER BY n.pair_id, bm.name, o.seed
        """
    ).fetchall()
    return [dict(zip(PROBE_COUNT_FIELDS, row, strict=True)) for row in rows]
