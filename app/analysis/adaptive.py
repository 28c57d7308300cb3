"""Adaptive evaluation: one shared sample order, a paired interval whose coverage holds at the
stopping point, and the rule that stops a benchmark once F_true and BT_true are known to a
target precision.

Pure numpy (no I/O); the metric itself comes from ``forgetmap.core.metrics``
(``scores_from_arrays``), so the adaptive map and the full map use one implementation of F_true and
BT_true.

**Order.** A benchmark's samples are visited in the order of a stable hash of (benchmark,
sample_id) (``evaluation_order``): the same for every model and every run, independent of the
order a loader returns them in. Each sample's place depends on its own id only, so restricting a
larger id set to a smaller one keeps the smaller set's order, and the first n samples of a base
serve every pair built on it; a later run with a tighter target continues after the last sample
already evaluated.

**Interval.** For one benchmark and one pair, with S paired seeds, the map reports the mean over
seeds of F_true_s = max(F_s - c_s, 0) (and BT_true likewise), where c_s is the chance term with
per-k groups. The interval is for theta_F = mean_s (F_s - c_s) of the population the
benchmark's samples are drawn from (a random-looking order makes each prefix a random sample of
it), reported for max(theta_F, 0):

- F_s - c_s is a smooth function of prefix means; its linearization gives each sample i one
  paired contribution over all seeds, psi_i = mean_s [x10_is - ((1 - b_sg)(1 - pre_is) +
  (1 - a_sg)(1 - post_is) - (1 - a_sg)(1 - b_sg)) / (k_g - 1)] (a_sg, b_sg: the accuracies of
  sample i's k-group g under seed s; no chance part for generative samples), whose mean over the
  prefix is exactly mean_s (F_s - c_s). Seeds and both models enter one number per sample, so
  their correlations are kept (the "paired" interval).
- Around the estimate, the half-width at prefix length t is z_(1 - alpha/2) * sqrt(var / t), var
  the variance of the psi_i (regularized, below): the plain CLT interval of a fixed sample, used
  as a *fixed-width sequential confidence interval* (Chow and Robbins, "On the asymptotic theory
  of fixed-width sequential confidence intervals for the mean", Annals of Mathematical Statistics
  36(2), 1965): stop at the first look where the half-width is <= the target d. Chow and
  Robbins show that the coverage at that stopping time tends to 1 - alpha as d -> 0 when the
  decision depends on the data through the estimated variance only.
  It is not a confidence sequence: the interval is not meant to hold at every look at once, so
  stopping because the *estimate* looks interesting would bias it; stopping on the width (this
  rule), continuing later with a tighter target (another width rule) or reporting at the end of
  the round that holds the stopping look (a later stopping time) keep the coverage.
  Why not a confidence sequence (what this module used until 2026-12): Robbins' normal-mixture
  boundary costs a factor of about 2.3 in samples at the same target (its half-width at the
  tuned length is about 1.55 times the CLT's), and measured coverage at the stopping point was
  0.998 against a nominal 0.95: precision bought twice. On the same 1,000 simulated benchmarks
  the sequence used 46.3% of the samples, this interval 24.5% (21.4% compared as below).
- psi_i depends on sample i only through its k-group and its cell (00, 01, 10, 11) under each
  seed, so the mean and variance of psi follow exactly from counts: per (seed, k-group, cell),
  and per (seed_a, seed_b, k-group) the 4 x 4 joint cells for the cross-seed terms.
  ``interval_from_counts`` is the one implementation; ``prefix_intervals`` counts each prefix
  of its arrays and calls it, and the forgetting map calls it on the counts that pairing stores
  (table ``cross_seed_cells`` beside ``transitions``), so the map's interval and the stopping
  rule's are the same numbers.
- That guarantee is asymptotic. Flips are rare events, and a short prefix with no flip yet
  would estimate a variance of almost 0; the variance is therefore regularized with
  ``PRIOR_ITEMS`` pseudo-samples of the largest variance a 0/1 contribution can have (1/4), and
  no benchmark stops before ``min_samples``. The finite-sample coverage at the stopping point is
  measured, not assumed, and needs no correction here: tests/unit/test_adaptive.py simulates
  1,000 benchmarks with known F_true/BT_true (k = 2..10, mixed and generative, accuracies, flip
  rates, sizes) and asserts >= 94% overall and >= 93% among those stopped early and those
  continued with a tighter target (measured: 0.96 overall, 0.95-0.97 within every k, greedy or
  sampled seeds, stopping point and F_true band on 3,000 more); bench/adaptive.py prints it.
- The reported interval is [L, U] clipped to [0, 1] and widened, where needed, to contain the map's
  value (the mean of per-seed clipped values can exceed the clipped mean by a little): it covers
  max(theta, 0) whenever [L, U] covers theta.
- **The rule compares the reported interval** (``reported_half_widths``: half its width), the
  one the map shows, not the half-width of the interval for theta. They differ where chance
  explains the flips: theta's interval lies below 0 and the reported one is [0, max(U, 0)], so
  F_true = 0 is settled although theta is not known to +-d. That is common for a model near
  chance on a benchmark, where estimating the chance term c = (1 - a)(1 - b)/(k - 1) costs more
  variance than the flips themselves (demo zoo, scale 10: demo-base at 0.29 on a 4-option
  benchmark and 0.2% of answers flipped still needs about 800 samples for +-1.5 points on
  theta). Where the clipping applies, stopping depends on the estimate's place against 0, which
  Chow and Robbins' theorem does not cover; the simulation measures it: 0.954-0.966 at the
  stopping point on 3 x 1,000 benchmarks, with 21.4-22.1% of the samples against 24.5-25.0%
  for the unclipped half-width. On the demo zoo at scale 10 it is what lets 19 of 40 (pair,
  benchmark) stop early instead of 1.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from forgetmap.core.metrics import scores_from_arrays

PRIOR_ITEMS = 2.0
"""Pseudo-samples of variance 1/4 added to the variance of the contributions (see module doc)."""


# ---------------------------------------------------------------------------------------------
# The shared evaluation order


def order_key(benchmark: str, sample_id: str) -> int:
    """A sample's place in its benchmark's evaluation order: the first 8 bytes of
    blake2b(benchmark, sample_id) as an unsigned integer (stable across runs, machines, Python
    versions; the benchmark name is part of the key so that benchmarks numbering their samples
    0, 1, 2, ... are not all visited in one permutation)."""
    digest = hashlib.blake2b(
        f"{benchmark}\x1f{sample_id}".encode(), digest_size=8, person=b"forgetmap-order"
    ).digest()
    return int.from_bytes(digest, "big")


def evaluation_order(benchmark: str, sample_ids: Iterable[str]) -> list[str]:
    """The benchmark's distinct sample ids in evaluation order (ties, never seen in practice,
    broken by the id)."""
    return sorted(set(sample_ids), key=lambda sid: (order_key(benchmark, sid), sid))


def chunks(ordered_ids: Sequence[str], chunk_size: int) -> list[list[str]]:
    """Consecutive chunks of ``chunk_size`` ids (the last one shorter)."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size!r}")
    return [list(ordered_ids[i : i + chunk_size]) for i in range(0, len(ordered_ids), chunk_size)]


# ---------------------------------------------------------------------------------------------
# The paired interval and the stopping rule


@dataclass(frozen=True)
class StoppingRule:
    """When to stop a benchmark: both reported half-widths (``reported_half_widths``) <=
    ``target_half_width`` (a fraction: 0.015 is 1.5 points), checked after each chunk, never
    before ``min_samples`` and never past ``max_samples`` (None: the whole benchmark). An
    adaptive job evaluates in rounds, each after the first reaching at least ``round_growth``
    times the prefix (app/services/rounds.py: 1 is one chunk per round)."""

    target_half_width: float = 0.015
    min_samples: int = 100
    max_samples: int | None = None
    chunk_size: int = 50
    level: float = 0.95
    round_growth: float = 1.5

    def __post_init__(self) -> None:
        if not 0.0 < self.target_half_width < 1.0:
            raise ValueError(
                f"target_half_width is a fraction in (0, 1), got {self.target_half_width!r}"
            )
        if self.min_samples < 1 or self.chunk_size < 1:
            raise ValueError("min_samples and chunk_size must be >= 1")
        if self.max_samples is not None and self.max_samples < self.min_samples:
            raise ValueError(
                f"max_samples ({self.max_samples}) must be >= min_samples ({self.min_samples})"
            )
        if not 0.5 < self.level < 1.0:
            raise ValueError(f"level must be in (0.5, 1), got {self.level!r}")
        if not self.round_growth >= 1.0:
            raise ValueError(f"round_growth must be >= 1, got {self.round_growth!r}")

    def checkpoints(self, n_total: int) -> np.ndarray:
        """Prefix lengths at which the rule looks: chunk ends from ``min_samples`` on (the first
        chunk end at or past it), and the last sample it may use."""
        cap = n_total if self.max_samples is None else min(n_total, self.max_samples)
        first = math.ceil(min(self.min_samples, cap) / self.chunk_size) * self.chunk_size
        ends = np.arange(first, cap, self.chunk_size, dtype=np.int64)
        return np.append(ends, cap)


def reported_half_widths(interval: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Half the width of the reported F_true and BT_true intervals (clipped to [0, 1], as the map
    shows them): what the stopping rule compares with its target (module doc)."""
    return tuple(  # type: ignore[return-value]
        (np.asarray(interval[f"{name}_true_high"]) - np.asarray(interval[f"{name}_true_low"])) / 2
        for name in ("f", "bt")
    )


def target_met(interval: dict[str, np.ndarray], rule: StoppingRule) -> np.ndarray:
    """Where both reported half-widths are at most the rule's target (one flag per look)."""
    f_half, bt_half = reported_half_widths(interval)
    return (f_half <= rule.target_half_width) & (bt_half <= rule.target_half_width)


def _half_width(t: np.ndarray, variance: np.ndarray, level: float) -> np.ndarray:
    """Half-width of the two-sided CLT interval at prefix length t: z_(1 - alpha/2) sqrt(var / t),
    the width the fixed-width sequential rule compares with its target (see module doc)."""
    return NormalDist().inv_cdf(0.5 + level / 2.0) * np.sqrt(variance / t)


CELLS = ("00", "01", "10", "11")
"""A sample's cell under one seed, 2 * pre + post: the order of the count columns n_00 ... n_11."""
CELL_PRE = np.array([0, 0, 1, 1])
CELL_POST = np.array([0, 1, 0, 1])
JOINT_CELLS = tuple(f"n_{a}_{b}" for a in CELLS for b in CELLS)
"""Joint count columns of two seeds, row-major: n_<cell under seed_a>_<cell under seed_b>."""


def interval_from_counts(
    seed_rows: dict[str, np.ndarray],
    cross_rows: dict[str, np.ndarray],
    units: int,
    level: float = 0.95,
) -> dict[str, np.ndarray]:
    """F_true and BT_true with their paired intervals for many units at once, from counts only.

    The one implementation of the interval: ``prefix_intervals`` (a unit per checkpoint) and
    the map (a unit per pair and benchmark, counts stored at pairing time) both call it.

    ``seed_rows``: one row per (unit, seed, k-group) with keys ``unit``, ``seed``, ``k`` (0:
    generative) and the cell counts ``n_00``, ``n_01``, ``n_10``, ``n_11``. ``cross_rows``: the
    samples of a unit paired under two of its seeds, one row per (unit, seed_a < seed_b, k-group)
    with keys ``unit``, ``seed_a``, ``seed_b``, ``k`` and ``joint``, shape (rows, 4, 4): how many
    samples fall in cell c under seed_a and cell c' under seed_b (``JOINT_CELLS``).

    Why these suffice: a sample's contribution psi_i (module doc) is, per seed s, a value
    v_s[g, cell_is] that depends only on its k-group g and its cell; so the mean of psi is
    mean_s sum_(g,c) N_s[g, c] v_s[g, c] / n and its second moment sums J_ab[g, c, c']
    v_a[g, c] v_b[g, c'] over seed pairs (J: the joint counts; the diagonal a = b is the per-seed
    counts). Each seed's covariance with another is taken over their common samples; where two
    seeds share none it is bounded by sqrt(var_a var_b) (Cauchy-Schwarz). When every seed has the
    same samples (the adaptive runs, and any complete evaluation) this is exactly the variance of
    psi; prefix length t is the smallest per-seed sample count.

    Returns arrays of length ``units``: ``n`` (t), ``seeds``, and per name in (f, bt):
    ``{name}_true`` (mean over seeds of the clipped per-seed values: the map's value),
    ``_low``/``_high`` and ``_half_width`` (module doc). Units without rows get NaN.
    """
    unit = np.asarray(seed_rows["unit"], dtype=np.int64)
    k = np.asarray(seed_rows["k"], dtype=np.int64)
    cells = np.stack(
        [np.asarray(seed_rows[f"n_{c}"], dtype=np.float64) for c in ("00", "01", "10", "11")],
        axis=1,
    ).reshape(-1, 4)
    seed_codes, seed_code = np.unique(np.asarray(seed_rows["seed"]), return_inverse=True)
    width = max(seed_codes.size, 1)
    # (unit, seed) pairs: the per-seed values
    us_keys, us_of = np.unique(unit * width + seed_code.reshape(-1), return_inverse=True)
    us_unit = us_keys // width
    us_of = us_of.reshape(-1)
    n_00, n_01, n_10, n_11 = cells.T
    scores = scores_from_arrays(n_00, n_01, n_10, n_11, k, us_of)
    n_s = scores["n"].astype(np.float64)
    seeds = np.bincount(us_unit, minlength=units)
    t = np.full(units, np.inf)
    np.minimum.at(t, us_unit, n_s)

    # each row's value per cell: v = [cell is the flip] - chance linearization (module doc)
    n_g = cells.sum(axis=1)
    miss_pre = (cells[:, 0] + cells[:, 1]) / n_g
    miss_post = (cells[:, 0] + cells[:, 2]) / n_g
    inv_km1 = np.where(k == 0, 0.0, 1.0 / np.maximum(k - 1, 1))
    chance = inv_km1[:, None] * (
        miss_post[:, None] * (1 - CELL_PRE)
        + miss_pre[:, None] * (1 - CELL_POST)
        - (miss_pre * miss_post)[:, None]
    )
    flip = {"f": 2, "bt": 1}  # the cell of the flip each value counts: 10 (F) and 01 (BT)
    # per row, sum_c N[c] v[c] and sum_c N[c] v[c]^2 with v = [c is the flip] - chance, from
    # the two chance moments shared by both values (three (rows, 4) products, not eight)
    n_chance = (cells * chance).sum(axis=1)
    n_chance_sq = (cells * chance * chance).sum(axis=1)

    # each side of a cross row is the per-seed row of its (unit, seed, k)
    seed_of_row = np.asarray(seed_rows["seed"]).reshape(-1)
    k_width = int(k.max(initial=0)) + 1
    order = np.argsort(us_of * k_width + k, kind="stable")
    sorted_keys = (us_of * k_width + k)[order]
    x_unit = np.asarray(cross_rows["unit"], dtype=np.int64)
    x_k = np.asarray(cross_rows["k"], dtype=np.int64)
    x_joint = np.asarray(cross_rows["joint"], dtype=np.float64).reshape(-1, 4, 4)
    x_n = x_joint.sum(axis=(1, 2))

    def rows_of(side: str) -> np.ndarray:
        seed = np.asarray(cross_rows[f"seed_{side}"])
        if seed.size == 0:
            return np.zeros(0, dtype=np.int64)
        code = np.minimum(np.searchsorted(seed_codes, seed), width - 1)
        us = np.minimum(np.searchsorted(us_keys, x_unit * width + code), us_keys.size - 1)
        at = order[np.minimum(np.searchsorted(sorted_keys, us * k_width + x_k), order.size - 1)]
        if not (
            np.array_equal(unit[at], x_unit)
            and np.array_equal(seed_of_row[at], seed)
            and np.array_equal(k[at], x_k)
        ):
            raise ValueError("every cross row needs the per-seed row of its unit, seed and k")
        return at

    x_rows = [rows_of("a"), rows_of("b")]
    x_us = [us_of[rows] for rows in x_rows]
    seed_pair, pair_of = np.unique(x_us[0] * us_keys.size + x_us[1], return_inverse=True)
    pair_a, pair_b = seed_pair // max(us_keys.size, 1), seed_pair % max(us_keys.size, 1)
    n_ab = np.bincount(pair_of, weights=x_n, minlength=seed_pair.size)

    out: dict[str, np.ndarray] = {"n": np.where(np.isinf(t), 0, t).astype(np.int64), "seeds": seeds}
    s_count = np.maximum(seeds, 1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        for name in ("f", "bt"):
            c = flip[name]
            first_row = cells[:, c] - n_chance
            second_row = n_chance_sq + cells[:, c] * (1.0 - 2.0 * chance[:, c])
            m = np.bincount(us_of, weights=first_row, minlength=us_keys.size) / n_s
            second = np.bincount(us_of, weights=second_row, minlength=us_keys.size)
            var = np.maximum(second / n_s - m * m, 0.0)
            sd = np.sqrt(var)
            # worst case first (all seeds perfectly correlated), then each shared pair's covariance
            worst = np.bincount(us_unit, weights=sd, minlength=units) ** 2
            v_a, v_b = -chance[x_rows[0]], -chance[x_rows[1]]  # v of each side's row
            v_a[:, c] += 1.0
            v_b[:, c] += 1.0
            product = np.einsum("rc,rcd,rd->r", v_a, x_joint, v_b)
            cov = np.bincount(pair_of, weights=product, minlength=seed_pair.size) / n_ab
            bound = sd[pair_a] * sd[pair_b]
            cov = np.clip(cov - m[pair_a] * m[pair_b], -bound, bound)
            slack = np.bincount(us_unit[pair_a], weights=2.0 * (bound - cov), minlength=units)
            variance = np.maximum(worst - slack, 0.0) / s_count**2
            regularized = (t * variance + PRIOR_ITEMS * 0.25) / (t + PRIOR_ITEMS)
            half = _half_width(t, regularized, level)
            centre = np.bincount(us_unit, weights=m, minlength=units) / s_count
            value = np.bincount(us_unit, weights=scores[f"{name}_true"], minlength=units) / s_count
            empty = seeds == 0
            value[empty] = centre[empty] = half[empty] = np.nan
            out[f"{name}_true"] = value
            out[f"{name}_true_low"] = np.minimum(np.maximum(centre - half, 0.0), value)
            out[f"{name}_true_high"] = np.maximum(np.clip(centre + half, 0.0, 1.0), value)
            out[f"{name}_true_half_width"] = half
    return out


def prefix_intervals(
    pre: np.ndarray,
    post: np.ndarray,
    k: np.ndarray,
    checkpoints: Sequence[int] | np.ndarray,
    level: float = 0.95,
) -> dict[str, np.ndarray]:
    """F_true and BT_true with their intervals on every prefix of length in ``checkpoints``.

    ``pre`` and ``post``: 0/1 arrays of shape (seeds, samples), the samples in evaluation order and
    seed s of the base against seed s of the post model; ``k``: each sample's option count
    (0 = generative), shape (samples,). Returns arrays over checkpoints: ``n``, ``f_true`` and
    ``bt_true`` (the map's values: mean over seeds of the per-seed clipped values), their
    ``_low`` / ``_high`` bounds and ``_half_width`` (before clipping).
    The counts of each prefix go to ``interval_from_counts`` (one unit per checkpoint).
    """
    pre = np.asarray(pre, dtype=np.int8)
    post = np.asarray(post, dtype=np.int8)
    if pre.ndim == 1:
        pre, post = pre[None, :], post[None, :]
    k = np.asarray(k, dtype=np.int64).reshape(-1)
    if pre.shape != post.shape or pre.shape[1] != k.size:
        raise ValueError(
            f"pre {pre.shape}, post {post.shape} and k ({k.size},) must describe the same samples"
        )
    if not (np.isin(pre, (0, 1)).all() and np.isin(post, (0, 1)).all()):
        raise ValueError("correctness values must be 0 or 1")
    if np.any((k != 0) & (k < 2)):
        raise ValueError("option counts must be >= 2 (0 for generative samples)")
    t = np.asarray(checkpoints, dtype=np.int64)
    if t.size == 0 or t.min() < 1 or t.max() > k.size or np.any(np.diff(t) <= 0):
        raise ValueError("checkpoints must be increasing prefix lengths in 1..samples")
    seed_rows, cross_rows = prefix_counts(pre[:, : t[-1]], post[:, : t[-1]], k[: t[-1]], t)
    out = interval_from_counts(seed_rows, cross_rows, t.size, level)
    del out["seeds"]
    return out


def prefix_counts(
    pre: np.ndarray, post: np.ndarray, k: np.ndarray, t: np.ndarray
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The rows ``interval_from_counts`` reads, one unit per prefix length in ``t``: the counts
    of each (seed, k-group, cell) and the joint cells of each (seed_a < seed_b, k-group)."""
    seeds = pre.shape[0]
    group_ks, group_of = np.unique(k, return_inverse=True)
    n_groups = group_ks.size
    cell = (2 * pre + post).astype(np.int64)  # (seeds, samples)
    segment = np.searchsorted(t, np.arange(k.size), side="right")  # first prefix holding i

    def cumulative(index: np.ndarray, size: int) -> np.ndarray:
        """Counts of ``index`` (per sample) in every prefix: shape (checkpoints, size)."""
        flat = np.bincount(segment * size + index, minlength=t.size * size)
        return np.cumsum(flat.reshape(t.size, size), axis=0)

    per_seed = np.stack(
        [cumulative(group_of * 4 + cell[s], n_groups * 4) for s in range(seeds)], axis=1
    ).reshape(t.size, seeds, n_groups, 4)
    unit, seed, group = np.nonzero(per_seed.sum(axis=3))
    seed_rows = {"unit": unit, "seed": seed, "k": group_ks[group]}
    for c, name in enumerate(("n_00", "n_01", "n_10", "n_11")):
        seed_rows[name] = per_seed[unit, seed, group, c]
    parts: list[tuple] = []
    for a in range(seeds):
        for b in range(a + 1, seeds):
            joint = cumulative((group_of * 4 + cell[a]) * 4 + cell[b], n_groups * 16)
            joint = joint.reshape(t.size, n_groups, 16)
            u, g = np.nonzero(joint.sum(axis=2))
            parts.append((u, np.full(u.size, a), np.full(u.size, b), g, joint[u, g]))
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        parts = [(empty, empty, empty, empty, np.zeros((0, 16), dtype=np.int64))]
    u, sa, sb, g, joint = (np.concatenate(x) for x in zip(*parts, strict=True))
    cross_rows = {
        "unit": u,
        "seed_a": sa,
        "seed_b": sb,
        "k": group_ks[g],
        "joint": joint.reshape(-1, 4, 4),
    }
    return seed_rows, cross_rows


@dataclass(frozen=True)
class AdaptiveResult:
    """Where the rule stopped a benchmark and what it reports there (fractions, not points)."""

    n: int  # samples used (per seed and model)
    n_total: int  # samples the benchmark has
    target_met: bool  # False: stopped at max_samples or at the benchmark's end first
    f_true: float
    f_true_low: float
    f_true_high: float
    f_true_half_width: float
    bt_true: float
    bt_true_low: float
    bt_true_high: float
    bt_true_half_width: float


def run_stopping_rule(
    pre: np.ndarray, post: np.ndarray, k: np.ndarray, rule: StoppingRule = StoppingRule()
) -> AdaptiveResult:
    """Visit the samples chunk by chunk (arrays already in evaluation order) and stop at the first
    checkpoint where both reported half-widths are <= the target, else at the last sample allowed.

    The looks are computed at once from the arrays; each uses only its prefix, so the result is
    the one a chunk-by-chunk run reaches (the replay bench and the simulation use it that way)."""
    pre = np.asarray(pre)
    n_total = pre.shape[-1]
    points = rule.checkpoints(n_total)
    cs = prefix_intervals(pre, post, k, points, rule.level)
    met = target_met(cs, rule)
    at = int(np.argmax(met)) if met.any() else points.size - 1
    return AdaptiveResult(
        n=int(points[at]),
        n_total=n_total,
        target_met=bool(met[at]),
        **{
            f"{name}_true{suffix}": float(cs[f"{name}_true{suffix}"][at])
            for name in ("f", "bt")
            for suffix in ("", "_low", "_high", "_half_width")
        },
    )
