"""Agreement across seeds (forgetmap.core.consensus) against hand-computed values and the
release's algorithm (forgetmap.demo.release_consensus, re-implemented as the release writes it)."""

from __future__ import annotations

import numpy as np
import pytest
from forgetmap.core.consensus import TRANSITIONS, consensus, reliable_changes
from forgetmap.core.metrics import chance_term, count_transitions
from forgetmap.demo.release_consensus import adj_two_seed, cross_seed_statistics, task_statistics
from hypothesis import given, settings
from hypothesis import strategies as st

# 3 seeds, 4 samples. Transitions per seed (rows) and sample (columns):
#   seed 0: 1->0  1->1  0->1  0->0
#   seed 1: 1->0  0->1  0->0  1->1
#   seed 2: 1->0  1->1  0->1  0->1
BASE = np.array([[1, 1, 0, 0], [1, 0, 0, 1], [1, 1, 0, 0]], dtype=float)
POST = np.array([[0, 1, 1, 0], [0, 1, 0, 1], [0, 1, 1, 1]], dtype=float)


def test_golden_counts_by_hand():
    # pairs (order 0->0, 0->1, 1->0, 1->1): (0,1) agree on sample 0 only: [0,0,1,0];
    # (0,2) on samples 0, 1, 2: [0,1,1,1]; (1,2) on sample 0: [0,0,1,0]
    c = consensus(BASE, POST, num_choices=4)
    assert c.seeds == 3
    two, three = c.by_k[2], c.by_k[3]
    assert two.combos == 3 and three.combos == 1
    np.testing.assert_allclose(two.mean, [0, 1 / 3, 1, 1 / 3])
    np.testing.assert_allclose(two.var, [0, 2 / 9, 0, 2 / 9])  # 0,1,0: mean 1/3, var 2/9
    np.testing.assert_allclose(three.mean, [0, 0, 1, 0])
    np.testing.assert_allclose(three.var, [0, 0, 0, 0])
    # M = 5/3: f = 1 / (5/3), bt = (1/3) / (5/3)
    assert c.f_consensus == pytest.approx(0.6)
    assert c.bt_consensus == pytest.approx(0.2)
    # acc_pre = (1 + 1/3) / (5/3) = 0.8, acc_post = (1/3 + 1/3) / (5/3) = 0.4,
    # c = 0.2 * 0.6 / 3 = 0.04
    assert c.chance_consensus == pytest.approx(0.04)
    assert c.f_true_consensus == pytest.approx(0.56)
    assert c.bt_true_consensus == pytest.approx(0.16)
    assert two.as_dict()["mean_count_2_seeds_1_0"] == pytest.approx(1.0)
    assert two.as_dict()["num_combos_2_seeds"] == 3


def test_golden_missing_answer_leaves_the_sample_out_of_combinations_with_that_seed():
    post = POST.copy()
    post[1, 0] = np.nan  # seed 1 has no post answer on sample 0
    c = consensus(BASE, post, num_choices=4)
    # (0,1) and (1,2) no longer agree anywhere; (0,2) unchanged: [0,1,1,1]
    np.testing.assert_allclose(c.by_k[2].mean, [0, 1 / 3, 1 / 3, 1 / 3])
    assert c.f_consensus == pytest.approx(1 / 3)
    assert c.bt_consensus == pytest.approx(1 / 3)
    # the same with a mask instead of NaN
    masked = consensus(BASE, POST, missing=np.isnan(post), num_choices=4)
    np.testing.assert_array_equal(masked.by_k[2].mean, c.by_k[2].mean)


def test_generative_has_no_chance_term_and_mixed_options_are_grouped():
    gen = consensus(BASE, POST)
    assert gen.chance_consensus == 0.0
    assert gen.f_true_consensus == gen.f_consensus
    # samples 0..2 agree in pairs; with k=2 on sample 3 only (no agreement there) the chance
    # term is the k=4 group's alone: its table is the whole table
    mixed = consensus(BASE, POST, num_choices=np.array([4, 4, 4, 2]))
    assert mixed.chance_consensus == pytest.approx(0.04)
    # the k=2 group holding sample 2 (m = [0,1/3,0,0]): acc_pre 0, acc_post 1, c_g = 0;
    # the k=4 group (samples 0, 1, 3: m = [0,0,1,1/3]): acc_pre 1 -> c_g = 0
    split = consensus(BASE, POST, num_choices=np.array([4, 4, 2, 4]))
    assert split.chance_consensus == pytest.approx(0.0)


def test_reliable_changes_by_strict_majority():
    r = reliable_changes(BASE, POST)
    np.testing.assert_array_equal(r.seeds_10, [3, 0, 0, 0])
    np.testing.assert_array_equal(r.seeds_01, [0, 1, 2, 1])
    np.testing.assert_array_equal(r.forgotten, [True, False, False, False])
    np.testing.assert_array_equal(r.gained, [False, False, True, False])
    # a missing answer counts against: 2 of 3 still a majority, 1 of 3 is not
    post = POST.copy()
    post[1:, 0] = np.nan
    assert not reliable_changes(BASE, post).forgotten[0]
    post[2, 0] = 0
    assert reliable_changes(BASE, post).forgotten[0]
    # 2 of 4 seeds is no strict majority
    four = reliable_changes(np.vstack([BASE, [0, 0, 0, 0]]), np.vstack([POST, [0, 0, 0, 0]]))
    assert not four.gained[2]
    assert four.forgotten[0]  # 3 of 4
    post4 = np.vstack([POST, [0, 0, 0, 0]])
    post4[2, 0] = 1  # seed 2 now keeps sample 0: 2 of 4 forget it
    two_of_four = reliable_changes(np.vstack([BASE, [0, 0, 0, 0]]), post4)
    assert two_of_four.seeds_10[0] == 2 and not two_of_four.forgotten[0]


def test_fewer_than_two_seeds_and_empty_seeds():
    one = consensus(BASE[:1], POST[:1])
    assert one.by_k == {} and one.f_consensus is None and one.f_true_consensus is None
    base = np.vstack([BASE[:2], [np.nan] * 4])  # a third seed with nothing scored is no seed
    c = consensus(base, POST)
    assert c.seeds == 2 and set(c.by_k) == {2} and c.by_k[2].combos == 1
    # two seeds that never agree: counts of 0, no ratio
    never = consensus(np.array([[1.0], [0.0]]), np.array([[1.0], [1.0]]))
    np.testing.assert_array_equal(never.by_k[2].mean, [0, 0, 0, 0])
    assert never.f_consensus is None


@pytest.mark.parametrize(
    "call",
    [
        lambda: consensus(BASE, POST[:, :3]),
        lambda: consensus(BASE[0], POST[0]),
        lambda: consensus(BASE * 2, POST),
        lambda: consensus(BASE, POST, max_group_size=1),
        lambda: consensus(BASE, POST, num_choices=1),
        lambda: consensus(BASE, POST, num_choices=[4, 4]),
        lambda: consensus(BASE, POST, missing=np.zeros((3, 4))),
        lambda: reliable_changes(BASE[:0], POST[:0]),
    ],
)
def test_invalid_inputs_raise(call):
    with pytest.raises(ValueError):
        call()


def _release(base: np.ndarray, post: np.ndarray, max_group_size: int = 3) -> dict | None:
    """The release's statistics over per-seed lists, NaN as its missing (None) examples."""
    per_seed = {
        s: [
            None if np.isnan(b) or np.isnan(p) else TRANSITIONS[int(2 * b + p)]
            for b, p in zip(base[s], post[s], strict=True)
        ]
        for s in range(base.shape[0])
    }
    return task_statistics(per_seed, max_group_size)


def _assert_same(ours, theirs) -> None:
    assert set(ours.by_k) == set(theirs["by_size"])
    for k, counts in ours.by_k.items():
        stats = theirs["by_size"][k]
        assert counts.combos == stats["num_combos"]
        np.testing.assert_allclose(counts.mean, [stats["mean_counts"][t] for t in TRANSITIONS])
        np.testing.assert_allclose(
            counts.var, [stats["var_counts"][t] for t in TRANSITIONS], atol=1e-9
        )
    f, bt = adj_two_seed(theirs)
    if ours.f_consensus is None:
        assert np.isnan(f) and np.isnan(bt)
    else:
        assert ours.f_consensus == pytest.approx(f)
        assert ours.bt_consensus == pytest.approx(bt)


@st.composite
def seeds_and_samples(draw, missing: bool = False):
    seeds = draw(st.integers(min_value=2, max_value=5))
    samples = draw(st.integers(min_value=1, max_value=30))
    bits = st.lists(st.integers(0, 1), min_size=seeds * samples, max_size=seeds * samples)
    base = np.asarray(draw(bits), dtype=float).reshape(seeds, samples)
    post = np.asarray(draw(bits), dtype=float).reshape(seeds, samples)
    if missing:
        # the same samples missing in every seed: the one case where position and sample
        # alignment coincide
        gone = np.asarray(draw(st.lists(st.booleans(), min_size=samples, max_size=samples)))
        post[:, gone] = np.nan
    return base, post


@settings(max_examples=150, deadline=None)
@given(seeds_and_samples(), st.integers(min_value=2, max_value=4))
def test_equals_the_release_without_missing_values(data, max_group_size):
    base, post = data
    _assert_same(
        consensus(base, post, max_group_size=max_group_size), _release(base, post, max_group_size)
    )


@settings(max_examples=100, deadline=None)
@given(seeds_and_samples(missing=True))
def test_equals_the_release_when_every_seed_misses_the_same_samples(data):
    base, post = data
    theirs = _release(base, post)
    ours = consensus(base, post)
    if theirs is None:  # every sample missing: the release drops the task, we have no seed
        assert ours.by_k == {} and ours.seeds == 0
    else:
        _assert_same(ours, theirs)


def test_differs_from_the_release_where_seeds_miss_different_samples():
    # seed 0 misses sample 0, seed 1 sample 1: the release shifts seed 0's list by one and
    # compares sample 1 of seed 0 with sample 0 of seed 1; by sample only sample 2 is shared
    base = np.array([[1, 1, 0], [1, 1, 0]], dtype=float)
    post = np.array([[np.nan, 0, 0], [0, np.nan, 0]], dtype=float)
    ours = consensus(base, post)
    np.testing.assert_array_equal(ours.by_k[2].mean, [1, 0, 0, 0])
    theirs = _release(base, post)
    assert [theirs["by_size"][2]["mean_counts"][t] for t in TRANSITIONS] == [1, 0, 1, 0]


@settings(max_examples=100, deadline=None)
@given(seeds_and_samples(missing=True))
def test_two_seed_counts_bound_three_seed_counts(data):
    base, post = data
    c = consensus(base, post)
    if 3 in c.by_k:
        assert np.all(c.by_k[2].mean >= c.by_k[3].mean - 1e-12)


@settings(max_examples=100, deadline=None)
@given(seeds_and_samples(), st.integers(min_value=2, max_value=6), st.sampled_from([None, 2, 4]))
def test_identical_seeds_give_the_single_seed_counts(data, seeds, k):
    base, post = data
    single = count_transitions(base[0].astype(int), post[0].astype(int))
    c = consensus(np.tile(base[0], (seeds, 1)), np.tile(post[0], (seeds, 1)), num_choices=k)
    expected = [single.n_00, single.n_01, single.n_10, single.n_11]
    for counts in c.by_k.values():
        np.testing.assert_array_equal(counts.mean, expected)
        np.testing.assert_array_equal(counts.var, 0)
    # and then the ratios are one seed's F, BT and F_true
    n = single.n
    assert c.f_consensus == pytest.approx(single.n_10 / n)
    assert c.bt_consensus == pytest.approx(single.n_01 / n)
    chance = chance_term((single.n_10 + single.n_11) / n, (single.n_01 + single.n_11) / n, k)
    assert c.f_true_consensus == pytest.approx(max(single.n_10 / n - chance, 0.0))
    assert c.bt_true_consensus == pytest.approx(max(single.n_01 / n - chance, 0.0))


def test_release_reimplementation_keeps_its_shortest_list_rule():
    # the release compares a combination over its shortest list: seed 1's extra items are unseen
    stats = cross_seed_statistics({0: ["1->0"], 1: ["1->0", "0->1"]})
    assert stats["by_size"][2]["mean_counts"] == {"0->0": 0, "0->1": 0, "1->0": 1, "1->1": 0}
    assert stats["total_counts"]["0->1"] == 1


def test_beyond_noise_is_the_binomial_tail_at_the_noise_floor():
    """Hand-computed tails: S = 3 seeds at r = 0.3, flipped in 3 -> 0.3^3 = 0.027 (beyond), in 2
    -> 3 * 0.09 * 0.7 + 0.027 = 0.216 (not); S = 1 at r = 0.04 -> 0.04 (beyond), r = 0.06 -> not;
    no noise floor (NaN) -> never."""
    from forgetmap.core.consensus import beyond_noise, reliable_flags

    m = np.array([3, 2, 1, 1, 2])
    s = np.array([3, 3, 1, 1, 2])
    r = np.array([0.3, 0.3, 0.04, 0.06, np.nan])
    assert beyond_noise(m, s, r).tolist() == [True, False, True, False, False]
    # a majority too: 2 of 4 is not one, however quiet the seeds
    assert reliable_flags(
        np.array([2, 3]), np.array([4, 4]), np.array([0.001, 0.001])
    ).tolist() == [
        False,
        True,
    ]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10), st.floats(0.0, 1.0))
def test_beyond_noise_grows_with_the_flips_and_falls_with_the_noise(seeds, rate):
    from forgetmap.core.consensus import beyond_noise

    flips = np.arange(1, seeds + 1)
    marks = beyond_noise(flips, np.full(seeds, seeds), np.full(seeds, rate))
    # once beyond, more flips stay beyond
    assert not (marks[:-1] & ~marks[1:]).any()
    louder = beyond_noise(flips, np.full(seeds, seeds), np.full(seeds, min(rate + 0.1, 1.0)))
    assert not (louder & ~marks).any()
