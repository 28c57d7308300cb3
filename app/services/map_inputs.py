"""The map's inputs beyond the transition counts: each (pair, benchmark)'s paired interval over its
seeds, their half-widths combined into category means, and the seed-vs-seed noise floor of each
model, and each benchmark's full size (known, or seen in the data). Both read only count tables
(``forgetmap.db.queries``), with the causes the map leaves out left out of them too (``exclude``:
bits of ``forgetmap.core.answer_status.CAUSE_BITS``).
"""

from __future__ import annotations

import warnings

import numpy as np
from forgetmap.analysis.adaptive import JOINT_CELLS, interval_from_counts
from forgetmap.core import metrics
from forgetmap.db import queries
from forgetmap.db.queries import Columns, row_count


def intervals(cols: Columns, x: Columns) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Per (pair, benchmark): F_true and BT_true over all seeds with their paired interval
    (forgetmap.analysis.adaptive.interval_from_counts on the transition rows and the cross-seed
    cells stored at pairing time). Returns each count row's (pair, benchmark) index and the
    per-index arrays."""
    width = int(cols["benchmark_id"].max()) + 1
    keys, of = metrics.factorize(cols["pair_id"].astype(np.int64) * width + cols["benchmark_id"])
    x_key = x["pair_id"].astype(np.int64) * width + x["benchmark_id"]
    x_unit = np.minimum(np.searchsorted(keys, x_key), keys.size - 1)
    mine = keys[x_unit] == x_key  # cross rows of pairs and benchmarks being mapped
    seed_rows = {
        "unit": of,
        "seed": cols["seed"],
        "k": cols["k"],
        **{c: cols[c] for c in ("n_00", "n_01", "n_10", "n_11")},
    }
    cross_rows = {name: x[name][mine] for name in ("seed_a", "seed_b", "k")}
    cross_rows["unit"] = x_unit[mine]
    cross_rows["joint"] = np.stack([x[name][mine] for name in JOINT_CELLS], axis=1)
    return of, interval_from_counts(seed_rows, cross_rows, keys.size)


def combined_half_widths(
    key: np.ndarray,
    total_key: np.ndarray,
    in_total: np.ndarray,
    n: np.ndarray,
    halves: dict[str, np.ndarray],
    aggregate: str,
    size: int,
    per_pair: int,
) -> dict[str, np.ndarray]:
    """Half-widths of the category and "Total" means of benchmark values, per output slot.

    One input per (pair, benchmark): its slot ``key`` (pair x category), its pair's "Total" slot
    ``total_key`` (used where ``in_total``), its n and its half-widths. A mean with weights w_b
    has half-width sqrt(sum_b (w_b h_b)^2), which assumes independent benchmarks (their samples
    are disjoint, but the models are the same: a conservative reader widens it). Weights as in
    ``metrics.aggregate_columns`` (``metrics.mean_weights``): macro 1/B per category and 1/(C B_c)
    for Total (C categories in Total), micro n_b over the slot's n. ``per_pair``: slots per pair
    (the Total slot last).
    """
    weight = metrics.mean_weights(key, n, aggregate, size)
    if aggregate == "micro":
        total_weight = metrics.mean_weights(total_key[in_total], n[in_total], aggregate, size)
    else:
        present = np.bincount(key[in_total], minlength=size).reshape(-1, per_pair) > 0
        categories = np.repeat(present.sum(axis=1), per_pair)  # C of each slot's pair
        total_weight = (weight / np.maximum(categories[key], 1))[in_total]
    out = {}
    for name, h in halves.items():
        sq = np.bincount(key, weights=(weight * h) ** 2, minlength=size)
        sq += np.bincount(
            total_key[in_total], weights=(total_weight * h[in_total]) ** 2, minlength=size
        )
        out[name] = np.sqrt(sq)
    return out


def noise_grid(store_conn, exclude: int = 0, source: str = "") -> np.ndarray:
    """grid[model_id, benchmark_id]: mean over seed pairs of a model's seed-vs-seed flip rate
    (F + BT) / 2 on that benchmark; NaN where the model has fewer than two seeds. ``exclude``:
    the causes whose answers (under either seed) are left out; ``source``: the counts to read
    (a score set's, ``forgetmap.db.scored``)."""
    cols = queries.seed_transitions_for_pairs(store_conn, exclude=exclude, source=source)
    if row_count(cols) == 0:
        return np.full((1, 1), np.nan)
    unit_key = np.stack(
        [cols["model_id"], cols["benchmark_id"], cols["seed_a"], cols["seed_b"]], axis=1
    )
    changed = np.ones(row_count(cols), dtype=bool)
    changed[1:] = (unit_key[1:] != unit_key[:-1]).any(axis=1)
    group = np.cumsum(changed) - 1
    s = metrics.scores_from_arrays(
        cols["n_00"], cols["n_01"], cols["n_10"], cols["n_11"], cols["k"], group
    )
    flip = (s["f"] + s["bt"]) / 2.0
    starts = np.flatnonzero(changed)
    model, bench = (
        cols["model_id"][starts].astype(np.int64),
        cols["benchmark_id"][starts].astype(np.int64),
    )
    shape = (int(model.max()) + 1, int(bench.max()) + 1)
    total = np.zeros(shape)
    count = np.zeros(shape)
    np.add.at(total, (model, bench), flip)
    np.add.at(count, (model, bench), 1)
    with np.errstate(invalid="ignore"):
        return total / count


def pair_noise(
    grid: np.ndarray, base: np.ndarray, post: np.ndarray, bench: np.ndarray
) -> np.ndarray:
    """Per unit: the mean of the base's and the post model's noise floors that exist (NaN: none)."""

    def lookup(model: np.ndarray) -> np.ndarray:
        inside = (model < grid.shape[0]) & (bench < grid.shape[1])
        out = np.full(model.shape, np.nan)
        out[inside] = grid[model[inside], bench[inside]]
        return out

    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of two NaNs is NaN: no noise floor
        return np.nanmean(np.stack([lookup(base), lookup(post)]), axis=0)


def full_or_seen(full: np.ndarray, n: np.ndarray, unpaired: np.ndarray) -> np.ndarray:
    """A benchmark's full size where a worker's loader saw it; else, where one model holds
    questions the other lacks, the questions either holds (``n`` paired plus ``unpaired``): an
    import knows no full size, yet a post model with half of the base's questions is partial.
    NaN: not known and nothing left out."""
    seen = np.asarray(n, np.float64) + unpaired
    return np.where(np.isnan(full) & (seen > n), seen, full)


def full_size_by_id(benches: Columns) -> np.ndarray:
    """Each benchmark's full size as floats, indexed by benchmark id; NaN where not known
    (imported results)."""
    by_id = np.full(int(benches["id"].max()) + 1, np.nan)
    by_id[benches["id"]] = [np.nan if v is None else v for v in benches["full_size"].tolist()]
    return by_id


def unpaired_of(
    conn, pair_ids: list[int] | None, pair: np.ndarray, bench: np.ndarray
) -> np.ndarray:
    """``queries.unpaired_counts`` of each (``pair``, ``bench``), 0 where coverage has none."""
    found = queries.unpaired_counts(conn, pair_ids)
    width = int(max(bench.max(initial=0), found["benchmark_id"].max(initial=0))) + 1
    keys = found["pair_id"].astype(np.int64) * width + found["benchmark_id"]
    wanted = pair.astype(np.int64) * width + bench
    at = np.minimum(np.searchsorted(keys, wanted), max(keys.size - 1, 0))
    hit = keys[at] == wanted if keys.size else np.zeros(len(wanted), dtype=bool)
    return np.where(hit, found["unpaired"][at] if keys.size else 0, 0).astype(np.float64)


def nan_to_none(values: np.ndarray) -> list:
    """The values as a list, NaN as None (JSON has no NaN)."""
    return [None if v != v else v for v in values.tolist()]
