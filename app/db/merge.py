"""SQL of merge sweeps (forgetmap.services.merge): what a pair's post model was last evaluated
on by the workers (a sweep's defaults) and a merge shard's own status."""

from __future__ import annotations

import json
from typing import Any

from forgetmap.db.store import Connection


def newest_evaluation(
    conn: Connection, model: str
) -> tuple[dict[str, Any], list[str], list[int]] | None:
    """(eval config, benchmarks as requested, seeds) of ``model``'s newest finished evaluation
    by the workers: every benchmark and seed finished or reused under that eval config. None
    when workers never evaluated it (its results were imported)."""
    row = conn.execute(
        """
        SELECT s.model_id, s.config_hash, s.spec FROM shards s JOIN models m ON m.id = s.model_id
        WHERE m.name = ? AND s.kind = 'evaluate' AND s.status = 'done'
        ORDER BY s.finished_at DESC, s.id DESC LIMIT 1
        """,
        [model],
    ).fetchone()
    if row is None:
        return None
    model_id, chash, spec = row
    done = conn.execute(
        "SELECT DISTINCT benchmark, seed FROM shards WHERE model_id = ? AND config_hash = ? "
        "AND kind = 'evaluate' AND status IN ('done', 'reused') ORDER BY benchmark, seed",
        [model_id, chash],
    ).fetchall()
    benchmarks = list(dict.fromkeys(b for b, _ in done))
    seeds = sorted({s for _, s in done})
    return json.loads(spec)["config"], benchmarks, seeds


def finish_reused(conn: Connection, shard_id: int) -> None:
    """A merge shard with nothing left to evaluate (every evaluation reused) ends ``reused``."""
    conn.execute(
        "UPDATE shards SET status = 'reused', finished_at = now() "
        "WHERE id = ? AND status = 'queued'",
        [shard_id],
    )


def pair_sweeps(conn: Connection, base: str, post: str) -> list[dict[str, Any]]:
    """The merge sweeps of a pair (series along the mix over ``base`` whose mix 1 is ``post``):
    id, name and mixes in thousandths."""
    rows = conn.execute(
        """
        SELECT s.id, s.name, list(c2.step ORDER BY c2.step)
        FROM series s
        JOIN models b ON b.id = s.base_model_id
        JOIN series_checkpoints c ON c.series_id = s.id AND c.step = 1000
        JOIN models p ON p.id = c.model_id
        JOIN series_checkpoints c2 ON c2.series_id = s.id
        WHERE s.axis = 'mix' AND b.name = ? AND p.name = ?
        GROUP BY s.id, s.name
        ORDER BY s.id
        """,
        [base, post],
    ).fetchall()
    return [{"id": i, "name": n, "steps": steps} for i, n, steps in rows]


def merged_pairs(conn: Connection) -> set[int]:
    """The pairs of merged models in sweeps and soups (not the post model or the last checkpoint
    a sweep or soup starts from): no recipe of their own (forgetmap.services.atlas)."""
    rows = conn.execute(
        """
        SELECT c.pair_id FROM series_checkpoints c JOIN series s ON s.id = c.series_id
        WHERE (s.axis = 'mix' AND c.step < 1000) OR (s.axis = 'soup' AND c.step > 1)
        """
    ).fetchall()
    return {r[0] for r in rows}
