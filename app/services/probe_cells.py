"""What asking again found, cell by cell of the map (issue 53): the newest probe of each pair
(``forgetmap.db.probe.newest_probe_counts``) summed into the map's records or cells.

A recovered count means nothing without what the probe "recovers" with nothing to recover, so
the fields travel together and never alone:

- ``n_10_probed``: the cell's 1->0 flips the probe asked about (multiple-choice flips with an
  answer to read again; fewer than ``n_10`` where the probe was limited to one cause or to some
  benchmarks);
- ``n_10_recovered``: of those, the ones whose gold option won after the post model's own answer;
- ``recovered_control``: of the same flips, the ones whose gold option won after **another**
  flip's answer (the shuffled control): the floor to read ``n_10_recovered`` against;
- ``probe_id``: the probe they come from (``GET /api/probes/{id}/outcomes``).

All four are None where the pair has no probe, or its probe asked nothing in that cell.

Plain Python over plain dicts, and one read (``with_newest_probes``): no pyarrow, so
``forgetmap map --probes`` stays lean.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from forgetmap.core.metrics import OUTSIDE_TOTAL, TOTAL
from forgetmap.db.probe import newest_probe_counts
from forgetmap.db.store import Store

PROBE_FIELDS = ("n_10_probed", "n_10_recovered", "recovered_control", "probe_id")

Key = tuple[int, str, int | None]
"""(pair id, column: a benchmark, a category or Total, seed or None for all seeds)."""


def probe_totals(counts: Iterable[dict[str, Any]], level: str) -> dict[Key, list[int]]:
    """``[probed, recovered, control, probe id]`` per key: at the benchmark level per
    (benchmark, seed) and per benchmark over its seeds; at both levels per category and per
    Total (over the categories Total counts), each over seeds."""
    totals: dict[Key, list[int]] = {}

    def add(key: Key, row: dict[str, Any]) -> None:
        found = totals.setdefault(key, [0, 0, 0, row["probe_id"]])
        found[0] += row["probed"]
        found[1] += row["recovered"]
        found[2] += row["control"]

    for row in counts:
        pair = row["pair_id"]
        if level == "benchmark":
            add((pair, row["benchmark"], row["seed"]), row)
            add((pair, row["benchmark"], None), row)
        add((pair, row["category"], None), row)
        if row["category"] not in OUTSIDE_TOTAL:
            add((pair, TOTAL, None), row)
    return totals


def with_probe_counts(
    items: list[dict[str, Any]], counts: Iterable[dict[str, Any]], level: str
) -> list[dict[str, Any]]:
    """``items`` (map records or heatmap cells of ``level``) each with ``PROBE_FIELDS``: a cell
    names its column (``column``), a record its benchmark or category (and a benchmark record its
    seed)."""
    totals = probe_totals(counts, level)
    out = []
    for item in items:
        column = item.get("column")
        if column is None:
            column = item["benchmark"] if level == "benchmark" else item["category"]
        found = totals.get((item["pair_id"], column, item.get("seed")))
        if found is None or found[0] == 0:
            out.append({**item, **dict.fromkeys(PROBE_FIELDS)})
            continue
        out.append({**item, **dict(zip(PROBE_FIELDS, found, strict=True))})
    return out


def with_newest_probes(
    store: Store, items: list[dict[str, Any]], level: str
) -> list[dict[str, Any]]:
    """``with_probe_counts`` of ``items`` with each pair's newest probe, read from ``store``
    (the map page, ``/api/map?probes=true`` and ``forgetmap map --probes`` alike)."""
    with store.read() as conn:
        counts = newest_probe_counts(conn)
    return with_probe_counts(items, counts, level)
