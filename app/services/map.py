"""The forgetting map: contract records built from the materialized counts and the metric core.

Shared by ``forgetmap map`` and ``GET /api/map``. Reads only the small count tables (never the
per-sample rows), computes every number with forgetmap.core.metrics, and returns plain dicts in the
field order of the public contract, followed by extension fields.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from itertools import repeat

import numpy as np
import numpy.ma  # noqa: F401  numpy loads it on first use (7 ms of a cold map): at import instead
from forgetmap.core import metrics, vocabularies
from forgetmap.core.answer_status import cause_mask, parse_exclude
from forgetmap.core.taxonomy import CATEGORIES, NOT_SCORED, UNCATEGORIZED
from forgetmap.db import queries
from forgetmap.db import scored as scored_counts
from forgetmap.db.queries import Columns, row_count
from forgetmap.db.store import Store
from forgetmap.services import significance
from forgetmap.services.map_inputs import (
    combined_half_widths,
    full_or_seen,
    full_size_by_id,
    intervals,
    nan_to_none,
    noise_grid,
    pair_noise,
    unpaired_of,
)

LEVELS = vocabularies.LEVELS

BENCHMARK_FIELDS = (
    "base",
    "post",
    "benchmark",
    "category",
    "seed",
    "n",
    "num_choices",
    "acc_pre",
    "acc_post",
    "n_00",
    "n_01",
    "n_10",
    "n_11",
    "f",
    "bt",
    "f_chance",
    "bt_chance",
    "f_true",
    "bt_true",
    "f_max",
    "bt_max",
)
INTERVAL_FIELDS = ("f_true_low", "f_true_high", "bt_true_low", "bt_true_high")
"""The paired 95% interval of the values over all seeds
(forgetmap.analysis.adaptive.interval_from_counts)."""
TRUNCATION_FIELDS = ("n_10_truncated", "n_truncated")
"""Of the counted samples: the 1->0 flips whose answer (either side's) was cut off by the token
limit, and every sample with such an answer; 0 where the map leaves them out."""
CAUSE_FIELDS = ("n_10_no_answer", "n_01_no_answer", "n_10_refused")
"""Of the counted samples: the 1->0 and 0->1 flips with an answer from which nothing could be
extracted (either side's), and the 1->0 flips with a refusal (``forgetmap.core.answer_status``);
0 where the map leaves them out."""
COUNTED_CAUSES = {
    "n_10_truncated": "n_10_cut",
    "n_truncated": "n_cut",
    "n_10_no_answer": "n_10_no_answer",
    "n_01_no_answer": "n_01_no_answer",
    "n_10_refused": "n_10_refused",
}
"""Each cause field of a record and the count column (``forgetmap.db.queries.CAUSE_COUNTS``) it
sums."""
BENCHMARK_EXTRA = (
    "pair_id",
    "label",
    "stage",
    "k_mix",
    "mcnemar_p",
    "noise_floor",
    "only_base",
    "only_post",
    "mismatched",
    "net",
    "f_rel",
    *INTERVAL_FIELDS,
    "full_size",
    "partial",
    *TRUNCATION_FIELDS,
    *CAUSE_FIELDS,
) + significance.SIGNIFICANCE_FIELDS
CATEGORY_FIELDS = (
    "base",
    "post",
    "category",
    "n_benchmarks",
    "seeds",
    "f_true",
    "f_true_std",
    "bt_true",
    "bt_true_std",
    "f",
    "bt",
    "f_max",
    "bt_max",
)
CATEGORY_EXTRA = (
    "pair_id",
    "label",
    "stage",
    "noise_floor",
    "net",
    "f_rel",
    "n",
    *INTERVAL_FIELDS,
    "full_size",
    "partial",
    "n_10_truncated",
    *CAUSE_FIELDS,
    "mcnemar_p",
    *significance.SIGNIFICANCE_FIELDS,
)
TRUNCATED = ("include", "exclude")
DERIVED = ("net", "f_rel")
"""Derived values the map can colour by (forgetmap.core.metrics: net_transfer, relative_forgetting);
NaN and missing values travel as None."""


def derived_metrics(f_true, bt_true, f_max) -> dict[str, np.ndarray]:
    """``net`` = BT_true - F_true and ``f_rel`` = F_true / F_max (NaN where F_max = 0)."""
    return {
        "net": metrics.net_transfer(f_true, bt_true),
        "f_rel": metrics.relative_forgetting(f_true, f_max),
    }


@dataclass(frozen=True)
class MapQuery:
    """What to map, and which pairs to keep (filters match the pair's label/models, stage, the
    base model's family and size)."""

    level: str = "category"
    aggregate: str = "macro"
    stage: str | None = None
    family: str | None = None
    q: str | None = None
    min_size: float | None = None
    max_size: float | None = None
    truncated: str = "include"  # "exclude": the same as "truncated" in ``exclude``
    exclude: frozenset[str] = frozenset()  # causes whose samples are left out of every count
    scores: str | None = (
        None  # a score set's grades (``forgetmap rescore``) instead of the harness's
    )

    def __post_init__(self) -> None:
        if self.truncated not in TRUNCATED:
            raise ValueError(
                f"truncated must be one of {', '.join(TRUNCATED)}, got {self.truncated!r}"
            )
        causes = parse_exclude(self.exclude) | (
            {"truncated"} if self.truncated == "exclude" else set()
        )
        object.__setattr__(self, "exclude", frozenset(causes))
        object.__setattr__(self, "truncated", "include")  # said once, in ``exclude``

    @property
    def mask(self) -> int:
        """The bits of the causes left out (``forgetmap.core.answer_status.cause_mask``)."""
        return cause_mask(self.exclude)
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {self.level!r}")
        if self.aggregate not in metrics.AGGREGATES:
            raise ValueError(
                f"aggregate must be one of {', '.join(metrics.AGGREGATES)}, got {self.aggregate!r}"
            )


def category_sort_key(category: str) -> tuple[int, str]:
    if category in CATEGORIES:
        return (CATEGORIES.index(category), "")
    if category == metrics.TOTAL:
        return (len(CATEGORIES) + 2, "")
    if category == UNCATEGORIZED:
        return (len(CATEGORIES) + 1, "")
    if category == NOT_SCORED:
        return (len(CATEGORIES) + 1, "~")
    return (len(CATEGORIES), category)


def _units(cols: Columns) -> tuple[Columns, np.ndarray, dict[str, np.ndarray]]:
    """Collapse k-group rows into (pair, benchmark, seed) units and score them all at once."""
    key = np.stack([cols["pair_id"], cols["benchmark_id"], cols["seed"]], axis=1)
    # rows arrive ordered by (pair, benchmark, seed, k): a new unit starts where the key changes
    changed = np.ones(row_count(cols), dtype=bool)
    if len(changed) > 1:
        changed[1:] = (key[1:] != key[:-1]).any(axis=1)
    group = np.cumsum(changed) - 1
    scores = metrics.scores_from_arrays(
        cols["n_00"], cols["n_01"], cols["n_10"], cols["n_11"], cols["k"], group
    )
    return cols, np.flatnonzero(changed), scores


def _benchmark_columns(
    store: Store,
    pair_id: int | None,
    pair_ids: list[int] | None = None,
    exclude: int = 0,
    scores: int | None = None,
) -> dict[str, np.ndarray | list | None]:
    """Every per-(pair, benchmark, seed) field as columns, in contract order, sorted for display:
    by pair, category (the paper's order), benchmark name, seed. ``scores``: a score set's id, whose
    grades are counted instead of the harness's."""
    with store.read() as conn:
        source = _scored_source(conn, scores, [pair_id] if pair_id is not None else pair_ids)
        counts = queries.transition_counts(conn, pair_id, pair_ids, exclude=exclude, source=source)
        cross = queries.cross_seed_cells(conn, pair_id, pair_ids, exclude=exclude, source=source)
        pairs = queries.pair_names(conn)
        benches = queries.benchmark_names(conn)
        noise = noise_grid(conn, exclude, source)
    if row_count(counts) == 0:
        return {}
    cols, starts, unit_scores = _units(counts)
    pair_bench_of_row, interval = intervals(cols, cross)
    ends = np.r_[starts[1:], row_count(counts)]
    groups = ends - starts
    k = cols["k"].astype(np.int64)
    single_k = np.where(groups == 1, k[starts], 0)
    sizes = cols["n_00"] + cols["n_01"] + cols["n_10"] + cols["n_11"]
    k_mix = [""] * len(starts)
    for unit in np.flatnonzero(groups > 1):
        a, b = starts[unit], ends[unit]
        k_mix[unit] = ",".join(
            f"{kk or 'gen'}:{int(g)}" for kk, g in zip(k[a:b], sizes[a:b], strict=True)
        )
    # names: per pair and per benchmark (small tables), then taken for every unit
    pair_id_column = pairs["pair_id"]
    p_row = np.searchsorted(pair_id_column, cols["pair_id"][starts])
    per_pair = {
        name: np.asarray(pairs[name], dtype=object) for name in ("base", "post", "label", "stage")
    }
    bench_ids = benches["id"]
    b_row = np.searchsorted(bench_ids, cols["benchmark_id"][starts])
    bench_name = np.asarray(benches["name"], dtype=object)
    bench_cat = np.asarray(benches["category"], dtype=object)
    per_unit = {
        name: cols[name][starts]
        for name in ("seed", "pair_id", "only_base", "only_post", "mismatched", "benchmark_id")
    }
    known = full_size_by_id(benches)[per_unit["benchmark_id"]]
    full_size = full_or_seen(known, unit_scores["n"], per_unit["only_base"] + per_unit["only_post"])
    per_unit.update(
        base=per_pair["base"][p_row],
        post=per_pair["post"][p_row],
        label=per_pair["label"][p_row],
        stage=per_pair["stage"][p_row],
        benchmark=bench_name[b_row],
        category=bench_cat[b_row],
        base_model_id=pairs["base_model_id"][p_row],
        post_model_id=pairs["post_model_id"][p_row],
    )
    out = {
        "base": per_unit["base"],
        "post": per_unit["post"],
        "benchmark": per_unit["benchmark"],
        "category": per_unit["category"],
        "seed": per_unit["seed"].astype(np.int64),
        "n": unit_scores["n"],
        "num_choices": np.where(single_k > 0, single_k, -1),
        "acc_pre": unit_scores["acc_pre"],
        "acc_post": unit_scores["acc_post"],
        "n_00": unit_scores["n_00"],
        "n_01": unit_scores["n_01"],
        "n_10": unit_scores["n_10"],
        "n_11": unit_scores["n_11"],
        **{
            name: unit_scores[name]
            for name in ("f", "bt", "f_chance", "bt_chance", "f_true", "bt_true", "f_max", "bt_max")
        },
        "pair_id": per_unit["pair_id"].astype(np.int64),
        "label": per_unit["label"],
        "stage": per_unit["stage"],
        "k_mix": k_mix,
        "mcnemar_p": None,  # filled by benchmark_records only: the category map needs no test
        "noise_floor": pair_noise(
            noise,
            per_unit["base_model_id"].astype(np.int64),
            per_unit["post_model_id"].astype(np.int64),
            per_unit["benchmark_id"].astype(np.int64),
        ),
        "only_base": per_unit["only_base"].astype(np.int64),
        "only_post": per_unit["only_post"].astype(np.int64),
        "mismatched": per_unit["mismatched"].astype(np.int64),
        **derived_metrics(unit_scores["f_true"], unit_scores["bt_true"], unit_scores["f_max"]),
        **{name: interval[name][pair_bench_of_row[starts]] for name in INTERVAL_FIELDS},
        "full_size": full_size,
        "partial": full_size > unit_scores["n"],
        **{
            name: np.add.reduceat(cols[column], starts).astype(np.int64)
            for name, column in COUNTED_CAUSES.items()
        },
    }
    categories = sorted(set(bench_cat.tolist()), key=category_sort_key)
    cat_rank = np.array([categories.index(c) for c in bench_cat.tolist()], dtype=np.int64)
    name_rank = np.argsort(np.argsort(bench_name.astype(str), kind="stable"), kind="stable")
    order = np.lexsort((out["seed"], name_rank[b_row], cat_rank[b_row], out["pair_id"]))
    return {
        name: (
            None
            if v is None
            else np.asarray(v, dtype=object)[order]
            if isinstance(v, list)
            else v[order]
        )
        for name, v in out.items()
    }


def benchmark_records(
    store: Store,
    pair_id: int | None = None,
    *,
    pair_ids: list[int] | None = None,
    exclude: int = 0,
    scores: int | None = None,
) -> list[dict]:
    """One record per (pair, benchmark, seed), for every pair, just ``pair_id``, or ``pair_ids``;
    ``exclude``: the bits of the causes whose samples are left out of every count; ``scores``: a
    score set's id, whose grades are counted instead of the harness's.

    Built column by column: each column becomes one Python list (NaN/-1 sentinels -> None), and
    the records are zipped from those lists (no per-value Arrow or numpy scalar conversion).
    """
    cols = _benchmark_columns(store, pair_id, pair_ids, exclude, scores)
    if not cols:
        return []
    n_01, n_10 = np.asarray(cols["n_01"]), np.asarray(cols["n_10"])
    cols["mcnemar_p"] = np.asarray(metrics.mcnemar_exact(n_01, n_10), np.float64)
    cols.update(significance.benchmark_columns(cols))  # the family: every record returned here

    def column(name: str, values) -> list:
        if isinstance(values, np.ndarray):
            values = values.tolist()
        elif not isinstance(values, list):
            values = list(values)
        if name == "num_choices":  # -1: generative or mixed
            return [None if v < 0 else v for v in values]
        if name in ("noise_floor", *DERIVED):  # NaN: no seed-vs-seed counts, or F_max = 0
            return [None if v != v else v for v in values]
        if name == "full_size":  # NaN: not known
            return [None if v != v else int(v) for v in values]
        return values

    return _records_from_columns(
        tuple(cols), [column(name, values) for name, values in cols.items()]
    )


def _records_from_columns(names: tuple[str, ...], lists: list[list]) -> list[dict]:
    # thousands of new dicts: the cyclic GC would scan the heap several times while they are built
    # (nothing here can form a cycle), which made this step vary from 25 to 60 ms
    enabled = gc.isenabled()
    gc.disable()
    try:
        return list(map(dict, map(zip, repeat(names), zip(*lists, strict=True))))
    finally:
        if enabled:
            gc.enable()


def category_records_for(
    conn,
    pair_ids: list[int] | None,
    aggregate: str = "macro",
    exclude: int = 0,
    scores: int | None = None,
) -> list[dict]:
    """Category-level records of the given pairs (None: all), by pair then category (the paper's
    order, "Total" last). Integer ids and codes all the way: names are attached per output row.
    ``exclude``: the bits of the causes whose samples are left out of every count; ``scores``: a
    score set's id, whose grades are counted instead of the harness's."""
    source = _scored_source(conn, scores, pair_ids)
    counts = queries.unit_counts(conn, pair_ids, exclude=exclude, source=source)
    if row_count(counts) == 0:
        return []
    pairs = queries.pair_names(conn)
    benches = queries.benchmark_names(conn)
    noise = noise_grid(conn, exclude, source)
    cols, starts, unit_scores = _units(counts)
    cross = queries.cross_seed_cells(conn, pair_ids=pair_ids, exclude=exclude, source=source)
    pair_bench_of_row, interval = intervals(cols, cross)
    pair = cols["pair_id"][starts].astype(np.int64)
    bench = cols["benchmark_id"][starts].astype(np.int64)
    # category codes in the map's column order, so that aggregated rows come out in that order
    bench_ids = benches["id"]
    bench_cat = benches["category"].tolist()
    categories = sorted(set(bench_cat), key=category_sort_key)
    code_of = np.full(int(bench_ids.max()) + 1, -1, dtype=np.int64)
    code_of[bench_ids] = [categories.index(c) for c in bench_cat]
    cat = code_of[bench]
    all_pairs = pairs["pair_id"]
    p_row = np.searchsorted(all_pairs, pair)
    base_ids = pairs["base_model_id"].astype(np.int64)
    post_ids = pairs["post_model_id"].astype(np.int64)
    unit_noise = pair_noise(noise, base_ids[p_row], post_ids[p_row], bench)
    agg = metrics.aggregate_columns(
        pair,
        cat,
        bench,
        cols["seed"][starts],
        unit_scores["n"],
        {name: unit_scores[name] for name in metrics.VALUE_FIELDS},
        aggregate,
        outside_total=[i for i, c in enumerate(categories) if c in metrics.OUTSIDE_TOTAL],
    )
    # mean noise floor per (pair, category) and per pair ("Total") over the units that have one
    n_columns = len(categories) + 1  # the last code is "Total"
    uniq = agg["pair"][np.r_[True, agg["pair"][1:] != agg["pair"][:-1]]]
    p_idx = np.searchsorted(uniq, pair)
    has = ~np.isnan(unit_noise)
    size = len(uniq) * n_columns
    total = np.zeros(size)
    count = np.zeros(size)
    # "Total" leaves out the categories that stay out of it (metrics.OUTSIDE_TOTAL)
    in_total_cat = np.array([c not in metrics.OUTSIDE_TOTAL for c in categories], dtype=bool)
    in_total = in_total_cat[cat]
    summed_causes = {
        name: np.add.reduceat(cols[COUNTED_CAUSES[name]], starts).astype(np.float64)
        for name in ("n_10_truncated", *CAUSE_FIELDS)
    }
    cause_total = {name: np.zeros(size) for name in summed_causes}
    for key, counted in (
        (p_idx * n_columns + cat, has),
        (p_idx * n_columns + n_columns - 1, has & in_total),
    ):
        total += np.bincount(key[counted], weights=unit_noise[counted], minlength=size)
        count += np.bincount(key[counted], minlength=size)
    for key, counted in (
        (p_idx * n_columns + cat, slice(None)),
        (p_idx * n_columns + n_columns - 1, in_total),
    ):
        for name, per_unit in summed_causes.items():
            cause_total[name] += np.bincount(
                key[counted], weights=per_unit[counted], minlength=size
            )
    # McNemar per cell on one seed's worth of discordant pairs: each benchmark's mean over its
    # seeds (its seeds share questions: pooling them would count one question several times),
    # summed over the cell's benchmarks (their questions are disjoint)
    unit_pair_bench = pair_bench_of_row[starts]
    per_seed = 1.0 / np.bincount(unit_pair_bench)[unit_pair_bench]
    discordant = {name: np.zeros(size) for name in ("n_01", "n_10")}
    for key, counted in (
        (p_idx * n_columns + cat, slice(None)),
        (p_idx * n_columns + n_columns - 1, in_total),
    ):
        for name, total_d in discordant.items():
            total_d += np.bincount(
                key[counted], weights=(unit_scores[name] * per_seed)[counted], minlength=size
            )
    row_code = np.array(
        [n_columns - 1 if c is None else c for c in agg["category"]], dtype=np.int64
    )
    row_key = np.searchsorted(uniq, agg["pair"]) * n_columns + row_code
    with np.errstate(invalid="ignore", divide="ignore"):
        row_noise = np.where(count[row_key] > 0, total[row_key] / count[row_key], np.nan)
    # per (pair, benchmark): n, half-widths, full size; summed and combined per output row
    first = np.unique(pair_bench_of_row, return_index=True)[1]
    pair_bench_benchmark = cols["benchmark_id"][first].astype(np.int64)
    pair_bench_key = (
        np.searchsorted(uniq, cols["pair_id"][first]) * n_columns + code_of[pair_bench_benchmark]
    )
    pair_bench_total = pair_bench_key - code_of[pair_bench_benchmark] + n_columns - 1
    pair_bench_in_total = in_total_cat[code_of[pair_bench_benchmark]]
    halves = combined_half_widths(
        pair_bench_key,
        pair_bench_total,
        pair_bench_in_total,
        interval["n"],
        {name: interval[f"{name}_true_half_width"] for name in ("f", "bt")},
        aggregate,
        size,
        n_columns,
    )
    full_of = full_size_by_id(benches)
    unpaired = unpaired_of(conn, pair_ids, cols["pair_id"][first], pair_bench_benchmark)
    pair_bench_known = full_or_seen(full_of[pair_bench_benchmark], interval["n"], unpaired)
    pair_bench_full = np.fmax(pair_bench_known, interval["n"])  # unknown: the paired samples

    def summed(x: np.ndarray) -> np.ndarray:
        at = np.bincount(pair_bench_key, weights=x, minlength=size)
        return (
            at
            + np.bincount(
                pair_bench_total[pair_bench_in_total],
                weights=x[pair_bench_in_total],
                minlength=size,
            )
        )[row_key]

    row_n = summed(interval["n"].astype(np.float64))
    row_full = summed(pair_bench_full)
    row_known = summed((~np.isnan(pair_bench_known)).astype(np.float64)) > 0
    bounds = {}
    for name in ("f", "bt"):
        value, half = agg[f"{name}_true"], halves[name][row_key]
        bounds[f"{name}_true_low"] = np.maximum(value - half, 0.0).tolist()
        bounds[f"{name}_true_high"] = np.minimum(value + half, 1.0).tolist()
    out_row = np.searchsorted(all_pairs, agg["pair"])
    names_of = {
        name: np.asarray(pairs[name], dtype=object)[out_row]
        for name in ("base", "post", "label", "stage")
    }
    labels = np.asarray([*categories, metrics.TOTAL], dtype=object)[row_code]
    single = agg["seeds"] <= 1
    columns = {
        "base": names_of["base"].tolist(),
        "post": names_of["post"].tolist(),
        "category": labels.tolist(),
        "n_benchmarks": agg["n_benchmarks"].tolist(),
        "seeds": agg["seeds"].tolist(),
        "f_true": agg["f_true"].tolist(),
        "f_true_std": nan_to_none(np.where(single, np.nan, agg["f_true_std"])),
        "bt_true": agg["bt_true"].tolist(),
        "bt_true_std": nan_to_none(np.where(single, np.nan, agg["bt_true_std"])),
        "f": agg["f"].tolist(),
        "bt": agg["bt"].tolist(),
        "f_max": agg["f_max"].tolist(),
        "bt_max": agg["bt_max"].tolist(),
        "pair_id": agg["pair"].tolist(),
        "label": names_of["label"].tolist(),
        "stage": names_of["stage"].tolist(),
        "noise_floor": nan_to_none(row_noise),
        **{
            name: nan_to_none(v)
            for name, v in derived_metrics(agg["f_true"], agg["bt_true"], agg["f_max"]).items()
        },
        "n": row_n.astype(np.int64).tolist(),
        **bounds,
        "full_size": [
            int(f) if k else None
            for f, k in zip(row_full.tolist(), row_known.tolist(), strict=True)
        ],
        "partial": (row_known & (row_full > row_n)).tolist(),
        **{name: total[row_key].astype(np.int64).tolist() for name, total in cause_total.items()},
        "mcnemar_p": np.asarray(
            metrics.mcnemar_exact(
                np.rint(discordant["n_01"][row_key]).astype(np.int64),
                np.rint(discordant["n_10"][row_key]).astype(np.int64),
            ),
            np.float64,
        ).tolist(),
    }
    columns.update(significance.category_columns(columns))
    return _records_from_columns(tuple(columns), list(columns.values()))


def _scored_source(conn, scores: int | None, pair_ids: list[int] | None) -> str:
    """Where the counts are read: the stored tables, or (``scores``) a score set's, counted now
    into this connection's temporary tables (``forgetmap.db.scored``)."""
    if scores is None:
        return ""
    scored_counts.build(conn, scores, pair_ids)
    return scored_counts.SCORED
