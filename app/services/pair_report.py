"""One pair in detail: per-benchmark values across seeds, with the map's paired 95% interval, a
bootstrap CI and McNemar p."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from forgetmap.core import metrics
from forgetmap.core.consensus import reliable_flags
from forgetmap.db import queries
from forgetmap.db.store import Store
from forgetmap.services.map import INTERVAL_FIELDS, benchmark_records, category_sort_key

MEAN_FIELDS = ("acc_pre", "acc_post", "f", "bt", "f_chance", "f_true", "bt_true", "f_max", "bt_max")
CELL_FIELDS = ("n_00", "n_01", "n_10", "n_11")
SUM_FIELDS = (
    *CELL_FIELDS,
    "n_10_truncated",
    "n_truncated",
    "n_10_no_answer",
    "n_01_no_answer",
    "n_10_refused",
)


def pair_benchmarks(
    store: Store, pair_id: int, *, n_boot: int = 1000, exclude: int = 0
) -> list[dict]:
    """Per benchmark: means across seeds (as the map reports them), counts summed over seeds, the
    map's paired 95% interval (``f_true_low`` ... ``bt_true_high``: the one the page's table and
    chart show, valid for adaptive runs), ``full_size`` and ``partial``, a 95% bootstrap CI of
    F_true and BT_true (``f_true_ci``, ``bt_true_ci``: samples resampled within each seed, for a
    fixed sample count; docs/metric.md's bootstrap confidence intervals, in the API, the exports and
    the table's hover), and McNemar's exact p on the counts pooled over seeds. ``exclude``: the
    bits of the causes whose samples are left out of all of it
    (``forgetmap.core.answer_status``)."""
    records = benchmark_records(store, pair_id, exclude=exclude)
    with store.read() as conn:
        counts = queries.pair_transitions(conn, pair_id, exclude=exclude).to_pylist()
    groups: dict[str, dict[int, dict]] = defaultdict(lambda: defaultdict(dict))
    for row in counts:
        k = row["k"] or None
        groups[row["benchmark"]][row["seed"]][k] = metrics.Transitions(
            row["n_00"], row["n_01"], row["n_10"], row["n_11"]
        )
    by_benchmark: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_benchmark[r["benchmark"]].append(r)
    out = []
    for name, rows in by_benchmark.items():
        first = rows[0]
        row = {
            "benchmark": name,
            "category": first["category"],
            "seeds": len(rows),
            "n": int(round(np.mean([r["n"] for r in rows]))),
            "num_choices": first["num_choices"],
            "k_mix": first["k_mix"],
        }
        for field in MEAN_FIELDS:
            row[field] = float(np.mean([r[field] for r in rows]))
        for field in SUM_FIELDS:
            row[field] = int(sum(r[field] for r in rows))
        ci = metrics.bootstrap_ci(list(groups[name].values()), n_boot=n_boot, seed=0)
        row["f_true_ci"] = [ci["f_true"].low, ci["f_true"].high]
        row["bt_true_ci"] = [ci["bt_true"].low, ci["bt_true"].high]
        row["f_true_std"] = (
            float(np.std([r["f_true"] for r in rows], ddof=1)) if len(rows) > 1 else None
        )
        row["mcnemar_p"] = metrics.mcnemar_exact(row["n_01"], row["n_10"])
        noise = [r["noise_floor"] for r in rows if r["noise_floor"] is not None]
        row["noise_floor"] = float(np.mean(noise)) if noise else None
        # the paired interval over all seeds (forgetmap.analysis.adaptive) and the benchmark's full
        # size are the same on every seed's record
        for field in (*INTERVAL_FIELDS, "full_size"):
            row[field] = first[field]
        row["partial"] = any(r["partial"] for r in rows)
        row["only_base"] = sum(r["only_base"] for r in rows)
        row["only_post"] = sum(r["only_post"] for r in rows)
        row["mismatched"] = sum(r["mismatched"] for r in rows)
        out.append(row)
    out.sort(key=lambda r: (category_sort_key(r["category"]), r["benchmark"]))
    return out


def quadrants(rows: list[dict]) -> dict[str, int]:
    """Transition counts summed over benchmarks and seeds: the four-quadrant view."""
    return {field: sum(r[field] for r in rows) for field in CELL_FIELDS}


def mark_reliable(samples: list[dict], benchmarks: list[dict]) -> list[dict]:
    """The drill-down's rows, each with ``reliable``: its flip is a reliable change, in a strict
    majority of its benchmark's seeds and beyond the pair's noise floor there
    (``forgetmap.core.consensus.reliable_flags``), and ``seeds_total``. ``benchmarks``: the pair
    page's rows (their ``seeds`` and ``noise_floor``)."""
    of = {b["benchmark"]: b for b in benchmarks}
    total = np.array([of[s["benchmark"]]["seeds"] if s["benchmark"] in of else 0 for s in samples])
    noise = np.array(
        [
            np.nan
            if of.get(s["benchmark"], {}).get("noise_floor") is None
            else of[s["benchmark"]]["noise_floor"]
            for s in samples
        ],
        dtype=np.float64,
    )
    flipped = np.array([len(s["seeds"]) for s in samples], dtype=np.int64)
    flags = reliable_flags(flipped, total, noise) if samples else np.array([], dtype=bool)
    return [
        {**s, "seeds_total": int(t), "reliable": bool(f)}
        for s, t, f in zip(samples, total.tolist(), flags.tolist(), strict=True)
    ]


def expected_flips(
    rows: list[dict],
    transition: str,
    *,
    benchmark: str | None = None,
    category: str | None = None,
) -> dict | None:
    """What a drill-down's flip count is to be read against, per seed, over the benchmarks it
    shows (``rows``: :func:`pair_benchmarks`' records): ``seen``, the flips of ``transition``
    ("10" or "01") the pair made; ``chance``, those two guessers would make
    (``(1 - acc_pre)(1 - acc_post)/(k - 1)`` a sample: the chance term F_true and BT_true take
    away, docs/metric.md); ``noise``, those the models' own seed noise makes (the pair's noise
    floor a sample; None where no benchmark has one). None for 1->1, 0->0 or no benchmark."""
    if transition not in ("10", "01"):
        return None
    chosen = [
        r
        for r in rows
        if (benchmark is None or r["benchmark"] == benchmark)
        and (category is None or r["category"] == category)
    ]
    if not chosen:
        return None
    floors = [r for r in chosen if r["noise_floor"] is not None]
    return {
        "seen": sum(r[f"n_{transition}"] / r["seeds"] for r in chosen),
        "chance": sum(r["f_chance"] * r["n"] for r in chosen),  # c: F's and BT's alike
        "noise": sum(r["noise_floor"] * r["n"] for r in floors) if floors else None,
    }
