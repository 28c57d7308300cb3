"""Adaptive jobs' rounds, the pure part: after a round, where each pair of a benchmark stands
(stopped, and why, or how far the next round goes) and how far each model must be evaluated.

The interval and the looks are app.adaptive's (``StoppingRule.checkpoints``,
``confidence_sequence``); this module only decides what to do with them. No I/O: app/jobs.py
reads the stored correctness and writes the shards.

Round sizes: the first round reaches the rule's first look (``min_samples`` rounded up to a chunk
end), every later one the next chunk end. The confidence sequence is valid at any looks, so a
continuation whose chunks differ from the earlier job's loses nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum

import numpy as np

from app.adaptive import StoppingRule, confidence_sequence


class Stop(StrEnum):
    target = "target met"
    max = "max samples"
    end = "end of benchmark"


def rule_of(adaptive: dict) -> StoppingRule:
    """The stopping rule of a job's ``adaptive`` setting (app.boundary.AdaptiveIn)."""
    return StoppingRule(
        target_half_width=adaptive["target_points"] / 100.0,
        min_samples=adaptive["min_samples"],
        max_samples=adaptive.get("max_samples"),
        chunk_size=adaptive["chunk_size"],
    )


def round_end(rule: StoppingRule, n: int, full_size: int | None) -> int:
    """The prefix length the next round reaches from ``n`` paired samples: the first look after
    ``n``. With the benchmark's size not known yet (before its first round), looks are taken up
    to ``n + min_samples + chunk_size``, past which a chunk end always lies."""
    horizon = full_size if full_size is not None else n + rule.min_samples + rule.chunk_size
    if rule.max_samples is not None:
        horizon = min(horizon, rule.max_samples)
    points = rule.checkpoints(horizon)
    ahead = points[points > n]
    return int(ahead[0]) if ahead.size else horizon


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
    at ``max_samples`` or at the benchmark's end; else continue to the next look."""
    n = int(pre.shape[1]) if pre.ndim == 2 else 0
    halves: tuple[float | None, float | None] = (None, None)
    if n and full_size is not None:
        points = rule.checkpoints(max(full_size, n))
        points = points[points <= n]
        if points.size:
            cs = confidence_sequence(pre, post_correct, k, points, rule.level)
            met = (cs["f_true_half_width"] <= rule.target_half_width) & (
                cs["bt_true_half_width"] <= rule.target_half_width
            )
            at = int(np.argmax(met)) if met.any() else points.size - 1
            halves = (
                round(float(cs["f_true_half_width"][at]) * 100, 3),
                round(float(cs["bt_true_half_width"][at]) * 100, 3),
            )
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
