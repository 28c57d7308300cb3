"""Adaptive evaluation: one shared sample order, a paired interval valid under optional stopping,
and the rule that stops a benchmark once F_true and BT_true are known to a target precision.

Pure numpy (no I/O); the metric itself comes from ``app.metrics`` (``scores_from_arrays``), so the
adaptive map and the full map use one implementation of F_true and BT_true.

**Order.** A benchmark's samples are visited in the order of a stable hash of (benchmark,
sample_id) (``evaluation_order``): the same for every model and every run, independent of the
order a loader returns them in. Each sample's place depends on its own id only, so restricting a
larger id set to a smaller one keeps the smaller set's order, and the first n samples of a base
serve every pair built on it; a later run with a tighter target continues after the last sample
already evaluated.

**Interval.** For one benchmark and one pair, with S paired seeds, the map reports the mean over
seeds of F_true_s = max(F_s - c_s, 0) (and BT_true likewise), where c_s is the chance term with
per-k groups. The interval is a confidence sequence for theta_F = mean_s (F_s - c_s) of the
population the benchmark's samples are drawn from (a random-looking order makes each prefix a
random sample of it), reported for max(theta_F, 0):

- F_s - c_s is a smooth function of prefix means; its linearization gives each sample i one
  paired contribution over all seeds, psi_i = mean_s [x10_is - ((1 - b_sg)(1 - pre_is) +
  (1 - a_sg)(1 - post_is) - (1 - a_sg)(1 - b_sg)) / (k_g - 1)] (a_sg, b_sg: the accuracies of
  sample i's k-group g under seed s; no chance part for generative samples), whose mean over the
  prefix is exactly mean_s (F_s - c_s). Seeds and both models enter one number per sample, so
  their correlations are kept (the "paired" interval).
- Around the estimate, the half-width at prefix length t is Robbins' two-sided normal-mixture
  boundary applied to the standardized sum of the psi_i: the Gaussian-mixture *asymptotic
  confidence sequence* of Waudby-Smith, Arbour, Sinha, Kennedy and Ramdas, "Time-uniform central
  limit theory and asymptotic confidence sequences" (Annals of Statistics, 2024), with the mixing
  scale given in units of the sample standard deviation and tuned to be tightest at
  ``PLANNED_SAMPLES`` (their rho^2 = (-2 log alpha + log(1 - 2 log alpha)) / t*). The boundary
  is the one of Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric,
  nonasymptotic confidence sequences" (Annals of Statistics, 2021) for the normal mixture.
  Its coverage holds uniformly over all prefix lengths, so stopping when the interval looks
  narrow, or continuing later with a tighter target, does not bias it.
- That guarantee is asymptotic. Flips are rare events, and a short prefix with no flip yet
  would estimate a variance of almost 0; the variance is therefore regularized with
  ``PRIOR_ITEMS`` pseudo-samples of the largest variance a 0/1 contribution can have (1/4), and
  no benchmark stops before ``min_samples``. The finite-sample coverage at the stopping point is
  measured, not assumed: tests/unit/test_adaptive.py simulates 1,000 benchmarks with known
  F_true/BT_true (k = 2..10, mixed and generative, accuracies, flip rates, sizes) and asserts
  >= 93%; bench/adaptive.py prints the measured coverage.
- The reported interval is [L, U] clipped to [0, 1] and widened, where needed, to contain the map's
  value (the mean of per-seed clipped values can exceed the clipped mean by a little): it covers
  max(theta, 0) whenever [L, U] covers theta.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from app.metrics import scores_from_arrays

PRIOR_ITEMS = 2.0
"""Pseudo-samples of variance 1/4 added to the variance of the contributions (see module doc)."""
PLANNED_SAMPLES = 1000
"""Prefix length at which the confidence sequence is tightest (its width changes slowly around it)."""


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
# The paired confidence sequence


@dataclass(frozen=True)
class StoppingRule:
    """When to stop a benchmark: both half-widths <= ``target_half_width`` (a fraction: 0.015 is
    1.5 points), checked after each chunk, never before ``min_samples`` and never past
    ``max_samples`` (None: the whole benchmark)."""

    target_half_width: float = 0.015
    min_samples: int = 100
    max_samples: int | None = None
    chunk_size: int = 50
    level: float = 0.95

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

    def checkpoints(self, n_total: int) -> np.ndarray:
        """Prefix lengths at which the rule looks: chunk ends from ``min_samples`` on (the first
        chunk end at or past it), and the last sample it may use."""
        cap = n_total if self.max_samples is None else min(n_total, self.max_samples)
        first = math.ceil(min(self.min_samples, cap) / self.chunk_size) * self.chunk_size
        ends = np.arange(first, cap, self.chunk_size, dtype=np.int64)
        return np.append(ends, cap)


def _half_width(t: np.ndarray, variance: np.ndarray, level: float) -> np.ndarray:
    """Half-width of the Gaussian-mixture asymptotic CS at prefix length t (see module doc)."""
    alpha = 1.0 - level
    rho2 = (-2.0 * math.log(alpha) + math.log(1.0 - 2.0 * math.log(alpha))) / PLANNED_SAMPLES
    x = t * rho2 + 1.0
    return np.sqrt(variance * 2.0 * x / (t * t * rho2) * np.log(np.sqrt(x) / alpha))


def confidence_sequence(
    pre: np.ndarray,
    post: np.ndarray,
    k: np.ndarray,
    checkpoints: Sequence[int],
    level: float = 0.95,
) -> dict[str, np.ndarray]:
    """F_true and BT_true with their intervals on every prefix of length in ``checkpoints``.

    ``pre`` and ``post``: 0/1 arrays of shape (seeds, samples), the samples in evaluation order and
    seed s of the base against seed s of the post model; ``k``: each sample's option count
    (0 = generative), shape (samples,). Returns arrays over checkpoints: ``n``, ``f_true`` and
    ``bt_true`` (the map's values: mean over seeds of the per-seed clipped values), their
    ``_low`` / ``_high`` bounds and ``_half_width`` (of the confidence sequence, before clipping).
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
    pre, post, k = pre[:, : t[-1]], post[:, : t[-1]], k[: t[-1]]
    seeds = pre.shape[0]
    group_ks, group_of = np.unique(k, return_inverse=True)
    n_groups = group_ks.size

    # Per sample, seed and k-group: the cells 00, 01, 10, 11 (counts for the metric), and the
    # features the contributions are linear in: x10, x01, (1 - pre) and (1 - post) in the group,
    # and the group itself.
    cell = (2 * pre + post).astype(np.int64)  # 0: 00, 1: 01, 2: 10, 3: 11
    onehot = np.zeros((k.size, seeds, n_groups, 4))
    onehot[np.arange(k.size)[:, None], np.arange(seeds)[None, :], group_of[:, None], cell.T] = 1.0
    counts = np.cumsum(onehot, axis=0)[t - 1]  # (checkpoints, seeds, groups, 4)

    rows = counts.reshape(-1, 4)
    present = rows.sum(axis=1) > 0
    unit = np.repeat(np.arange(t.size * seeds), n_groups)
    row_k = np.tile(group_ks, t.size * seeds)
    scores = scores_from_arrays(
        rows[present, 0], rows[present, 1], rows[present, 2], rows[present, 3],
        row_k[present], unit[present],
    )  # fmt: skip
    per_seed = {name: scores[name].reshape(t.size, seeds) for name in scores}

    # linearization coefficients of the chance term per (checkpoint, seed, group)
    n_g = counts.sum(axis=3)
    with np.errstate(invalid="ignore", divide="ignore"):
        miss_pre = np.where(n_g > 0, (counts[..., 0] + counts[..., 1]) / n_g, 0.0)
        miss_post = np.where(n_g > 0, (counts[..., 0] + counts[..., 2]) / n_g, 0.0)
    inv_km1 = np.where(group_ks == 0, 0.0, 1.0 / np.maximum(group_ks - 1, 1))
    coef_pre = -miss_post * inv_km1  # on (1 - pre_is) in group g
    coef_post = -miss_pre * inv_km1  # on (1 - post_is) in group g

    in_group = np.zeros((k.size, 1, n_groups))
    in_group[np.arange(k.size), 0, group_of] = 1.0
    features = np.concatenate(
        [
            ((pre == 1) & (post == 0)).T,
            ((pre == 0) & (post == 1)).T,
            ((1 - pre).T[:, :, None] * in_group).reshape(k.size, -1),
            ((1 - post).T[:, :, None] * in_group).reshape(k.size, -1),
            in_group[:, 0, :],
        ],
        axis=1,
    ).astype(np.float64)  # (samples, 2 S + 2 S G + G)
    # sums of features and of their products over each prefix (segments between checkpoints)
    starts = np.concatenate([[0], t[:-1]])
    first = np.cumsum(np.add.reduceat(features, starts, axis=0), axis=0) / t[:, None]
    products = features[:, :, None] * features[:, None, :]
    second = np.cumsum(np.add.reduceat(products, starts, axis=0), axis=0) / t[:, None, None]
    ones = np.ones((t.size, seeds))
    zeros = np.zeros((t.size, seeds))
    # the constant (1 - a_sg)(1 - b_sg) / (k_g - 1) differs between k-groups: it varies per sample
    constant = (miss_pre * miss_post * inv_km1).sum(axis=1)  # summed over seeds, (checkpoints, G)
    chance = np.concatenate(
        [coef_pre.reshape(t.size, -1), coef_post.reshape(t.size, -1), constant], axis=1
    )
    weights = {
        "f": np.concatenate([ones, zeros, chance], axis=1) / seeds,
        "bt": np.concatenate([zeros, ones, chance], axis=1) / seeds,
    }

    out: dict[str, np.ndarray] = {"n": t}
    for name in ("f", "bt"):
        w = weights[name]
        mean_psi = np.einsum("cd,cd->c", w, first)
        variance = np.maximum(np.einsum("cd,cde,ce->c", w, second, w) - mean_psi**2, 0.0)
        regularized = (t * variance + PRIOR_ITEMS * 0.25) / (t + PRIOR_ITEMS)
        half = _half_width(t.astype(np.float64), regularized, level)
        centre = (per_seed[name] - per_seed[f"{name}_chance"]).mean(axis=1)
        value = per_seed[f"{name}_true"].mean(axis=1)
        out[f"{name}_true"] = value
        out[f"{name}_true_low"] = np.minimum(np.maximum(centre - half, 0.0), value)
        out[f"{name}_true_high"] = np.maximum(np.clip(centre + half, 0.0, 1.0), value)
        out[f"{name}_true_half_width"] = half
    return out


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
    checkpoint where both half-widths are <= the target, else at the last sample allowed.

    The looks are computed at once from the arrays; each uses only its prefix, so the result is
    the one a chunk-by-chunk run reaches (the replay bench and the simulation use it that way)."""
    pre = np.asarray(pre)
    n_total = pre.shape[-1]
    points = rule.checkpoints(n_total)
    cs = confidence_sequence(pre, post, k, points, rule.level)
    met = (cs["f_true_half_width"] <= rule.target_half_width) & (
        cs["bt_true_half_width"] <= rule.target_half_width
    )
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
