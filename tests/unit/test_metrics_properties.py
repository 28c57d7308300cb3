"""Property tests of the metric core (hypothesis)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from forgetmap.core import metrics
from forgetmap.core.metrics import OUTSIDE_TOTAL, TOTAL, VALUE_FIELDS, Transitions, benchmark_scores
from hypothesis import given, settings
from hypothesis import strategies as st

counts = st.integers(min_value=0, max_value=500)
ks = st.one_of(st.none(), st.integers(min_value=2, max_value=20))


@st.composite
def transitions(draw) -> Transitions:
    t = Transitions(draw(counts), draw(counts), draw(counts), draw(counts))
    if t.n == 0:
        t = Transitions(n_00=1)
    return t


@st.composite
def k_groups(draw) -> dict:
    keys = draw(st.lists(ks, min_size=1, max_size=4, unique=True))
    return {k: draw(transitions()) for k in keys}


@given(k_groups())
def test_f_true_between_zero_and_f(groups):
    s = benchmark_scores(groups)
    assert 0.0 <= s.f_true <= s.f + 1e-15
    assert 0.0 <= s.bt_true <= s.bt + 1e-15


@given(k_groups())
def test_swapping_pre_and_post_swaps_f_with_bt(groups):
    s = benchmark_scores(groups)
    w = benchmark_scores({k: t.swapped() for k, t in groups.items()})
    assert w.f == pytest.approx(s.bt)
    assert w.bt == pytest.approx(s.f)
    assert w.f_true == pytest.approx(s.bt_true)
    assert w.bt_true == pytest.approx(s.f_true)
    assert w.f_max == pytest.approx(s.bt_max)
    assert w.acc_pre == pytest.approx(s.acc_post)


@given(k_groups())
def test_f_plus_bt_at_most_one_and_fractions_in_range(groups):
    s = benchmark_scores(groups)
    assert s.f + s.bt <= 1.0 + 1e-12
    for name in (
        "acc_pre",
        "acc_post",
        "f",
        "bt",
        "f_chance",
        "f_true",
        "bt_true",
        "f_max",
        "bt_max",
    ):
        assert 0.0 <= getattr(s, name) <= 1.0 + 1e-12, name
    assert s.n_00 + s.n_01 + s.n_10 + s.n_11 == s.n


@given(k_groups())
def test_vectorized_scores_equal_scalar_scores(groups):
    keys = list(groups)
    v = metrics.scores_from_arrays(
        [groups[k].n_00 for k in keys],
        [groups[k].n_01 for k in keys],
        [groups[k].n_10 for k in keys],
        [groups[k].n_11 for k in keys],
        [k or 0 for k in keys],
        [0] * len(keys),
    )
    s = benchmark_scores(groups)
    for name in ("f", "bt", "f_chance", "f_true", "bt_true", "f_max", "bt_max"):
        assert v[name][0] == pytest.approx(getattr(s, name), abs=1e-12)


def _unit(pair, bench, cat, seed, s, n=None) -> dict:
    """One (pair, benchmark, seed) result: what the map aggregates."""
    return {
        "pair": pair,
        "benchmark": bench,
        "category": cat,
        "seed": seed,
        "n": n or s.n,
        **{name: getattr(s, name) for name in VALUE_FIELDS},
    }


def _aggregate(units: list[dict], how: str = "macro") -> list[dict]:
    return metrics.aggregate_arrays(
        np.array([u["pair"] for u in units]),
        np.array([u["category"] for u in units]),
        np.array([u["benchmark"] for u in units]),
        np.array([u["seed"] for u in units]),
        np.array([u["n"] for u in units]),
        {name: np.array([u[name] for u in units]) for name in VALUE_FIELDS},
        how,
    )


def _reference_aggregate(units: list[dict], how: str) -> dict[tuple, dict]:
    """The paper's aggregation written plainly, the oracle of the vectorized one: per (pair,
    category, seed) the mean of the benchmark values (micro: weighted by n), Total per seed the
    mean over categories (micro: over all benchmarks), then mean and std (ddof=1) across seeds."""
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for u in units:
        cells[(u["pair"], u["category"], u["seed"])].append(u)

    def mean_of(rows: list[dict], name: str) -> float:
        weights = [r["n"] if how == "micro" else 1.0 for r in rows]
        return float(np.average([r[name] for r in rows], weights=weights))

    per_seed: dict[tuple, dict[int, dict]] = defaultdict(dict)
    benchmarks: dict[tuple, set] = defaultdict(set)
    by_pair_seed: dict[tuple, list[dict]] = defaultdict(list)
    for (pair, category, seed), rows in cells.items():
        per_seed[(pair, category)][seed] = {name: mean_of(rows, name) for name in VALUE_FIELDS}
        benchmarks[(pair, category)] |= {r["benchmark"] for r in rows}
        by_pair_seed[(pair, seed)] += rows
    for (pair, seed), rows in by_pair_seed.items():
        rows = [r for r in rows if r["category"] not in OUTSIDE_TOTAL]
        if not rows:
            continue
        if how == "micro":
            values = {name: mean_of(rows, name) for name in VALUE_FIELDS}
        else:
            cats = [per_seed[(pair, c)][seed] for c in {r["category"] for r in rows}]
            values = {name: float(np.mean([c[name] for c in cats])) for name in VALUE_FIELDS}
        per_seed[(pair, TOTAL)][seed] = values
        benchmarks[(pair, TOTAL)] |= {r["benchmark"] for r in rows}
    out = {}
    for key, seeds in per_seed.items():
        ordered = [seeds[s] for s in sorted(seeds)]
        row = {name: float(np.mean([v[name] for v in ordered])) for name in VALUE_FIELDS}
        for name in ("f_true", "bt_true"):
            values = [v[name] for v in ordered]
            row[f"{name}_std"] = float(np.std(values, ddof=1)) if len(values) > 1 else None
        out[key] = {**row, "n_benchmarks": len(benchmarks[key]), "seeds": len(ordered)}
    return out


@given(transitions(), ks, st.sampled_from(["macro", "micro"]))
def test_macro_of_one_benchmark_equals_the_benchmark_value(t, k, how):
    s = benchmark_scores(t, k)
    out = _aggregate([_unit("p", "b", "Math", 0, s)], how=how)
    by_cat = {c["category"]: c for c in out}
    for cat in ("Math", TOTAL):
        c = by_cat[cat]
        assert c["f_true"] == pytest.approx(s.f_true)
        assert c["bt_true"] == pytest.approx(s.bt_true)
        assert c["f_max"] == pytest.approx(s.f_max)
        assert c["f_true_std"] is None and c["seeds"] == 1 and c["n_benchmarks"] == 1


@given(st.lists(transitions(), min_size=2, max_size=5))
def test_macro_mean_and_std_across_seeds(per_seed):
    scores = [benchmark_scores(t, 4) for t in per_seed]
    out = _aggregate([_unit("p", "b", "Logic", seed, s) for seed, s in enumerate(scores)])
    logic = next(c for c in out if c["category"] == "Logic")
    values = [s.f_true for s in scores]
    assert logic["seeds"] == len(per_seed)
    assert logic["f_true"] == pytest.approx(np.mean(values))
    assert logic["f_true_std"] == pytest.approx(np.std(values, ddof=1))


def test_macro_is_unweighted_and_micro_is_sample_weighted():
    big = benchmark_scores(Transitions(0, 0, 90, 10), None)  # f_true .9, n 100
    small = benchmark_scores(Transitions(0, 0, 0, 10), None)  # f_true 0, n 10
    units = [_unit("p", "big", "Math", 0, big), _unit("p", "small", "Math", 0, small)]
    macro = {c["category"]: c for c in _aggregate(units, "macro")}
    micro = {c["category"]: c for c in _aggregate(units, "micro")}
    assert macro["Math"]["f_true"] == pytest.approx(0.45)
    assert micro["Math"]["f_true"] == pytest.approx(90 / 110)


def test_total_is_the_mean_over_categories_not_over_benchmarks():
    a = benchmark_scores(Transitions(0, 0, 10, 0), None)  # f_true 1
    b = benchmark_scores(Transitions(0, 0, 0, 10), None)  # f_true 0
    units = [
        _unit("p", "m1", "Math", 0, a),
        _unit("p", "m2", "Math", 0, a),
        _unit("p", "l1", "Logic", 0, b),
    ]
    total = next(c for c in _aggregate(units) if c["category"] == TOTAL)
    assert total["f_true"] == pytest.approx(0.5)  # (mean(Math)=1 + mean(Logic)=0) / 2, not 2/3
    assert total["n_benchmarks"] == 3


@settings(max_examples=30)
@given(st.lists(transitions(), min_size=1, max_size=4))
def test_noise_floor_is_symmetric_in_seed_order(pairs):
    forward = metrics.noise_floor(pairs, k=4)
    backward = metrics.noise_floor([t.swapped() for t in pairs], k=4)
    assert forward.f == pytest.approx(backward.f)
    assert forward.f_true == pytest.approx(backward.f_true)


def test_aggregate_rejects_unknown_mode():
    with pytest.raises(ValueError, match="macro"):
        _aggregate([], how="median")


@settings(max_examples=60)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2),
            st.sampled_from(["Math", "Logic", "Culture"]),
            st.integers(0, 4),
            st.integers(0, 2),
            transitions(),
        ),
        min_size=1,
        max_size=25,
        unique_by=lambda t: (t[0], t[2], t[3]),
    ),
    st.sampled_from(["macro", "micro"]),
)
def test_vectorized_aggregate_equals_the_plain_definition(rows, how):
    # benchmark b always has one category: derive it from the benchmark index
    cats = ["Math", "Logic", "Culture"]
    units = []
    for pair, _, bench, seed, t in rows:
        s = benchmark_scores(t, 4)
        units.append(_unit(pair, f"b{bench}", cats[bench % 3], seed, s))
    expected = _reference_aggregate(units, how)
    got = _aggregate(units, how)
    assert len(got) == len(expected)
    for row in got:
        e = expected[(row["pair"], row["category"])]
        assert (row["n_benchmarks"], row["seeds"]) == (e["n_benchmarks"], e["seeds"])
        for name in VALUE_FIELDS:
            assert row[name] == pytest.approx(e[name], abs=1e-12), name
        for name in ("f_true_std", "bt_true_std"):
            if e[name] is None:
                assert row[name] is None
            else:
                assert row[name] == pytest.approx(e[name], abs=1e-12)


@given(st.lists(st.integers(0, 5_000), max_size=300), st.integers(0, 200_000))
@settings(max_examples=200, deadline=None)
def test_distinct_below_is_np_unique_with_a_table_or_a_sort(keys, extra):
    keys = np.asarray(keys, dtype=np.int64)
    space = 5_001 + extra  # a presence table up to 16 keys' space per key, a sort past it
    assert np.array_equal(metrics.distinct_below(keys, space), np.unique(keys))
