"""Chance-adjusted forgetting and backward transfer: the metric core (pure numpy, no I/O).

After "Mapping Post-Training Forgetting in Language Models at Scale" (ICLR 2026, arXiv 2510.17776).

For one benchmark and one seed, N samples are paired between a base model (pre) and its
post-trained descendant (post); each sample is correct (1) or not (0) under each model, and shows k
options (k = None for a generative item; ``GENERATIVE`` = 0 in arrays). With n_ab the number of
samples going from a to b:

    acc_pre  = (n_10 + n_11) / N            acc_post = (n_01 + n_11) / N
    F        = n_10 / N   (forgetting)      BT       = n_01 / N   (backward transfer)
    c        = (1 - acc_pre)(1 - acc_post) / (k - 1)      (same chance term for F and BT)
    F_true   = max(F - c, 0)                BT_true  = max(BT - c, 0)
    F_max    = max((k acc_pre - 1) / (k - 1), 0)  BT_max = max((k acc_post - 1) / (k - 1), 0)

c is the flip rate two guessers would produce: a sample wrong under both models was guessed at
random among k options, and a guess that moves from a wrong option to the right one (or back)
looks like a flip. Generative items have no chance term (c = 0, F_max = acc_pre,
BT_max = acc_post). Where a benchmark mixes option counts, the chance term and the ceilings are
computed per k-group and combined with group-size weights n_g / N.

Aggregation (``aggregate_columns``) is the paper's "macro" mean by default: per (pair, seed,
category) the unweighted mean of benchmark values, then mean and sample standard deviation (ddof=1)
across seeds; "Total" is the per-seed mean over categories. The "micro" variant weights benchmarks
by their sample counts. Beyond the paper: McNemar's exact test, a paired bootstrap CI and a
seed-vs-seed noise floor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from forgetmap.core import vocabularies
from forgetmap.core.distributions import binomial_cdf, student_t_quantile
from numpy.typing import ArrayLike

TOTAL = "Total"

OUTSIDE_TOTAL = frozenset({"Uncategorized", "Not scored"})
"""Categories shown as columns of their own but kept out of "Total": benchmarks the taxonomy does
not know and the source did not categorize, and tasks the paper ran but did not score
(``forgetmap.core.taxonomy.UNCATEGORIZED`` and ``forgetmap.core.taxonomy.NOT_SCORED``)."""
VALUE_FIELDS = ("f_true", "bt_true", "f", "bt", "f_max", "bt_max")


@dataclass(frozen=True)
class Transitions:
    """Counts of the four (pre, post) correctness transitions for one group of samples."""

    n_00: int = 0
    n_01: int = 0
    n_10: int = 0
    n_11: int = 0

    def __post_init__(self) -> None:
        for name in ("n_00", "n_01", "n_10", "n_11"):
            value = getattr(self, name)
            if value < 0 or int(value) != value:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")

    @property
    def n(self) -> int:
        return self.n_00 + self.n_01 + self.n_10 + self.n_11

    def __add__(self, other: Transitions) -> Transitions:
        return Transitions(
            self.n_00 + other.n_00,
            self.n_01 + other.n_01,
            self.n_10 + other.n_10,
            self.n_11 + other.n_11,
        )

    def swapped(self) -> Transitions:
        """The same samples seen from post to pre."""
        return Transitions(self.n_00, self.n_10, self.n_01, self.n_11)


def count_transitions(
    pre: Sequence[int] | np.ndarray, post: Sequence[int] | np.ndarray
) -> Transitions:
    """Count transitions between two aligned 0/1 correctness vectors."""
    a = np.asarray(pre)
    b = np.asarray(post)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"pre and post must be 1-d and aligned, got shapes {a.shape} and {b.shape}"
        )
    if not (np.isin(a, (0, 1)).all() and np.isin(b, (0, 1)).all()):
        raise ValueError("correctness values must be 0 or 1")
    a = a.astype(bool)
    b = b.astype(bool)
    return Transitions(
        n_00=int(np.sum(~a & ~b)),
        n_01=int(np.sum(~a & b)),
        n_10=int(np.sum(a & ~b)),
        n_11=int(np.sum(a & b)),
    )


GENERATIVE = 0
"""The option count of a generative item in arrays of option counts (numpy integer arrays hold no
None): ``scores_from_arrays``, the map's count tables and the adaptive sampler all write 0. The
Python-level API (``benchmark_scores``' group keys, ``chance_term``, ``ceiling``) spells the same
item ``k = None`` and turns it into this code before any arithmetic (``_option_count``)."""


def _option_count(k: int | None) -> int:
    """``k`` (None: generative) as an array code; a ValueError for anything but None or k >= 2."""
    if k is not None and (int(k) != k or k < 2):
        raise ValueError(f"number of options k must be an integer >= 2 or None, got {k!r}")
    return GENERATIVE if k is None else int(k)


def _option_counts(k: np.ndarray | Sequence[int] | int) -> np.ndarray:
    """Option-count codes as floats, checked: integers >= 2, or ``GENERATIVE``."""
    k = np.asarray(k, dtype=np.float64)
    bad = ((k < 2) & (k != GENERATIVE)) | (k != np.floor(k))
    if bad.any():
        raise ValueError(
            f"option counts must be integers >= 2 or {GENERATIVE} (generative), got {k[bad][0]!r}"
        )
    return k


def chance_and_ceilings(
    acc_pre: np.ndarray | float, acc_post: np.ndarray | float, k: np.ndarray | Sequence[int] | int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chance term and both ceilings of groups of samples shown k options, elementwise.

    With a group's accuracies before and after and its option count k (the paper's Eqs., "Mapping
    Post-Training Forgetting in Language Models at Scale", arXiv 2510.17776):

        c      = (1 - acc_pre)(1 - acc_post) / (k - 1)
        F_max  = max((k acc_pre - 1) / (k - 1), 0)  BT_max = max((k acc_post - 1) / (k - 1), 0)

    Generative groups (``k == GENERATIVE``, i.e. 0: no options to guess among) have c = 0,
    F_max = acc_pre and BT_max = acc_post. The only implementation of these formulas: the scalar
    ``chance_term`` and ``ceiling`` and every scorer call it. Returns (c, F_max, BT_max) as arrays.
    """
    acc_pre = np.asarray(acc_pre, dtype=np.float64)
    acc_post = np.asarray(acc_post, dtype=np.float64)
    k = _option_counts(k)
    generative = k == GENERATIVE
    km1 = np.where(generative, 1.0, k - 1.0)
    chance = np.where(generative, 0.0, (1 - acc_pre) * (1 - acc_post) / km1)
    f_max = np.where(generative, acc_pre, np.maximum((k * acc_pre - 1) / km1, 0.0))
    bt_max = np.where(generative, acc_post, np.maximum((k * acc_post - 1) / km1, 0.0))
    return chance, f_max, bt_max


def chance_term(acc_pre: float, acc_post: float, k: int | None) -> float:
    """c = (1 - acc_pre)(1 - acc_post) / (k - 1); 0 for generative items (k = None).
    One group's value of ``chance_and_ceilings``."""
    return float(chance_and_ceilings(acc_pre, acc_post, _option_count(k))[0])


def ceiling(acc: float, k: int | None) -> float:
    """Largest chance-adjusted flip rate possible at accuracy ``acc``: max((k acc - 1)/(k - 1), 0).

    For generative items (k = None) the ceiling is ``acc`` itself. One group's F_max of
    ``chance_and_ceilings``.
    """
    return float(chance_and_ceilings(acc, acc, _option_count(k))[1])


@dataclass(frozen=True)
class BenchmarkScores:
    """Every per-benchmark, per-seed quantity of the public contract (fractions in [0, 1])."""

    n: int
    num_choices: int | None
    acc_pre: float
    acc_post: float
    n_00: int
    n_01: int
    n_10: int
    n_11: int
    f: float
    bt: float
    f_chance: float
    bt_chance: float
    f_true: float
    bt_true: float
    f_max: float
    bt_max: float
    # option counts present, with sample counts, when k is mixed; empty otherwise
    k_groups: Mapping[int | None, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


SCORE_FIELDS = (
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
"""The rates ``scores_from_arrays`` returns beside the counts ``n`` and ``n_00`` .. ``n_11``."""


def benchmark_scores(
    groups: Mapping[int | None, Transitions] | Transitions, k: int | None = None
) -> BenchmarkScores:
    """Scores for one benchmark and seed: ``scores_from_arrays`` on its k-groups.

    ``groups`` maps each option count k (None = generative) to the transitions of the samples shown
    that many options; a bare ``Transitions`` with ``k`` is the single-group case. The chance term
    and the ceilings are computed per group from that group's accuracies and summed with weights
    n_g / N, so a benchmark that mixes 2- and 4-option questions is adjusted for each as it was
    shown (the paper's released code assumed k = 4 where it lacked an entry; we do not).
    """
    if isinstance(groups, Transitions):
        groups = {k: groups}
    codes = [_option_count(key) for key in groups]
    kept = [(key, code, t) for (key, t), code in zip(groups.items(), codes, strict=True) if t.n > 0]
    if not kept:
        raise ValueError("cannot score a benchmark with no paired samples")
    cells = np.array([[t.n_00, t.n_01, t.n_10, t.n_11] for _, _, t in kept], dtype=np.int64)
    n_00, n_01, n_10, n_11 = cells.T
    s = scores_from_arrays(
        n_00, n_01, n_10, n_11, [code for _, code, _ in kept], np.zeros(len(kept), np.int64)
    )
    keys = [key for key, _, _ in kept]
    rates: dict[str, Any] = {name: float(s[name][0]) for name in SCORE_FIELDS}
    return BenchmarkScores(
        n=int(s["n"][0]),
        num_choices=keys[0] if len(keys) == 1 else None,
        **{name: int(s[name][0]) for name in ("n_00", "n_01", "n_10", "n_11")},
        **rates,
        k_groups={key: t.n for key, _, t in kept} if len(keys) > 1 else {},
    )


def scores_from_arrays(
    n_00: np.ndarray,
    n_01: np.ndarray,
    n_10: np.ndarray,
    n_11: np.ndarray,
    k: np.ndarray | Sequence[int],
    group: np.ndarray,
) -> dict[str, np.ndarray]:
    """Scores of many (benchmark, seed) units at once (module docstring for the formulas).

    Each input row is one k-group of one unit; ``group`` holds the unit index of each row (0..U-1,
    rows of a unit contiguous or not). ``k`` is the option count, ``GENERATIVE`` (0) for generative
    groups. Per group ``chance_and_ceilings``; per unit their sums weighted n_g / N. Returns arrays
    of length U: ``n``, ``n_00`` .. ``n_11`` and ``SCORE_FIELDS``.
    """
    n_00, n_01, n_10, n_11 = (np.asarray(x, dtype=np.float64) for x in (n_00, n_01, n_10, n_11))
    group = np.asarray(group, dtype=np.int64)
    units = int(group.max()) + 1 if group.size else 0
    n_g = n_00 + n_01 + n_10 + n_11
    if np.any(n_g <= 0):
        raise ValueError("every k-group row needs at least one sample")
    chance_g, fmax_g, btmax_g = chance_and_ceilings((n_10 + n_11) / n_g, (n_01 + n_11) / n_g, k)

    def total(x: np.ndarray) -> np.ndarray:
        return np.bincount(group, weights=x, minlength=units)

    n = total(n_g)
    out = {
        "n": n.astype(np.int64),
        "n_00": total(n_00).astype(np.int64),
        "n_01": total(n_01).astype(np.int64),
        "n_10": total(n_10).astype(np.int64),
        "n_11": total(n_11).astype(np.int64),
    }
    chance = total(chance_g * n_g) / n
    out["acc_pre"] = total(n_10 + n_11) / n
    out["acc_post"] = total(n_01 + n_11) / n
    out["f"] = out["n_10"] / n
    out["bt"] = out["n_01"] / n
    out["f_chance"] = chance
    out["bt_chance"] = chance
    out["f_true"] = np.maximum(out["f"] - chance, 0.0)
    out["bt_true"] = np.maximum(out["bt"] - chance, 0.0)
    out["f_max"] = total(fmax_g * n_g) / n
    out["bt_max"] = total(btmax_g * n_g) / n
    return out


# ---------------------------------------------------------------------------------------------
# Derived metrics (what the map can colour besides F_true and BT_true)


def net_transfer(f_true: np.ndarray, bt_true: np.ndarray) -> np.ndarray:
    """net = BT_true - F_true: what post-training gave back minus what it took, chance-adjusted
    (positive: more 0->1 than 1->0 flips beyond chance; in [-1, 1]). Of aggregated values (means
    over benchmarks or seeds) it is the difference of the means."""
    return np.asarray(bt_true, dtype=np.float64) - np.asarray(f_true, dtype=np.float64)


def relative_forgetting(f_true: np.ndarray, f_max: np.ndarray) -> np.ndarray:
    """F_true / F_max: the share of what the base could forget beyond chance that it did forget
    (F_max = max((k acc_pre - 1)/(k - 1), 0)). Usually in [0, 1], but not bounded by 1: where
    post-training also turns wrong answers right, F_true can exceed F_max (acc_pre = .5, every
    answer swapped, k = 4: F_true = .42 > F_max = .33). NaN where F_max = 0 (a base at or below
    chance has nothing to forget). Of aggregated values it is the ratio of the means."""
    f_true = np.asarray(f_true, dtype=np.float64)
    f_max = np.asarray(f_max, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(f_max > 0, f_true / np.where(f_max > 0, f_max, 1.0), np.nan)


# ---------------------------------------------------------------------------------------------
# Significance, uncertainty and noise


def mcnemar_exact(n_01: ArrayLike, n_10: ArrayLike) -> float | np.ndarray:
    """Two-sided exact McNemar p-value for paired binary outcomes (scalars or arrays).

    Under H0 (no systematic change) each discordant sample is a fair coin between 0->1 and 1->0:
    p = min(1, 2 * P[Binomial(n_01 + n_10, 1/2) <= min(n_01, n_10)]). 1.0 with no discordant pair.
    """
    a = np.asarray(n_01)
    b = np.asarray(n_10)
    if np.any(a < 0) or np.any(b < 0):
        raise ValueError("counts must be non-negative")
    discordant = a + b
    p = np.where(
        discordant > 0, np.minimum(1.0, 2.0 * binomial_cdf(np.minimum(a, b), discordant, 0.5)), 1.0
    )
    return float(p) if p.ndim == 0 else p


def benjamini_hochberg(p_values: ArrayLike) -> np.ndarray:
    """Benjamini-Hochberg step-up adjusted p-values of one family of tests (any shape).

    With the m non-NaN p-values sorted, p_(1) <= ... <= p_(m):
    p_adj_(i) = min(1, min_{j >= i} m p_(j) / j); rejecting p_adj <= q keeps the false discovery
    rate at q (independent or positively dependent tests). Benjamini & Hochberg (1995),
    "Controlling the false discovery rate", JRSS-B 57(1):289-300. NaN (no test) stays NaN and is
    not counted in m.
    """
    p = np.asarray(p_values, dtype=np.float64)
    tested = ~np.isnan(p)
    if np.any((p[tested] < 0) | (p[tested] > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    out = np.full(p.shape, np.nan)
    x = p[tested]
    order = np.argsort(x, kind="stable")
    scaled = x[order] * x.size / np.arange(1, x.size + 1)
    adjusted = np.empty(x.size)
    adjusted[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    out[tested] = adjusted
    return out


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def bootstrap_ci(
    groups: Mapping[int | None, Transitions]
    | Transitions
    | Sequence[Mapping[int | None, Transitions]],
    k: int | None = None,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Interval]:
    """Percentile bootstrap CIs of F_true and BT_true, resampling samples with their pairing kept.

    Resampling N paired samples with replacement is a multinomial draw over the (k-group,
    transition) cells with probabilities count / N, so the bootstrap needs only the counts and is
    exact in distribution to resampling the per-sample rows. ``groups`` may also be a list with one
    entry per seed: each seed is resampled on its own and the statistic is the mean across seeds
    (as the map reports it). Returns {"f_true": Interval, "bt_true": Interval}.
    """
    if isinstance(groups, (Transitions, Mapping)):
        per_seed = [groups]
    else:
        per_seed = list(groups)
    if not per_seed:
        raise ValueError("cannot bootstrap a benchmark with no paired samples")
    rng = np.random.default_rng(seed)
    totals = {"f_true": np.zeros(n_boot), "bt_true": np.zeros(n_boot)}
    for entry in per_seed:
        entry = {k: entry} if isinstance(entry, Transitions) else entry
        keys = [key for key, t in entry.items() if t.n > 0]
        cells = np.array(
            [[entry[key].n_00, entry[key].n_01, entry[key].n_10, entry[key].n_11] for key in keys],
            dtype=np.float64,
        ).reshape(len(keys), 4)
        n = int(cells.sum())
        if n == 0:
            raise ValueError("cannot bootstrap a benchmark with no paired samples")
        draws = rng.multinomial(n, cells.ravel() / n, size=n_boot).reshape(-1, 4)
        k_rows = np.tile(np.array([_option_count(key) for key in keys], dtype=np.float64), n_boot)
        unit = np.repeat(np.arange(n_boot), len(keys))
        keep = draws.sum(axis=1) > 0
        scores = scores_from_arrays(
            draws[keep, 0], draws[keep, 1], draws[keep, 2], draws[keep, 3], k_rows[keep], unit[keep]
        )
        for name in totals:
            totals[name] += scores[name]
    tail = (1.0 - level) / 2.0
    return {
        name: Interval(
            float(np.quantile(values / len(per_seed), tail)),
            float(np.quantile(values / len(per_seed), 1 - tail)),
        )
        for name, values in totals.items()
    }


@dataclass(frozen=True)
class NoiseFloor:
    """A model's flip rate against itself across seeds (sampling noise, not forgetting)."""

    f: float  # mean one-directional flip rate over seed pairs: (n_01 + n_10) / (2N)
    f_true: float  # the same, chance-adjusted like F_true
    seed_pairs: int


def noise_floor(
    seed_pairs: Iterable[Mapping[int | None, Transitions] | Transitions], k: int | None = None
) -> NoiseFloor | None:
    """Noise floor from the transitions of a model's seed s against its seed t (s < t).

    Re-running the same model with another sampling seed flips some answers both ways; a pair's
    F (or BT) below this level cannot be told apart from resampling. Since the direction between two
    seeds is arbitrary, each seed pair contributes the mean of its two directions, (F + BT) / 2,
    and its chance-adjusted counterpart. Returns None without any seed pair.
    """
    fs, f_trues = [], []
    for groups in seed_pairs:
        s = benchmark_scores(groups, k)
        fs.append((s.f + s.bt) / 2.0)
        f_trues.append((s.f_true + s.bt_true) / 2.0)
    if not fs:
        return None
    return NoiseFloor(f=float(np.mean(fs)), f_true=float(np.mean(f_trues)), seed_pairs=len(fs))


def clears_noise_floor(
    mean: float, std: float | None, seeds: int, floor: float | None, level: float = 0.95
) -> bool | None:
    """Whether a mean across seeds lies above a noise floor beyond its confidence interval.

    The interval is Student's t over the seeds: mean - t_{(1+level)/2, seeds-1} * std / sqrt(seeds)
    must exceed the floor. None when it cannot be decided (one seed: no std; no noise floor).
    """
    margin = t_margin(std, seeds, level)
    if margin is None or floor is None:
        return None
    return bool(mean - margin > floor)


def t_margin(std: float | None, seeds: int, level: float = 0.95) -> float | None:
    """Half-width of the Student-t interval of a mean across seeds:
    t_{(1+level)/2, seeds-1} * std / sqrt(seeds). None with one seed (no std)."""
    if std is None or seeds < 2:
        return None
    return float(student_t_quantile((1 + level) / 2, seeds - 1) * std / np.sqrt(seeds))


def distinct_below(keys: np.ndarray, space: int) -> np.ndarray:
    """np.unique(keys) for integer keys in [0, space): a presence table where the space is at
    most 16 times the keys (sorting 50,000 keys cost 3 ms of a 500-pair map; the table 0.3)."""
    if space <= 16 * keys.size + 4096:
        present = np.zeros(space, dtype=bool)
        present[keys] = True
        return np.flatnonzero(present)
    return np.unique(keys)


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, code of each value): np.unique's answer. Strings are factorized
    through a dict first (sorting thousands of strings costs more than hashing them)."""
    if (
        values.dtype.kind in "iu"
        and values.size
        and 0 <= values.min()
        and values.max() < 4 * values.size + 1024
    ):
        # small non-negative integers (ids, seeds): a presence table instead of a sort
        present = np.zeros(int(values.max()) + 1, dtype=bool)
        present[values] = True
        rank = np.cumsum(present) - 1
        return np.flatnonzero(present).astype(values.dtype), rank[values]
    if values.dtype.kind not in "OUS":
        uniques, inverse = np.unique(values, return_inverse=True)
        return uniques, inverse.reshape(-1)
    first: dict[str, Any] = {}
    codes = np.fromiter(
        (first.setdefault(v, len(first)) for v in values.tolist()), np.int64, count=len(values)
    )
    ordered = sorted(first)
    rank = np.empty(len(first), dtype=np.int64)
    rank[[first[v] for v in ordered]] = np.arange(len(ordered))
    return np.array(ordered, dtype=object), rank[codes]


AGGREGATES = vocabularies.AGGREGATES


def benchmark_weights(n: np.ndarray, how: str) -> np.ndarray:
    """Each benchmark's weight in a mean over benchmarks: 1 under "macro" (the paper's: every
    benchmark counts alike) or its paired sample count n_b under "micro" (every sample alike)."""
    if how not in AGGREGATES:
        raise ValueError(f"aggregation must be 'macro' or 'micro', got {how!r}")
    n = np.asarray(n, dtype=np.float64)
    return n if how == "micro" else np.ones(n.shape)


def mean_weights(key: np.ndarray, n: np.ndarray, how: str, size: int) -> np.ndarray:
    """Each row's share w_b / sum_{b' in its group} w_b' of the mean of its group ``key`` (codes in
    [0, size)), with ``benchmark_weights``: 1/B under macro, n_b / N under micro."""
    weight = benchmark_weights(n, how)
    return np.asarray(weight / np.bincount(key, weights=weight, minlength=size)[key])


def aggregate_columns(
    pair: np.ndarray,
    category: np.ndarray,
    benchmark: np.ndarray,
    seed: np.ndarray,
    n: np.ndarray,
    values: Mapping[str, np.ndarray],
    how: str = "macro",
    outside_total: Iterable[Any] = OUTSIDE_TOTAL,
) -> dict[str, np.ndarray]:
    """Aggregate benchmark values per (pair, category) and per pair for "Total", over columns.

    macro (the paper's): for each (pair, seed, category) the unweighted mean of the benchmark
    values (each already clipped at 0); then mean and sample std (ddof=1) of those per-seed means
    across seeds. Total: per seed the unweighted mean over categories, then mean/std across seeds.
    micro: as macro but every mean is weighted by the benchmarks' paired sample counts, and Total
    weights all benchmarks of the pair by sample count. Seeds are paired upstream (seed s of the
    base with seed s of the post model); a category's seed count is the number of seeds with at
    least one of its benchmarks.

    ``outside_total``: the category values kept out of "Total" (names by default; a caller that
    passes category codes passes the codes of ``OUTSIDE_TOTAL``'s categories).

    One input row per (pair, benchmark, seed). Returns columns with one row per (pair, category)
    and per pair for "Total" (last among its pair's rows; categories in sorted order of
    ``category``): ``pair``, ``category`` (None marks Total), ``n_benchmarks``, ``seeds``, and per
    value field its mean, plus ``f_true_std``/``bt_true_std`` (NaN with one seed). The map uses
    this to aggregate hundreds of thousands of units in milliseconds; a property test holds it to
    the definition above written plainly (tests/unit/test_metrics_properties.py).
    """
    pair = np.asarray(pair)
    weight = benchmark_weights(n, how)
    if pair.size == 0:
        return {}
    pairs, p_code = factorize(pair)
    cats, c_code = factorize(np.asarray(category))
    seeds, s_code = factorize(np.asarray(seed))
    benchmarks, b_code = factorize(np.asarray(benchmark))
    names = [name for name in VALUE_FIELDS if name in values]
    n_p, n_c, n_s = len(pairs), len(cats), len(seeds)
    outside = set(outside_total)
    cat_in_total = np.array([c not in outside for c in cats.tolist()], dtype=bool)
    row_in_total = cat_in_total[c_code]

    def per_seed_means(
        key: np.ndarray, size: int, rows: np.ndarray | None = None
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        keep = slice(None) if rows is None else rows
        w = np.bincount(key[keep], weights=weight[keep], minlength=size)
        present = np.bincount(key[keep], minlength=size) > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            means = {
                name: np.bincount(key[keep], weights=(weight * values[name])[keep], minlength=size)
                / w
                for name in names
            }
        return means, present

    # per (pair, category, seed)
    cell = (p_code * n_c + c_code) * n_s + s_code
    cell_means, cell_present = per_seed_means(cell, n_p * n_c * n_s)
    # Total per (pair, seed): macro = mean over the categories present, micro = over all samples
    if how == "micro":
        total_means, total_present = per_seed_means(p_code * n_s + s_code, n_p * n_s, row_in_total)
    else:
        shaped = cell_present.reshape(n_p, n_c, n_s) & cat_in_total[None, :, None]
        counts = shaped.sum(axis=1)
        total_present = (counts > 0).reshape(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            total_means = {
                name: (
                    np.where(shaped, cell_means[name].reshape(n_p, n_c, n_s), 0.0).sum(axis=1)
                    / counts
                ).reshape(-1)
                for name in names
            }

    def across_seeds(
        means: dict[str, Any], present: np.ndarray, groups: int
    ) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], np.ndarray]:
        shaped_present = present.reshape(groups, n_s)
        k = shaped_present.sum(axis=1)
        out = {}
        for name in names:
            x = np.where(shaped_present, means[name].reshape(groups, n_s), 0.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = x.sum(axis=1) / k
                sq = np.where(
                    shaped_present, (means[name].reshape(groups, n_s) - mean[:, None]) ** 2, 0.0
                )
                std = np.sqrt(sq.sum(axis=1) / (k - 1))
            out[name] = (mean, std)
        return out, k

    cat_stats, cat_seeds = across_seeds(cell_means, cell_present, n_p * n_c)
    tot_stats, tot_seeds = across_seeds(total_means, total_present, n_p)
    # distinct benchmarks per (pair, category) and per pair, from one integer key per row
    n_b = len(benchmarks)
    bench_key = distinct_below((p_code * n_c + c_code) * n_b + b_code, n_p * n_c * n_b)
    cat_benchmarks = np.bincount(bench_key // n_b, minlength=n_p * n_c)
    tot_benchmarks = np.bincount(
        distinct_below((p_code * n_b + b_code)[row_in_total], n_p * n_b) // n_b, minlength=n_p
    )

    # rows: per pair, its categories present (in code order), then its Total (when the pair has
    # a category that counts toward it)
    cat_rows = np.flatnonzero(cat_seeds > 0)
    tot_rows = np.flatnonzero(tot_seeds > 0)
    order = np.argsort(
        np.concatenate(
            [(cat_rows // n_c) * (n_c + 1) + cat_rows % n_c, tot_rows * (n_c + 1) + n_c]
        ),
        kind="stable",
    )
    is_total = np.concatenate([np.zeros(len(cat_rows), bool), np.ones(len(tot_rows), bool)])[order]
    p_of = np.concatenate([cat_rows // n_c, tot_rows])[order]
    c_of = np.concatenate([cat_rows % n_c, np.zeros(len(tot_rows), np.int64)])[order]
    cat_values = np.asarray(cats, dtype=object)[c_of]
    cat_values[is_total] = None
    out = {
        "pair": pairs[p_of],
        "category": cat_values,
        "n_benchmarks": np.concatenate([cat_benchmarks[cat_rows], tot_benchmarks[tot_rows]])[order],
        "seeds": np.concatenate([cat_seeds[cat_rows], tot_seeds[tot_rows]])[order],
    }
    for name in names:
        for suffix, part in (("", 0), ("_std", 1)):
            if suffix and name not in ("f_true", "bt_true"):
                continue
            out[name + suffix] = np.concatenate(
                [cat_stats[name][part][cat_rows], tot_stats[name][part][tot_rows]]
            )[order]
    return out


def aggregate_arrays(
    pair: np.ndarray,
    category: np.ndarray,
    benchmark: np.ndarray,
    seed: np.ndarray,
    n: np.ndarray,
    values: Mapping[str, np.ndarray],
    how: str = "macro",
) -> list[dict[str, Any]]:
    """``aggregate_columns`` as one dict per (pair, category) and per pair for "Total": ``pair``,
    ``category``, ``n_benchmarks``, ``seeds``, the value fields and ``f_true_std``/``bt_true_std``
    (None with one seed)."""
    cols = aggregate_columns(pair, category, benchmark, seed, n, values, how)
    if not cols:
        return []
    names = [name for name in VALUE_FIELDS if name in values]
    out = []
    for i in range(len(cols["pair"])):
        p = cols["pair"][i]
        seeds_n = int(cols["seeds"][i])
        row = {
            "pair": p.item() if hasattr(p, "item") else p,
            "category": TOTAL if cols["category"][i] is None else str(cols["category"][i]),
            "n_benchmarks": int(cols["n_benchmarks"][i]),
            "seeds": seeds_n,
        }
        for name in names:
            row[name] = float(cols[name][i])
            if name in ("f_true", "bt_true"):
                row[f"{name}_std"] = float(cols[name + "_std"][i]) if seeds_n > 1 else None
        out.append(row)
    return out
