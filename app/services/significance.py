"""Which map cells survive: Benjamini-Hochberg over the map's McNemar tests, and the noise floor.

Every map record gains ``p_adjusted`` (its McNemar p adjusted by Benjamini-Hochberg over the
family of every record the query returns, forgetmap.core.metrics.benjamini_hochberg),
``significant`` (p_adjusted < ``FDR``) and ``below_noise`` (F_true's interval across seeds does not
clear the pair's noise floor, forgetmap.core.metrics.clears_noise_floor). A category record's
McNemar test is on one seed's worth of discordant pairs: each benchmark's mean over its seeds,
summed over the cell's benchmarks (``forgetmap.services.map.category_records_for``); its family is
every category record of the query. None where a value cannot be decided (``below_noise`` with one
seed or no noise floor).
"""

from __future__ import annotations

import numpy as np
from forgetmap.core import metrics

SIGNIFICANCE_FIELDS = ("p_adjusted", "significant", "below_noise")
FDR = 0.05
"""The false discovery rate q of the map's family (docs/metric.md, Which cells survive)."""


def _significant(p_adjusted: np.ndarray) -> list:
    return [None if p != p else p < FDR for p in p_adjusted.tolist()]


def _below_noise(mean: float, std: float | None, seeds: int, floor: float | None) -> bool | None:
    clears = metrics.clears_noise_floor(mean, std, seeds, floor)
    return None if clears is None else not clears


def benchmark_columns(cols: dict) -> dict[str, list]:
    """The three fields for benchmark-level columns (one entry per (pair, benchmark, seed), with
    ``pair_id``, ``benchmark``, ``f_true``, ``noise_floor`` and ``mcnemar_p``): the family is
    every entry; ``below_noise`` uses F_true's mean and std over a (pair, benchmark)'s seeds."""
    p_adjusted = metrics.benjamini_hochberg(np.asarray(cols["mcnemar_p"], dtype=np.float64))
    keys = list(zip(np.asarray(cols["pair_id"]).tolist(), list(cols["benchmark"]), strict=True))
    index: dict = {}
    group = np.fromiter((index.setdefault(k, len(index)) for k in keys), np.int64, len(keys))
    f_true = np.asarray(cols["f_true"], dtype=np.float64)
    count = np.bincount(group, minlength=len(index))
    mean = np.bincount(group, weights=f_true, minlength=len(index)) / count
    sq = np.bincount(group, weights=(f_true - mean[group]) ** 2, minlength=len(index))
    std = np.sqrt(sq / np.maximum(count - 1, 1))
    floor = np.full(len(index), np.nan)
    floor[group] = np.asarray(cols["noise_floor"], dtype=np.float64)  # the same on every seed
    below = [
        _below_noise(m, s if c > 1 else None, c, None if f != f else f)
        for m, s, c, f in zip(
            mean.tolist(), std.tolist(), count.tolist(), floor.tolist(), strict=True
        )
    ]
    return {
        "p_adjusted": p_adjusted.tolist(),
        "significant": _significant(p_adjusted),
        "below_noise": [below[g] for g in group.tolist()],
    }


def category_columns(cols: dict) -> dict[str, list]:
    """The three fields for category-level columns (lists ``f_true``, ``f_true_std``, ``seeds``,
    ``noise_floor`` and ``mcnemar_p``, as category records hold them): the family is every
    entry."""
    p_adjusted = metrics.benjamini_hochberg(np.asarray(cols["mcnemar_p"], dtype=np.float64))
    below = [
        _below_noise(*row)
        for row in zip(
            cols["f_true"], cols["f_true_std"], cols["seeds"], cols["noise_floor"], strict=True
        )
    ]
    return {
        "p_adjusted": p_adjusted.tolist(),
        "significant": _significant(p_adjusted),
        "below_noise": below,
    }


def refamily(records: list[dict]) -> list[dict]:
    """Copies of ``records`` (of either level) with ``p_adjusted`` and ``significant`` recomputed
    over them as the family (a filtered map is a smaller family)."""
    if not records:
        return records
    p = metrics.benjamini_hochberg(np.array([r["mcnemar_p"] for r in records], dtype=np.float64))
    flags = _significant(p)
    return [
        {**r, "p_adjusted": q, "significant": s}
        for r, q, s in zip(records, p.tolist(), flags, strict=True)
    ]


def cell_fields(records: list[dict], group: np.ndarray, size: int) -> list[dict]:
    """Per heatmap cell (``group``: each benchmark-level record's cell): the largest p_adjusted of
    its seeds, significant only when every seed is, and its (pair, benchmark)'s below_noise."""
    worst = np.full(size, -np.inf)
    p = np.array([np.nan if r["p_adjusted"] is None else r["p_adjusted"] for r in records])
    np.fmax.at(worst, group, p)
    out: list[dict] = [{} for _ in range(size)]
    for g, r in zip(group.tolist(), records, strict=True):
        cell = out[g]
        if "below_noise" not in cell:
            cell.update(p_adjusted=None, significant=None, below_noise=r["below_noise"])
        if r["significant"] is not None:
            cell["significant"] = r["significant"] and cell["significant"] is not False
    for cell, w in zip(out, worst.tolist(), strict=True):
        cell["p_adjusted"] = None if w == -np.inf or w != w else w
    return out
