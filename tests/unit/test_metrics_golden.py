"""Golden values of the metric core, computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from forgetmap.core import metrics
from forgetmap.core.metrics import Transitions, benchmark_scores, ceiling, chance_term


def test_paper_example_80_to_70_with_10_percent_forgetting():
    # N = 100, 4 options; 80 correct before, 70 after; 10 go 1->0 and none 0->1.
    t = Transitions(n_00=20, n_01=0, n_10=10, n_11=70)
    s = benchmark_scores(t, k=4)
    assert s.acc_pre == pytest.approx(0.8)
    assert s.acc_post == pytest.approx(0.7)
    assert s.f == pytest.approx(0.10)
    # c = (1 - 0.8)(1 - 0.7) / 3 = 0.02
    assert s.f_chance == pytest.approx(0.02)
    assert s.f_true == pytest.approx(0.08)
    assert s.bt == 0.0
    assert s.bt_true == 0.0
    # F_max = (4 * 0.8 - 1) / 3, BT_max = (4 * 0.7 - 1) / 3
    assert s.f_max == pytest.approx(2.2 / 3)
    assert s.bt_max == pytest.approx(1.8 / 3)


def test_two_independent_random_binary_classifiers_exact_counts():
    # Two coin-flip guessers on a 2-option task: a quarter of samples in each cell.
    s = benchmark_scores(Transitions(25, 25, 25, 25), k=2)
    assert s.f == 0.25
    assert s.bt == 0.25
    assert s.f_chance == pytest.approx(0.25)  # (1 - .5)(1 - .5) / 1
    assert s.f_true == 0.0
    assert s.bt_true == 0.0


def test_two_independent_random_binary_classifiers_simulated():
    rng = np.random.default_rng(7)
    n = 200_000
    pre = rng.integers(0, 2, n)
    post = rng.integers(0, 2, n)
    s = benchmark_scores(metrics.count_transitions(pre, post), k=2)
    assert s.f == pytest.approx(0.25, abs=0.005)
    assert s.bt == pytest.approx(0.25, abs=0.005)
    assert s.f_true < 0.005
    assert s.bt_true < 0.005


@pytest.mark.parametrize(
    ("acc", "k", "expected"),
    [
        (0.25, 4, 0.0),  # exactly chance: nothing above guessing to lose
        (0.10, 4, 0.0),  # below chance: clipped at 0, never negative
        (1.0, 4, 1.0),
        (1.0, 2, 1.0),
        (0.5, 2, 0.0),
        (0.75, 2, 0.5),
        (0.6, 5, 0.5),  # (5 * .6 - 1) / 4
        (0.0, 3, 0.0),
        (0.37, None, 0.37),  # generative: the ceiling is the accuracy
        (0.0, None, 0.0),
    ],
)
def test_ceiling_edge_cases(acc, k, expected):
    assert ceiling(acc, k) == pytest.approx(expected)


def test_ceilings_through_benchmark_scores_at_extremes():
    all_right = benchmark_scores(Transitions(0, 0, 0, 10), k=4)
    assert (all_right.f_max, all_right.bt_max) == (1.0, 1.0)
    all_wrong = benchmark_scores(Transitions(10, 0, 0, 0), k=4)
    assert (all_wrong.f_max, all_wrong.bt_max) == (0.0, 0.0)
    # all wrong: both guessers fail everything, so the chance term is 1/(k-1) but F = 0
    assert all_wrong.f_chance == pytest.approx(1 / 3)
    assert all_wrong.f_true == 0.0


def test_generative_benchmark_has_no_chance_term():
    t = Transitions(n_00=50, n_01=10, n_10=15, n_11=25)
    s = benchmark_scores(t, k=None)
    assert s.f_chance == 0.0 and s.bt_chance == 0.0
    assert s.f_true == s.f == pytest.approx(0.15)
    assert s.bt_true == s.bt == pytest.approx(0.10)
    assert s.f_max == pytest.approx(0.40)  # acc_pre
    assert s.bt_max == pytest.approx(0.35)  # acc_post
    assert s.num_choices is None


def test_mixed_k_chance_term_is_per_group_weighted_by_size():
    # 40 two-option questions and 60 four-option questions in one benchmark.
    two = Transitions(n_00=10, n_01=6, n_10=4, n_11=20)  # acc_pre 24/40 = .6, acc_post 26/40 = .65
    four = Transitions(n_00=15, n_01=9, n_10=6, n_11=30)  # acc_pre 36/60 = .6, acc_post 39/60 = .65
    s = benchmark_scores({2: two, 4: four})
    c2 = 0.4 * 0.35 / 1
    c4 = 0.4 * 0.35 / 3
    assert s.f_chance == pytest.approx(0.4 * c2 + 0.6 * c4)  # = .056 + .028 = .084
    assert s.f_chance == pytest.approx(0.084)
    assert s.f == pytest.approx(0.10)
    assert s.f_true == pytest.approx(0.016)
    assert s.bt == pytest.approx(0.15)
    assert s.bt_true == pytest.approx(0.066)
    assert s.f_max == pytest.approx(0.4 * 0.2 + 0.6 * (1.4 / 3))
    assert s.num_choices is None
    assert s.k_groups == {2: 40, 4: 60}
    # Treating the whole benchmark as 4-option (the released code's default) would differ:
    assert benchmark_scores(two + four, k=4).f_chance == pytest.approx(c4)


def test_mixed_k_with_a_generative_group():
    mc = Transitions(n_00=10, n_01=0, n_10=0, n_11=10)  # k = 2: acc .5/.5, c = .25
    gen = Transitions(n_00=10, n_01=0, n_10=10, n_11=0)  # generative: c = 0
    s = benchmark_scores({2: mc, None: gen})
    assert s.f_chance == pytest.approx(0.5 * 0.25)
    assert s.f == pytest.approx(0.25)
    assert s.f_true == pytest.approx(0.125)


def test_chance_term_rejects_bad_k():
    with pytest.raises(ValueError, match="k must be"):
        chance_term(0.5, 0.5, 1)
    with pytest.raises(ValueError, match="k must be"):
        benchmark_scores(Transitions(1, 1, 1, 1), k=0)


def test_count_transitions_and_validation():
    t = metrics.count_transitions([1, 1, 0, 0, 1], [1, 0, 1, 0, 0])
    assert t == Transitions(n_00=1, n_01=1, n_10=2, n_11=1)
    with pytest.raises(ValueError, match="0 or 1"):
        metrics.count_transitions([2], [1])
    with pytest.raises(ValueError, match="aligned"):
        metrics.count_transitions([1, 0], [1])


def test_empty_benchmark_is_an_error():
    with pytest.raises(ValueError, match="no paired samples"):
        benchmark_scores(Transitions(), k=4)


def test_mcnemar_exact_values():
    assert metrics.mcnemar_exact(0, 0) == 1.0
    assert metrics.mcnemar_exact(0, 10) == pytest.approx(2 * 0.5**10)
    assert metrics.mcnemar_exact(10, 0) == pytest.approx(2 * 0.5**10)
    # 3 vs 7: 2 * P[Bin(10, .5) <= 3] = 2 * 176/1024
    assert metrics.mcnemar_exact(3, 7) == pytest.approx(2 * 176 / 1024)
    assert metrics.mcnemar_exact(5, 5) == 1.0
    assert np.allclose(
        metrics.mcnemar_exact(np.array([0, 3]), np.array([10, 7])), [2 * 0.5**10, 2 * 176 / 1024]
    )


def test_bootstrap_ci_brackets_the_estimate_and_narrows_with_n():
    small = Transitions(n_00=20, n_01=5, n_10=10, n_11=65)
    big = Transitions(n_00=2000, n_01=500, n_10=1000, n_11=6500)
    point = benchmark_scores(small, k=4).f_true
    ci_small = metrics.bootstrap_ci(small, k=4, seed=1)["f_true"]
    ci_big = metrics.bootstrap_ci(big, k=4, seed=1)["f_true"]
    assert ci_small.low <= point <= ci_small.high
    assert ci_big.low <= point <= ci_big.high
    assert (ci_big.high - ci_big.low) < (ci_small.high - ci_small.low) / 5


def test_bootstrap_ci_matches_resampling_rows():
    # Resampling the per-sample rows gives the same interval as the multinomial shortcut.
    rng = np.random.default_rng(3)
    pre = rng.random(400) < 0.7
    post = np.where(rng.random(400) < 0.15, ~pre, pre)
    t = metrics.count_transitions(pre.astype(int), post.astype(int))
    shortcut = metrics.bootstrap_ci(t, k=4, n_boot=4000, seed=5)["f_true"]
    draws = []
    for _ in range(4000):
        idx = rng.integers(0, 400, 400)
        draws.append(
            benchmark_scores(
                metrics.count_transitions(pre[idx].astype(int), post[idx].astype(int)), k=4
            ).f_true
        )
    assert shortcut.low == pytest.approx(np.quantile(draws, 0.025), abs=0.006)
    assert shortcut.high == pytest.approx(np.quantile(draws, 0.975), abs=0.006)


def test_noise_floor_of_a_model_against_itself():
    # seeds 0 vs 1: 10 flips each way in 100; seeds 0 vs 2: none
    nf = metrics.noise_floor([Transitions(40, 10, 10, 40), Transitions(50, 0, 0, 50)], k=None)
    assert nf.seed_pairs == 2
    assert nf.f == pytest.approx((0.10 + 0.0) / 2)
    assert metrics.noise_floor([]) is None


def test_scores_from_arrays_matches_scalar_version():
    rows = [
        (2, Transitions(10, 6, 4, 20)),
        (4, Transitions(15, 9, 6, 30)),
        (None, Transitions(5, 1, 2, 3)),
    ]
    s = metrics.scores_from_arrays(
        [t.n_00 for _, t in rows],
        [t.n_01 for _, t in rows],
        [t.n_10 for _, t in rows],
        [t.n_11 for _, t in rows],
        [k or 0 for k, _ in rows],
        [0, 0, 1],
    )
    first = benchmark_scores({2: rows[0][1], 4: rows[1][1]})
    second = benchmark_scores(rows[2][1], k=None)
    for name in (
        "f",
        "bt",
        "f_chance",
        "f_true",
        "bt_true",
        "f_max",
        "bt_max",
        "acc_pre",
        "acc_post",
    ):
        assert s[name][0] == pytest.approx(getattr(first, name))
        assert s[name][1] == pytest.approx(getattr(second, name))


def test_net_transfer_and_relative_forgetting():
    # the paper's example: acc 0.8 -> 0.7 with 10% of samples forgotten, k = 4
    s = benchmark_scores(Transitions(n_00=15, n_01=5, n_10=15, n_11=65), k=4)
    net = metrics.net_transfer(np.array([s.f_true]), np.array([s.bt_true]))
    assert net[0] == pytest.approx(s.bt_true - s.f_true)
    rel = metrics.relative_forgetting([s.f_true, 0.2, 0.0], [s.f_max, 0.0, 0.0])
    assert rel[0] == pytest.approx(s.f_true / s.f_max)
    assert np.isnan(rel[1]) and np.isnan(rel[2])  # a base at chance has nothing to forget
