"""The history of benchmark categories (migration 0015): each change an import made to a stored
benchmark's category, with the pairs whose numbers it moves."""

from __future__ import annotations

from typing import Any

from forgetmap.db.store import Connection

HISTORY_LIMIT = 200
"""The newest changes a page or an answer lists (a benchmark changes at most once per taxonomy
release, so a store holds few)."""


def category_changes(
    conn: Connection, *, names: list[str] | None = None, limit: int = HISTORY_LIMIT
) -> list[dict[str, Any]]:
    """The changes, newest first (``names``: only those benchmarks'): benchmark, ``old`` and
    ``new`` category, ``changed_at`` (UTC), ``source`` (what named it) and ``pairs``, the ids of
    the pairs that pair samples of the benchmark now, whose Totals it moved."""
    rows = conn.execute(
        """
        SELECT b.name, c.old_category, c.new_category, c.changed_at, c.source,
               (SELECT list(DISTINCT v.pair_id ORDER BY v.pair_id) FROM coverage v
                WHERE v.benchmark_id = c.benchmark_id AND v.paired > 0) AS pairs
        FROM category_changes c JOIN benchmarks b ON b.id = c.benchmark_id
        WHERE $names IS NULL OR list_contains($names, b.name)
        ORDER BY c.id DESC LIMIT $limit
        """,
        {"names": names, "limit": limit},
    ).fetchall()
    return [
        {
            "benchmark": name,
            "old": old,
            "new": new,
            "changed_at": at.isoformat(),
            "source": source,
            "pairs": list(pairs or []),
        }
        for name, old, new, at, source, pairs in rows
    ]
