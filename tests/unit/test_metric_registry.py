"""Every metric the map's records carry, in one registry, held to the metric's invariances.

After scikit-learn's ``sklearn/metrics/tests/test_common.py``: each metric is registered once with
how to compute it from per-sample data (the same functions the map calls) and what it promises
(its range, what swapping base and post turns it into, whether it is a rate), and every test runs
over the whole registry. A field added to the records fails ``test_registry_lists_every_metric``
until it is registered here or named as not a metric.

A unit is one benchmark of one pair: ``pre`` and ``post`` (seeds x samples, 0/1) and each sample's
option count ``k`` (``metrics.GENERATIVE``, 0, for a generative one). Benchmark-level values are
those of seed 0's record; the across-seed ones (noise floor, intervals, std) use every seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pytest
from forgetmap.analysis.adaptive import interval_from_counts
from forgetmap.core import metrics
from forgetmap.services.map import (
    BENCHMARK_EXTRA,
    BENCHMARK_FIELDS,
    CATEGORY_EXTRA,
    CATEGORY_FIELDS,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st


@dataclass(frozen=True)
class Unit:
    pre: np.ndarray  # (seeds, samples) 0/1 under the base model
    post: np.ndarray  # (seeds, samples) 0/1 under the post-trained model
    k: np.ndarray  # (samples,) options shown; 0: generative

    def swapped(self) -> Unit:
        return Unit(self.post, self.pre, self.k)

    def permuted(self, order: np.ndarray) -> Unit:
        return Unit(self.pre[:, order], self.post[:, order], self.k[order])

    def duplicated(self) -> Unit:
        return Unit(np.tile(self.pre, 2), np.tile(self.post, 2), np.tile(self.k, 2))


def _cells(pre: np.ndarray, post: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per k-group of one seed: (k values, counts n_00, n_01, n_10, n_11 as rows)."""
    keys = np.unique(k)
    cell = 2 * pre + post
    counts = np.array([np.bincount(cell[k == g], minlength=4) for g in keys])
    return keys, counts


def _scores(unit: Unit, seed: int) -> dict[str, float]:
    keys, counts = _cells(unit.pre[seed], unit.post[seed], unit.k)
    s = metrics.scores_from_arrays(*counts.T, keys, np.zeros(len(keys), np.int64))
    return {name: value[0].item() for name, value in s.items()}


def _floor(a: np.ndarray, b: np.ndarray, k: np.ndarray) -> float:
    """One model's seed-vs-seed flip rate on the unit (the map's noise floor of one side)."""
    pairs = []
    for s, t in combinations(range(len(a)), 2):
        keys, counts = _cells(a[s], b[t], k)
        pairs.append(
            {
                None if g == metrics.GENERATIVE else int(g): metrics.Transitions(*map(int, c))
                for g, c in zip(keys, counts, strict=True)
            }
        )
    found = metrics.noise_floor(pairs)
    return np.nan if found is None else found.f


def _noise_floor(unit: Unit) -> float:
    """The mean of the base's and the post model's floors (the map's ``noise_floor``)."""
    floors = [_floor(unit.pre, unit.pre, unit.k), _floor(unit.post, unit.post, unit.k)]
    return np.nan if all(np.isnan(floors)) else float(np.nanmean(floors))


def _interval(unit: Unit) -> dict[str, float]:
    """The paired interval over all seeds, from the counts the map stores."""
    seeds = range(len(unit.pre))
    seed_rows: dict[str, list] = {
        "unit": [],
        "seed": [],
        "k": [],
        "n_00": [],
        "n_01": [],
        "n_10": [],
        "n_11": [],
    }
    for s in seeds:
        keys, counts = _cells(unit.pre[s], unit.post[s], unit.k)
        for g, c in zip(keys, counts, strict=True):
            for name, value in zip(
                ("unit", "seed", "k", "n_00", "n_01", "n_10", "n_11"), (0, s, g, *c), strict=True
            ):
                seed_rows[name].append(value)
    cross: dict[str, list] = {"unit": [], "seed_a": [], "seed_b": [], "k": [], "joint": []}
    for a, b in combinations(seeds, 2):
        cell_a = 2 * unit.pre[a] + unit.post[a]
        cell_b = 2 * unit.pre[b] + unit.post[b]
        for g in np.unique(unit.k):
            at = unit.k == g
            joint = np.bincount(4 * cell_a[at] + cell_b[at], minlength=16).reshape(4, 4)
            for name, value in zip(
                ("unit", "seed_a", "seed_b", "k", "joint"), (0, a, b, g, joint), strict=True
            ):
                cross[name].append(value)
    arrays = {name: np.asarray(v) for name, v in seed_rows.items()}
    cross_arrays = {name: np.asarray(v) for name, v in cross.items()}
    if not cross["joint"]:
        cross_arrays["joint"] = np.zeros((0, 4, 4))
    out = interval_from_counts(arrays, cross_arrays, 1)
    return {name: float(out[name][0]) for name in out}


def _across_seeds(unit: Unit, name: str) -> float:
    values = [_scores(unit, s)[name] for s in range(len(unit.pre))]
    return float(np.std(values, ddof=1)) if len(values) > 1 else np.nan


def _seed0(name: str) -> Callable[[Unit], float]:
    return lambda unit: _scores(unit, 0)[name]


@dataclass(frozen=True)
class Metric:
    compute: Callable[[Unit], float]
    swapped: str  # the metric whose value it takes when base and post trade places
    low: float = 0.0
    high: float = 1.0
    negated: bool = False  # swapping base and post negates it (``swapped`` is itself)
    rate: bool = True  # a mean over samples: duplicating every sample leaves it unchanged
    undefined: bool = False  # NaN (None in the records) where it is not defined


RATES = (
    "acc_pre",
    "acc_post",
    "f",
    "bt",
    "f_chance",
    "bt_chance",
    "f_true",
    "bt_true",
    "f_max",
    "bt_max",
)
SWAP = {
    "acc_pre": "acc_post",
    "f": "bt",
    "f_chance": "bt_chance",
    "f_true": "bt_true",
    "f_max": "bt_max",
}
SWAP |= {b: a for a, b in SWAP.items()}

REGISTRY: dict[str, Metric] = {
    **{name: Metric(_seed0(name), SWAP[name]) for name in RATES},
    "net": Metric(
        lambda u: float(metrics.net_transfer(_scores(u, 0)["f_true"], _scores(u, 0)["bt_true"])),
        "net",
        low=-1.0,
        negated=True,
    ),
    # F_true / F_max: no BT counterpart in the records; above 1 where F_true > F_max (see
    # test_f_true_can_exceed_f_max), NaN where the base is at or below chance
    "f_rel": Metric(
        lambda u: float(
            metrics.relative_forgetting(_scores(u, 0)["f_true"], _scores(u, 0)["f_max"])
        ),
        "",
        high=np.inf,
        undefined=True,
    ),
    "mcnemar_p": Metric(
        lambda u: float(metrics.mcnemar_exact(_scores(u, 0)["n_01"], _scores(u, 0)["n_10"])),
        "mcnemar_p",
        rate=False,
    ),
    "noise_floor": Metric(_noise_floor, "noise_floor", undefined=True),
    **{
        f"{name}_std": Metric(
            lambda u, n=name: _across_seeds(u, n), f"{SWAP[name]}_std", undefined=True
        )
        for name in ("f_true", "bt_true")
    },
    **{
        f"{name}_{end}": Metric(
            lambda u, n=f"{name}_{end}": _interval(u)[n],
            f"{SWAP[name]}_{end}",
            rate=False,
            undefined=True,
        )
        for name in ("f_true", "bt_true")
        for end in ("low", "high")
    },
}

NOT_METRICS = {
    # who and what: the pair, benchmark, column and seed a record is about
    "base",
    "post",
    "label",
    "stage",
    "pair_id",
    "benchmark",
    "category",
    "seed",
    "num_choices",
    "k_mix",
    # how much was counted: sample and transition counts, coverage and truncation
    "n",
    "n_00",
    "n_01",
    "n_10",
    "n_11",
    "only_base",
    "only_post",
    "mismatched",
    "full_size",
    "partial",
    "n_10_truncated",
    "n_truncated",
    "n_10_no_answer",
    "n_01_no_answer",
    "n_10_refused",
    "n_benchmarks",
    "seeds",
    # whether a cell survives: verdicts on the metrics, not metrics to colour by
    "p_adjusted",
    "significant",
    "below_noise",
}


def test_registry_lists_every_metric():
    fields = set(BENCHMARK_FIELDS + BENCHMARK_EXTRA + CATEGORY_FIELDS + CATEGORY_EXTRA)
    assert fields - NOT_METRICS == set(REGISTRY), "register the new field or name it a non-metric"
    assert not NOT_METRICS & set(REGISTRY)
    for name, metric in REGISTRY.items():
        assert metric.swapped in (*REGISTRY, ""), name
        if metric.swapped:
            assert REGISTRY[metric.swapped].swapped == name  # swapping twice is the identity


@st.composite
def units(draw, min_seeds: int = 1) -> Unit:
    seeds = draw(st.integers(min_seeds, 3))
    size = draw(st.integers(1, 30))
    k = np.array(draw(st.lists(st.sampled_from([0, 2, 3, 4, 5]), min_size=size, max_size=size)))
    cells = st.lists(st.integers(0, 1), min_size=seeds * size, max_size=seeds * size)
    pre = np.array(draw(cells)).reshape(seeds, size)
    post = np.array(draw(cells)).reshape(seeds, size)
    return Unit(pre, post, k)


def _same(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, abs=1e-12)


names = st.sampled_from(sorted(REGISTRY))


@settings(max_examples=300)
@given(units(), names)
def test_values_lie_in_their_range(unit, name):
    metric = REGISTRY[name]
    value = metric.compute(unit)
    if np.isnan(value):
        assert metric.undefined, f"{name} is NaN"
        return
    assert metric.low - 1e-12 <= value <= metric.high + 1e-12


@settings(max_examples=300)
@given(units(), names)
def test_swapping_base_and_post_swaps_the_metric_with_its_partner(unit, name):
    metric = REGISTRY[name]
    assume(metric.swapped)
    expected = REGISTRY[metric.swapped].compute(unit)
    got = metric.compute(unit.swapped())
    assert _same(got, -expected if metric.negated else expected)


@settings(max_examples=200)
@given(units(), names, st.randoms(use_true_random=False))
def test_permuting_samples_changes_nothing(unit, name, random):
    order = np.arange(unit.k.size)
    random.shuffle(order)
    assert _same(REGISTRY[name].compute(unit.permuted(order)), REGISTRY[name].compute(unit))


@settings(max_examples=200)
@given(units(), st.sampled_from(sorted(n for n, m in REGISTRY.items() if m.rate)))
def test_duplicating_every_sample_leaves_rates_unchanged(unit, name):
    assert _same(REGISTRY[name].compute(unit.duplicated()), REGISTRY[name].compute(unit))


@settings(max_examples=300)
@given(units())
def test_relations_that_hold_between_the_metrics(unit):
    v = {name: REGISTRY[name].compute(unit) for name in RATES}
    eps = 1e-12
    assert v["f_true"] <= v["f"] + eps and v["bt_true"] <= v["bt"] + eps
    assert v["f_chance"] == v["bt_chance"]  # one chance term for both directions
    # a flip needs a correct answer on its side and a wrong one on the other
    assert v["f"] <= min(v["acc_pre"], 1 - v["acc_post"]) + eps
    assert v["bt"] <= min(v["acc_post"], 1 - v["acc_pre"]) + eps
    assert v["acc_post"] == pytest.approx(v["acc_pre"] - v["f"] + v["bt"], abs=eps)
    # a ceiling never exceeds the accuracy it is taken of (equal for generative samples)
    assert v["f_max"] <= v["acc_pre"] + eps and v["bt_max"] <= v["acc_post"] + eps
    if (unit.k == metrics.GENERATIVE).all():
        assert v["f_chance"] == 0.0 and v["f_true"] == v["f"] and v["f_max"] == v["acc_pre"]
    net = REGISTRY["net"].compute(unit)
    assert net == pytest.approx(v["bt_true"] - v["f_true"], abs=eps)


@settings(max_examples=200)
@given(units(min_seeds=2))
def test_the_interval_brackets_the_mean_over_seeds(unit):
    seeds = range(len(unit.pre))
    for name in ("f_true", "bt_true"):
        mean = float(np.mean([_scores(unit, s)[name] for s in seeds]))
        low, high = REGISTRY[f"{name}_low"].compute(unit), REGISTRY[f"{name}_high"].compute(unit)
        assert low - 1e-12 <= mean <= high + 1e-12


def test_f_true_can_exceed_f_max():
    # Not a relation to assert: half the samples right before, and post-training swaps every
    # answer (4 options). F = .5, c = .5 * .5 / 3, F_true = .4167 > F_max = (4 * .5 - 1) / 3.
    unit = Unit(np.array([[1, 1, 0, 0]]), np.array([[0, 0, 1, 1]]), np.array([4, 4, 4, 4]))
    v = {name: REGISTRY[name].compute(unit) for name in ("f_true", "f_max", "f_rel")}
    assert v["f_true"] == pytest.approx(0.5 - 0.25 / 3)
    assert v["f_max"] == pytest.approx(1 / 3)
    assert v["f_rel"] > 1.0


@settings(max_examples=100)
@given(st.lists(units(), min_size=1, max_size=4), st.sampled_from(metrics.AGGREGATES))
def test_category_and_total_values_keep_the_invariances(benchmarks, how):
    """The category level aggregates the benchmark values (``metrics.aggregate_columns``): swapping
    base and post swaps its columns too, and duplicating every sample changes none."""
    seeds = min(len(b.pre) for b in benchmarks)
    benchmarks = [Unit(b.pre[:seeds], b.post[:seeds], b.k) for b in benchmarks]

    def aggregate(units_: list[Unit]) -> dict[str, np.ndarray]:
        rows = [(i, s, _scores(u, s)) for i, u in enumerate(units_) for s in range(seeds)]
        return metrics.aggregate_columns(
            np.zeros(len(rows), np.int64),
            np.array([f"c{i % 2}" for i, _, _ in rows]),
            np.array([i for i, _, _ in rows]),
            np.array([s for _, s, _ in rows]),
            np.array([r["n"] for _, _, r in rows]),
            {name: np.array([r[name] for _, _, r in rows]) for name in metrics.VALUE_FIELDS},
            how,
        )

    plain = aggregate(benchmarks)
    swapped = aggregate([b.swapped() for b in benchmarks])
    doubled = aggregate([b.duplicated() for b in benchmarks])
    for name in (*metrics.VALUE_FIELDS, "f_true_std", "bt_true_std"):
        partner = REGISTRY[name].swapped
        for i in range(len(plain["pair"])):
            assert _same(swapped[partner][i], plain[name][i]), name
            assert _same(doubled[name][i], plain[name][i]), name
            if not np.isnan(plain[name][i]):
                assert 0.0 <= plain[name][i] <= 1.0 + 1e-12
