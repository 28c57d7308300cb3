"""Simulated benchmarks with known F_true / BT_true, for the coverage of
forgetmap.analysis.adaptive's interval.

Used by tests/unit/test_adaptive.py (asserts the coverage) and bench/adaptive.py (prints it).

Each benchmark has a pool of item types: a difficulty d, a per-item change e of the post model,
and an option count k (2..10, one benchmark in ten mixing two counts, one in six generative).
One benchmark in five is "greedy": each item type's answers are drawn once (one uniform for both
models) and repeated under every seed, so the seeds agree completely and flips can be rare.
Per seed, given the item, ``pre ~ Bernoulli(g + (1 - g) sigmoid(skill_pre - d))`` and ``post ~
Bernoulli(g + (1 - g) sigmoid(skill_pre + delta - d + e))`` with g = 1/k (0 for generative
items); with a probability drawn per benchmark ("coupling") the post answer reuses the pre
answer's uniform draw, so the two models agree more than independent draws would: the seeds of
an item agree more than chance, and so do the two models. The
benchmark's samples are drawn from the pool with replacement, so its population is the pool and
the true F_true / BT_true are exact: the metric (``forgetmap.core.metrics.scores_from_arrays``)
applied to the pool's expected transition rates. Skills, delta and the spread of e are drawn per
benchmark so flip rates range from ~0 (nothing forgotten) to tens of points, accuracies from chance
to ~1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from forgetmap.analysis.adaptive import StoppingRule, prefix_intervals, run_stopping_rule
from forgetmap.core.metrics import scores_from_arrays
from forgetmap.services.rounds import look, rounds_until

SIZES = (100, 300, 1000, 3000, 6000)
POOL = 400
SEEDS = 3


@dataclass(frozen=True)
class SimulatedBenchmark:
    pre: np.ndarray  # (seeds, samples) 0/1, already in evaluation order
    post: np.ndarray
    k: np.ndarray  # (samples,), 0 = generative
    f_true: float  # the truth (population value)
    bt_true: float


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def simulate_benchmark(rng: np.random.Generator, n: int | None = None) -> SimulatedBenchmark:
    n = int(rng.choice(SIZES)) if n is None else n
    kind = rng.random()
    if kind < 1 / 6:
        options = np.zeros(POOL, dtype=np.int64)
    elif kind < 1 / 6 + 0.1:
        options = rng.choice(rng.choice([2, 3, 4, 5], size=2, replace=False), size=POOL)
    else:
        options = np.full(POOL, rng.choice([2, 3, 4, 5, 10]), dtype=np.int64)
    guess = np.where(options == 0, 0.0, 1.0 / np.maximum(options, 1))
    difficulty = rng.normal(0.0, rng.uniform(1.0, 4.0), POOL)
    skill = rng.uniform(-1.5, 3.0)
    delta = rng.normal(0.0, 0.6)
    change = rng.normal(0.0, rng.uniform(0.0, 1.2) ** 2, POOL)
    p_pre = guess + (1 - guess) * _sigmoid(skill - difficulty)
    p_post = guess + (1 - guess) * _sigmoid(skill + delta - difficulty + change)
    coupling = rng.uniform()  # chance that a seed's post answer reuses its pre answer's draw
    if rng.random() < 0.2:  # greedy decoding: one draw per item, the same answers under every seed
        u = rng.random(POOL)
        p_pre, p_post = (u < p_pre).astype(np.float64), (u < p_post).astype(np.float64)

    # truth: the metric on the pool's expected transition rates (scaled: counts are cast to int)
    both = np.minimum(p_pre, p_post)
    cells_per_item = (
        coupling * (1 - np.maximum(p_pre, p_post)) + (1 - coupling) * (1 - p_pre) * (1 - p_post),
        coupling * (p_post - both) + (1 - coupling) * (1 - p_pre) * p_post,
        coupling * (p_pre - both) + (1 - coupling) * p_pre * (1 - p_post),
        coupling * both + (1 - coupling) * p_pre * p_post,
    )
    scale = 1e9 / POOL
    keys, group = np.unique(options, return_inverse=True)
    cells = [np.bincount(group, weights=w * scale, minlength=keys.size) for w in cells_per_item]
    n_00, n_01, n_10, n_11 = cells
    truth = scores_from_arrays(n_00, n_01, n_10, n_11, keys, np.zeros(keys.size, dtype=np.int64))

    items = rng.integers(0, POOL, n)
    u_pre = rng.random((SEEDS, n))
    u_post = np.where(rng.random((SEEDS, n)) < coupling, u_pre, rng.random((SEEDS, n)))
    pre = (u_pre < p_pre[items]).astype(np.int8)
    post = (u_post < p_post[items]).astype(np.int8)
    return SimulatedBenchmark(
        pre, post, options[items], float(truth["f_true"][0]), float(truth["bt_true"][0])
    )


@dataclass(frozen=True)
class Coverage:
    """Shares of simulated benchmarks whose interval holds the truth (F_true and BT_true each):
    at the stopping point; among the benchmarks stopped early only; reported at the end of the
    round that holds the stopping point (what a job evaluates, forgetmap.services.rounds); and after
    a continuation (stopped at twice the target, then continued to the target, as a later job
    does)."""

    benchmarks: int
    f_true: float  # share of benchmarks whose F_true interval at the stopping point holds the truth
    bt_true: float
    both: float
    samples_used: float  # share of all samples the rule used
    stopped_early: float  # share of benchmarks stopped before their last sample
    early: float  # the lower of the F_true and BT_true shares among benchmarks stopped early
    round_end: float  # the lower share, the interval taken at the stopping round's end
    continued: float  # the lower share after a continuation from twice the target

    @property
    def worst(self) -> float:
        return min(self.f_true, self.bt_true)


def _covers(interval: dict, bench: SimulatedBenchmark, at: int = 0) -> tuple[bool, bool]:
    return tuple(  # type: ignore[return-value]
        bool(
            interval[f"{name}_true_low"][at]
            <= getattr(bench, f"{name}_true")
            <= interval[f"{name}_true_high"][at]
        )
        for name in ("f", "bt")
    )


def _continued_stop(bench: SimulatedBenchmark, rule: StoppingRule) -> int:
    """Where a later job with ``rule`` ends when an earlier one stopped the benchmark at twice
    its target: the earlier job's rounds (``rounds_until``), then the later job's looks and
    rounds on that stored prefix (``look``), as app/services/jobs.py runs them."""
    loose = replace(rule, target_half_width=min(2 * rule.target_half_width, 0.5))
    n_total = bench.k.size
    first = run_stopping_rule(bench.pre, bench.post, bench.k, loose).n
    n = rounds_until(loose, first, n_total)[1]
    while (
        pair := look(
            rule, "base", "post", bench.pre[:, :n], bench.post[:, :n], bench.k[:n], n_total
        )
    ).stopped is None:
        assert pair.next_end is not None  # not stopped: the next round's end
        n = pair.next_end
    return n


def simulate_coverage(
    benchmarks: int = 1000, rule: StoppingRule | None = None, seed: int = 0
) -> Coverage:
    rule = rule or StoppingRule()
    rng = np.random.default_rng(seed)
    hits = {key: np.zeros(2) for key in ("stop", "early", "round", "continued")}
    both = used = total = early = 0
    for _ in range(benchmarks):
        bench = simulate_benchmark(rng)
        n_total = bench.k.size
        result = run_stopping_rule(bench.pre, bench.post, bench.k, rule)
        in_f = result.f_true_low <= bench.f_true <= result.f_true_high
        in_bt = result.bt_true_low <= bench.bt_true <= result.bt_true_high
        hits["stop"] += (in_f, in_bt)
        both += in_f and in_bt
        used += result.n
        total += n_total
        if result.n < n_total:
            early += 1
            hits["early"] += (in_f, in_bt)
        round_n = rounds_until(rule, result.n, n_total)[1]
        at_round = prefix_intervals(bench.pre, bench.post, bench.k, [round_n], rule.level)
        hits["round"] += _covers(at_round, bench)
        resumed = _continued_stop(bench, rule)
        at_resumed = prefix_intervals(bench.pre, bench.post, bench.k, [resumed], rule.level)
        hits["continued"] += _covers(at_resumed, bench)
    share = {key: value / benchmarks for key, value in hits.items()}
    return Coverage(
        benchmarks,
        f_true=float(share["stop"][0]),
        bt_true=float(share["stop"][1]),
        both=both / benchmarks,
        samples_used=used / total,
        stopped_early=early / benchmarks,
        early=float(hits["early"].min() / max(early, 1)),
        round_end=float(share["round"].min()),
        continued=float(share["continued"].min()),
    )
