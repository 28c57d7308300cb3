"""Adaptive evaluation replayed on the demo zoo (app/demo/adaptive.py), and the scaled suite that
gives the demo benchmarks of realistic size (``Recipe.suite_scale``).

The replay's fractions are checked on a case small enough to count by hand; the agreement of the
adaptive map with the full map on the session zoo's real per-sample results (tests/demo/conftest.py
fixtures: no extra build or evaluation)."""

from __future__ import annotations

import numpy as np
import pytest
from forgetmap.analysis.adaptive import StoppingRule, evaluation_order
from forgetmap.core.metrics import TOTAL
from forgetmap.demo import suite
from forgetmap.demo.adaptive import BenchmarkRun, benchmark_runs, replay
from forgetmap.demo.evaluate import load_benchmarks, shots_by_item
from forgetmap.demo.manifest import Recipe
from forgetmap.worker.benchmarks.prompts import select_shots


def test_scaled_suite_grows_every_benchmark_and_keeps_the_default():
    assert suite.benchmarks() == suite.BENCHMARKS
    default = suite.suite_records(0)
    assert {n: len(r) for n, r in default.items()} == {b.name: b.size for b in suite.BENCHMARKS}
    scaled = suite.suite_records(0, scale=3)
    for info in suite.benchmarks(3):
        records = scaled[info.name]
        assert len(records) == 3 * next(b.size for b in suite.BENCHMARKS if b.name == info.name)
        assert len({r["question"] for r in records}) == len(records), info.name
        assert len({r["id"] for r in records}) == len(records), info.name
    assert Recipe().suite_scale == 1
    assert Recipe.from_dict(Recipe(suite_scale=3).as_dict()).suite_scale == 3
    with pytest.raises(ValueError, match="suite scale"):
        Recipe(suite_scale=0)


def test_shots_by_item_is_select_shots_for_every_item():
    items = suite.benchmark_items(0, scale=2)["demo_logic_oldest"]
    for seed in (0, 1, 2):
        fast = shots_by_item(items, 3, seed)
        assert all(fast[it.sample_id] == select_shots(it, items, 3, seed=seed) for it in items)


def _run(base: np.ndarray, posts: dict[str, np.ndarray], tokens: dict[str, float]) -> BenchmarkRun:
    correct = {"base": base[None, :], **{m: c[None, :] for m, c in posts.items()}}
    counts = {m: np.full((1, base.size), tokens[m]) for m in correct}
    return BenchmarkRun("b", "C", np.full(base.size, 2), correct, counts)


def test_replay_counts_samples_and_tokens_by_the_furthest_pair():
    """400 two-option samples, one seed, a base that answers all of them right. Pair "same" never
    flips: its half-widths are 2.7 points at the first look (100 samples), under the 3-point
    target. Pair "flip" gets a random half wrong: F_true's half-width is still 7.8 points at the
    end, so it needs every sample. The base and "flip" are evaluated on 400 samples, "same" on
    100: samples (400 + 100 + 400) / 1200 = 75%; tokens at 1, 5 and 3 per sample:
    (400 * 1 + 100 * 5 + 400 * 3) / (400 + 2000 + 1200) = 2100 / 3600."""
    rng = np.random.default_rng(0)
    base = np.ones(400, dtype=np.int64)
    flip = np.where(rng.random(400) < 0.5, 0, 1)
    run = _run(base, {"same": base.copy(), "flip": flip}, {"base": 1, "same": 5, "flip": 3})
    rule = StoppingRule(target_half_width=0.03, min_samples=100, chunk_size=100)
    result = replay([run], [("base", "same"), ("base", "flip")], rule)
    assert result.stopped == {("same", "b"): 100, ("flip", "b"): 400}
    assert result.evaluated == {("base", "b"): 400, ("same", "b"): 100, ("flip", "b"): 400}
    assert (result.samples_used, result.samples_full) == (900, 1200)
    assert result.samples == pytest.approx(0.75)
    assert (result.tokens_used, result.tokens_full) == (2100, 3600)
    assert result.tokens == pytest.approx(2100 / 3600)
    # "same" stopped early on identical answers: F_true 0 either way; "flip" used every sample
    assert set(result.full) == {("same", "C"), ("same", TOTAL), ("flip", "C"), ("flip", TOTAL)}
    assert result.max_deviation == 0.0
    assert result.full[("flip", "C")]["f_true"] > 0.1


def test_benchmark_runs_put_samples_in_evaluation_order():
    items = suite.benchmark_items(0)["demo_logic_compare"][:5]
    order = evaluation_order("demo_logic_compare", [it.sample_id for it in items])
    position = {sid: i for i, sid in enumerate(order)}
    results = {
        m: {
            ("demo_logic_compare", it.sample_id, s): position[it.sample_id] % 2 == s
            for it in items
            for s in (0, 1)
        }
        for m in ("a", "b")
    }
    tokens = {m: {key: 10 * position[key[1]] + key[2] for key in results[m]} for m in results}
    results["partial"] = {next(iter(results["a"])): True}  # missing samples: left out
    tokens["partial"] = {}
    (run,) = benchmark_runs({"demo_logic_compare": items}, results, tokens, (0, 1))
    assert set(run.correct) == {"a", "b"}
    assert run.correct["a"].tolist() == [[1, 0, 1, 0, 1], [0, 1, 0, 1, 0]]
    assert run.tokens["b"].tolist() == [[0, 10, 20, 30, 40], [1, 11, 21, 31, 41]]
    assert run.k.tolist() == [2] * 5 and run.category == "Logic"


@pytest.mark.slow
def test_adaptive_map_agrees_with_full_map_on_the_demo_zoo(zoo, report):
    """The session zoo's real per-sample results (40-60 samples per benchmark, so the rule looks
    every 10 samples from 20 on and the target is wide): every (pair, category) of the adaptive
    map lies within the target of the full map, while pairs do stop early and save samples."""
    runs = benchmark_runs(load_benchmarks(zoo), report.results, report.tokens, report.seeds)
    pairs = [(p.base, p.post) for p in zoo.pairs]
    rule = StoppingRule(target_half_width=0.25, min_samples=20, chunk_size=10)
    result = replay(runs, pairs, rule)
    assert {post for post, _ in result.full} == {p for _, p in pairs}
    assert {c for _, c in result.full} == {*suite.CATEGORIES, TOTAL}
    for dev, key, name in result.deviations():
        assert dev <= 25.0, (key, name, dev)
    assert any(n < 40 for n in result.stopped.values())
    assert 0.0 < result.samples < 1.0 and 0.0 < result.tokens < 1.0
    assert all(t > 0 for run in runs for counts in run.tokens.values() for t in counts.flat)


def test_replay_evaluates_to_the_end_of_the_round_that_holds_the_stopping_point():
    """As an adaptive job does: identical answers meet a 0.4-point target at the look 200 (the
    reported interval [0, h]: 0.46 points at 150, 0.34 at 200), and the round from 150 reaches
    1.5 x 150 = 225, i.e. the chunk end 250, so 250 samples are evaluated and the adaptive map is
    computed on them; the bench's samples fraction counts the overshoot."""
    base = np.ones(400, dtype=np.int64)
    run = _run(base, {"same": base.copy()}, {"base": 1, "same": 1})
    rule = StoppingRule(target_half_width=0.004, min_samples=100, chunk_size=50)
    result = replay([run], [("base", "same")], rule)
    assert result.stopped == {("same", "b"): 200}
    assert result.evaluated == {("base", "b"): 250, ("same", "b"): 250}
    assert result.samples == pytest.approx(500 / 800)
