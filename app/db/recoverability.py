"""SQL of recoverability analyses: stored results and their per-document table (their jobs and
shards are written by app/services/jobs.py like every other job).

The per-document loss sums are kept in long form (one row per document, model and correction);
:func:`documents_table` pivots them back into the analysis' wide table. All values are parameters.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from forgetmap.analysis.recoverability_shares import loss_column
from forgetmap.db.store import Connection


def save_recovery(
    conn: Connection,
    *,
    pair_id: int,
    shard_id: int | None,
    corpus: str,
    config: dict[str, Any],
    summary: dict[str, Any],
    table: dict[str, list[Any]],
) -> int:
    if shard_id is not None:
        old = conn.execute("SELECT id FROM recoveries WHERE shard_id = ?", [shard_id]).fetchall()
        for (old_id,) in old:
            conn.execute("DELETE FROM recovery_documents WHERE recovery_id = ?", [old_id])
            conn.execute("DELETE FROM recoveries WHERE id = ?", [old_id])
    recovery_id = conn.execute(
        "INSERT INTO recoveries (pair_id, shard_id, corpus, config, summary) "
        "VALUES (?, ?, ?, ?, ?) RETURNING id",
        [pair_id, shard_id, corpus, json.dumps(config), json.dumps(summary)],
    ).fetchall()[0][0]
    n = len(table["doc_id"])
    columns = [c for c in table if "/" in c]
    rows = pa.table(
        {
            "recovery_id": pa.array([recovery_id] * (n * len(columns)), pa.int32()),
            "doc_index": pa.array(list(range(n)) * len(columns), pa.int32()),
            "doc_id": pa.array([str(d) for d in table["doc_id"]] * len(columns), pa.string()),
            "split": pa.array(list(table["split"]) * len(columns), pa.string()),
            "n_tokens": pa.array(list(table["n_tokens"]) * len(columns), pa.int32()),
            "model": pa.array([c.split("/", 1)[0] for c in columns for _ in range(n)], pa.string()),
            "correction": pa.array(
                [c.split("/", 1)[1] for c in columns for _ in range(n)], pa.string()
            ),
            "loss_sum": pa.array([float(v) for c in columns for v in table[c]], pa.float64()),
        }
    )
    conn.register("recovery_rows", rows)
    try:
        conn.execute("INSERT INTO recovery_documents SELECT * FROM recovery_rows")
    finally:
        conn.unregister("recovery_rows")
    return int(recovery_id)


_COLUMNS = ("id", "pair_id", "shard_id", "corpus", "config", "summary", "created_at")


def _recovery(row: tuple[Any, ...]) -> dict[str, Any]:
    out = dict(zip(_COLUMNS, row, strict=True))
    out["config"] = json.loads(out["config"])
    out["summary"] = json.loads(out["summary"])
    out["created_at"] = out["created_at"].isoformat()
    return out


def recovery(conn: Connection, recovery_id: int) -> dict[str, Any] | None:
    rows = conn.execute(
        f"SELECT {', '.join(_COLUMNS)} FROM recoveries WHERE id = ?", [recovery_id]
    ).fetchall()
    return _recovery(rows[0]) if rows else None


def pair_recoveries(conn: Connection, pair_id: int) -> list[dict[str, Any]]:
    """A pair's analyses, newest first."""
    rows = conn.execute(
        f"SELECT {', '.join(_COLUMNS)} FROM recoveries WHERE pair_id = ? ORDER BY id DESC",
        [pair_id],
    ).fetchall()
    return [_recovery(r) for r in rows]


def latest_recoveries(conn: Connection) -> list[dict[str, Any]]:
    """The newest analysis of every pair that has one."""
    rows = conn.execute(
        f"""
        SELECT {", ".join(_COLUMNS)} FROM recoveries
        WHERE id IN (SELECT max(id) FROM recoveries GROUP BY pair_id) ORDER BY pair_id
        """
    ).fetchall()
    return [_recovery(r) for r in rows]


def documents_table(conn: Connection, recovery_id: int) -> dict[str, list[Any]]:
    """The wide per-document table (``doc_id, split, n_tokens, model/correction...``) of
    forgetmap.analysis.recoverability_shares, from which every share of the analysis can be
    recomputed."""
    rows = conn.execute(
        """
        SELECT doc_index, doc_id, split, n_tokens, model, correction, loss_sum
        FROM recovery_documents WHERE recovery_id = ? ORDER BY model, correction, doc_index
        """,
        [recovery_id],
    ).fetchall()
    if not rows:
        return {}
    n = max(r[0] for r in rows) + 1
    table: dict[str, list[Any]] = {
        "doc_id": [None] * n,
        "split": [None] * n,
        "n_tokens": [None] * n,
    }
    for index, doc_id, split, n_tokens, model, correction, loss in rows:
        table["doc_id"][index], table["split"][index], table["n_tokens"][index] = (
            doc_id,
            split,
            n_tokens,
        )
        table.setdefault(loss_column(model, correction), [None] * n)[index] = loss
    return table
