"""Adaptive jobs' rounds, the pure part: after a round, where each pair of a benchmark stands
(stopped, and why, or how far the next round goes) and how far each model must be evaluated.

The interval and the looks are forgetmap.analysis.adaptive's (``StoppingRule.checkpoints``,
``prefix_intervals``); this module only decides what to do with them. No I/O: app/services/jobs.py
reads the stored correctness and writes the shards.

Round sizes grow geometrically: the first round reaches the rule's first look (``min_samples``
rounded up to a chunk end); every later one reaches at least ``round_growth`` (1.5 unless a job
sets it: ``StoppingRule.round_growth``) times the pair's prefix (the first chunk end at or past 1.5
n), never past ``max_samples`` or the benchmark's end. Why: every shard (one per model and seed and
round) loads its engine again (a 7B model: minutes), so one chunk per round made a benchmark that
stops late pay for dozens of loads; growing rounds pay for about log(n / first look) / log 1.5 of
them. The price is the samples evaluated past the stopping point: the look still checks every chunk
end of the prefix (the rule stops at the first look whose half-widths meet the target; the round's
end is a later stopping time, where the measured coverage holds too, and a continuation whose
rounds differ from the earlier job's stops at the same looks), but the round that contains the
stopping point s is evaluated to its end: fewer than 1.5 s samples when that round started on a
chunk end (every round after a job's first does), at most 1.5 s + one chunk otherwise (a
continuation from an earlier job's prefix). One chunk per round never evaluated past s.

Why 1.5 and not 2: the samples fraction S is what adaptive evaluation exists to cut. Replayed
on the demo zoo's scale-10 results resampled to larger benchmarks (bench/adaptive.py's
projection; 5 pairs, 3 seeds, a 1.5-point target; measured 2026-12-01 with the confidence
sequence the rule used then, which stopped about 2.3 times later than the rule now), samples
evaluated and rounds per (pair, benchmark):

    growth            one chunk   1.25    1.5     2
    8x  (3,200-4,800)   84.3%     85.6%   86.4%   90.1%    rounds 67.6 / 14.8 / 9.6 / 6.4
    32x (13-19k)        38.9%     43.4%   45.7%   53.4%    rounds 119.7 / 16.5 / 10.4 / 7.0

Doubling gave back 14.5 points of S at 32x to save about 3 rounds; 1.5 keeps most of the
savings with a tenth of one chunk's rounds.

Measured (``rounds_until``; tests/unit/test_adaptive_jobs.py checks the table): a benchmark of
N = 2,000 samples, min_samples 100, chunk 50, a pair stopping at s (the first chunk end meeting
the target); a round is 2 x seeds shards per pair:

    stopping at s        100   150   250   400   550   800  1050  1600  2000 (end)
    rounds, one chunk      1     2     4     7    10    15    20    31    39
    rounds, x1.5           1     2     3     4     5     6     7     8     8
    evaluated, x1.5      100   150   250   400   600   900  1350  2000  2000
    past s, x1.5           0     0     0     0    50   100   300   400     0
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from enum import StrEnum

import numpy as np
from forgetmap.analysis.adaptive import (
    StoppingRule,
    prefix_intervals,
    reported_half_widths,
    target_met,
)


class Stop(StrEnum):
    target = "target met"
    max = "max samples"
    end = "end of benchmark"


def rule_of(adaptive: dict) -> StoppingRule:
    """The stopping rule of a job's ``adaptive`` setting (forgetmap.contract.jobs.AdaptiveIn)."""
    return StoppingRule(
        target_half_width=adaptive["target_points"] / 100.0,
        min_samples=adaptive["min_samples"],
        max_samples=adaptive.get("max_samples"),
        chunk_size=adaptive["chunk_size"],
        round_growth=adaptive.get("round_growth", StoppingRule.round_growth),  # older jobs: none
    )


def round_end(rule: StoppingRule, n: int, full_size: int | None) -> int:
    """The prefix length the next round reaches from ``n`` paired samples: the first look at or
    past ``rule.round_growth * n`` (and past ``n``; see the module doc). With the benchmark's
    size not known yet (before its first round), looks are taken up to that + ``min_samples +
    chunk_size``, past which such a chunk end always lies."""
    reach = max(math.ceil(rule.round_growth * n), n + 1)
    horizon = full_size if full_size is not None else reach + rule.min_samples + rule.chunk_size
    if rule.max_samples is not None:
        horizon = min(horizon, rule.max_samples)
    points = rule.checkpoints(horizon)
    ahead = points[points >= reach]
    return int(ahead[0]) if ahead.size else horizon


def rounds_until(rule: StoppingRule, stop: int, full_size: int) -> tuple[int, int]:
    """(rounds, samples evaluated) of a pair, from nothing stored, whose stopping point (the first
    look meeting the target, or the end) is ``stop``: rounds as app/services/jobs.py writes them,
    the last one evaluated to its end (``round_end``)."""
    n, rounds = 0, 0
    while n < stop:
        n, rounds = round_end(rule, n, full_size), rounds + 1
    return rounds, n


@dataclass(frozen=True)
class PairLook:
    """One pair on one benchmark after a round (half-widths in points; None before any look)."""

    base: str
    post: str
    n: int
    stopped: str | None  # a Stop, or None: go on to ``next_end``
    next_end: int | None
    f_half_points: float | None = None
    bt_half_points: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def look(
    rule: StoppingRule,
    base: str,
    post: str,
    pre: np.ndarray,
    post_correct: np.ndarray,
    k: np.ndarray,
    full_size: int | None,
) -> PairLook:
    """Decide for one pair from its paired correctness (seeds x samples, the samples the stored
    prefix in evaluation order): stop at the first look whose half-widths both meet the target,
    at ``max_samples`` or at the benchmark's end; else continue to the next look.

    The half-widths reported are those of the whole prefix (``n``, what the map's interval uses
    too): the round's end is a later stopping time, where the interval's coverage holds as well
    (app/demo/adaptive_sim.py measures it), so the samples a round evaluated past the stopping look
    narrow the interval rather than being left out."""
    n = int(pre.shape[1]) if pre.ndim == 2 else 0
    halves: tuple[float | None, float | None] = (None, None)
    if n and full_size is not None:
        points = rule.checkpoints(max(full_size, n))
        points = points[points <= n]
        if points.size:
            if points[-1] != n:
                points = np.append(points, n)
            cs = prefix_intervals(pre, post_correct, k, points, rule.level)
            met = target_met(cs, rule)
            f_half, bt_half = (round(float(h[-1]) * 100, 3) for h in reported_half_widths(cs))
            halves = (f_half, bt_half)
            if met.any():
                return PairLook(base, post, n, Stop.target, None, *halves)
    cap = full_size
    if rule.max_samples is not None and (cap is None or rule.max_samples < cap):
        if n >= rule.max_samples:
            return PairLook(base, post, n, Stop.max, None, *halves)
    elif cap is not None and n >= cap:
        return PairLook(base, post, n, Stop.end, None, *halves)
    return PairLook(base, post, n, None, round_end(rule, n, full_size), *halves)


def model_ends(looks: list[PairLook]) -> dict[str, int]:
    """How far each model must be evaluated for the next round: a base shared by several pairs
    goes as far as the furthest pair still running needs."""
    ends: dict[str, int] = {}
    for p in looks:
        if p.stopped is None and p.next_end is not None:
            for name in (p.base, p.post):
                ends[name] = max(ends.get(name, 0), p.next_end)
    return ends
