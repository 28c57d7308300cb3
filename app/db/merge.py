"""SQL of merge sweeps and soups (forgetmap.services.merge): what a model was evaluated on by the
workers (a sweep's defaults), a merge shard's own status, a pair's sweeps and the merged pairs."""

from __future__ import annotations

import json
from typing import Any

from forgetmap.db.store import Connection


def worker_evaluations(
    conn: Connection, model: str
) -> list[tuple[dict[str, Any], list[str], list[int]]]:
    """Each eval config ``model`` was evaluated under by the workers, newest first: (the config,
    its benchmarks as requested, its seeds), every benchmark and seed finished or reused under
    it. Empty when workers never evaluated it (its results were imported)."""
    rows = conn.execute(
        """
        SELECT arg_max(s.spec, s.finished_at),
               list(DISTINCT s.benchmark ORDER BY s.benchmark),
               list(DISTINCT s.seed ORDER BY s.seed)
        FROM shards s JOIN models m ON m.id = s.model_id
        WHERE m.name = ? AND s.kind = 'evaluate' AND s.status IN ('done', 'reused')
        GROUP BY s.config_hash
        HAVING bool_or(s.status = 'done')
        ORDER BY max(s.finished_at) DESC
        """,
        [model],
    ).fetchall()
    return [(json.loads(spec)["config"], benchmarks, seeds) for spec, benchmarks, seeds in rows]


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
