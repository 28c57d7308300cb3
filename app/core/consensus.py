"""Agreement across seeds: the paper's consensus counts, their ratios and a reliable-change flag.

Pure numpy, no I/O. After the release of "Mapping Post-Training Forgetting in Language Models at
Scale" (ICLR 2026, arXiv 2510.17776; github.com/post-forget/post-forget):
``compute_cross_seed_statistics`` in ``src/analyze/process_data.py`` and the "Adj. 2 Seed"
columns of ``src/analyze/create_csv.py``.

For one benchmark, S seeds and N samples, seed s gives each sample i a transition
t_s(i) in {0->0, 0->1, 1->0, 1->1} (base correct -> post correct), or none when either answer
is missing. For a group size k = 2 .. min(S, 3) and each of the C(S, k) combinations G of k seeds:

    n_ab(G)   = #{ i : t_s(i) = a->b for every s in G }          (all k seeds show the same flip)
    m_ab(k)   = mean over G of n_ab(G)       v_ab(k) = population variance (ddof 0) over G

The release's robust ratios use k = 2, with M = m_00(2) + m_01(2) + m_10(2) + m_11(2):

    f_consensus  = m_10(2) / M     ("Adj. 2 Seed Abs. Forgetting")
    bt_consensus = m_01(2) / M     ("Adj. 2 Seed Abs. Improvement")

Their chance-adjusted forms apply forgetmap's own chance term (``forgetmap.core.metrics``:
``chance_and_ceilings``, the only implementation of it) to the k = 2 consensus table as if it
were one seed's transition table: per option-count group g (generative: no chance term),
acc_pre_g = (m_10 + m_11) / M_g, acc_post_g = (m_01 + m_11) / M_g,
c_g = (1 - acc_pre_g)(1 - acc_post_g) / (k_g - 1), c = sum_g c_g M_g / M, and

    f_true_consensus  = max(f_consensus - c, 0)      bt_true_consensus = max(bt_consensus - c, 0)

That is F_true's definition with the consensus counts in place of one seed's counts; it
subtracts what two independent guessers would flip, which over-subtracts somewhat where guessing
also has to agree across seeds (conservative: it never adds forgetting).

Alignment. The release aligns seeds by position in each seed's list after dropping the examples
whose metric is missing, over the shortest list; forgetmap aligns by sample (the store's
sample id): a sample counts in a combination only where every seed of it has both answers.
Both agree when every seed misses the same samples (or none); where seeds miss different
samples the release compares different questions at one position and this module does not
(``bench/consensus_release.py`` shows both). A seed with no scored sample at all is left out,
as the release leaves out a seed whose list is empty.

Reliable change (``reliable_changes``): a sample's flip 1->0 (0->1) is reliable when it is that
flip in a strict majority of the S seeds given: 2 x #{s : t_s(i) = 1->0} > S. A seed missing
the sample counts against it.

Beyond the noise floor (``beyond_noise``): a model against itself flips a question between two
seeds at the rate r of its noise floor (the pair's: the mean of both models' seed-vs-seed flip
rates, ``forgetmap.core.metrics.noise_floor``). If the S seeds' flips were that noise alone, a
question would flip in at least m of them with probability P(X >= m), X ~ Binomial(S, r); a flip
is beyond the noise floor when that tail is at most ``NOISE_ALPHA``. Without a noise floor (each
model with one seed) nothing can be told apart from noise: no flip is reliable then. A reliable
change (the drill-down's and the atlas's flag) is both: a strict majority and beyond the noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
from forgetmap.core.distributions import binomial_cdf
from forgetmap.core.metrics import GENERATIVE, chance_and_ceilings

TRANSITIONS = ("0->0", "0->1", "1->0", "1->1")
"""The four transition types, in the order of every count array here (code = 2 base + post)."""

MAX_GROUP_SIZE = 3
"""The release's largest combination (``max_group_size=3``)."""


@dataclass(frozen=True)
class ConsensusCounts:
    """For one group size k: mean and population variance over the C(S, k) seed combinations of
    the number of samples on which all k seeds show each transition (order of ``TRANSITIONS``)."""

    k: int
    combos: int
    mean: np.ndarray
    var: np.ndarray

    def as_dict(self) -> dict[str, Any]:
        """The release's column names: ``mean_count_{k}_seeds_1_0`` and so on."""
        out: dict[str, Any] = {f"num_combos_{self.k}_seeds": self.combos}
        for i, name in enumerate(TRANSITIONS):
            key = name.replace("->", "_")
            out[f"mean_count_{self.k}_seeds_{key}"] = float(self.mean[i])
            out[f"var_count_{self.k}_seeds_{key}"] = float(self.var[i])
        return out


@dataclass(frozen=True)
class Consensus:
    """Consensus counts per group size and the k = 2 ratios (None without two seeds or when no
    two seeds agree anywhere)."""

    seeds: int
    by_k: dict[int, ConsensusCounts] = field(default_factory=dict)
    f_consensus: float | None = None
    bt_consensus: float | None = None
    chance_consensus: float | None = None
    f_true_consensus: float | None = None
    bt_true_consensus: float | None = None


@dataclass(frozen=True)
class ReliableChanges:
    """Per sample: in how many seeds it flipped each way, and whether that is a strict majority."""

    seeds: int
    seeds_10: np.ndarray
    seeds_01: np.ndarray
    forgotten: np.ndarray
    gained: np.ndarray


def transition_codes(
    base: np.ndarray, post: np.ndarray, missing: np.ndarray | None = None
) -> np.ndarray:
    """Per (seed, sample) the transition code 2 base + post (0..3, ``TRANSITIONS``), -1 where
    either answer is NaN or ``missing`` is True. ``base``, ``post``: shape (seeds, samples),
    values 0, 1 or NaN, aligned by sample."""
    b = np.asarray(base, dtype=np.float64)
    p = np.asarray(post, dtype=np.float64)
    if b.ndim != 2 or b.shape != p.shape:
        raise ValueError(
            f"base and post must be 2-d (seeds, samples) of one shape, got {b.shape} and {p.shape}"
        )
    gone = np.isnan(b) | np.isnan(p)
    if missing is not None:
        m = np.asarray(missing)
        if m.shape != b.shape or m.dtype != np.bool_:
            raise ValueError(f"missing must be a bool array of shape {b.shape}, got {m.shape}")
        gone |= m
    if not (np.isin(b[~gone], (0, 1)).all() and np.isin(p[~gone], (0, 1)).all()):
        raise ValueError("correctness values must be 0, 1 or NaN (missing)")
    codes = np.where(gone, -1, 2 * np.nan_to_num(b) + np.nan_to_num(p))
    return codes.astype(np.int8)


def consensus(
    base: np.ndarray,
    post: np.ndarray,
    *,
    missing: np.ndarray | None = None,
    num_choices: int | None | np.ndarray = None,
    max_group_size: int = MAX_GROUP_SIZE,
) -> Consensus:
    """The consensus counts per k and the four ratios of the module docstring.

    ``base``, ``post``: (seeds, samples) correctness, NaN (or ``missing`` True) for no answer.
    ``num_choices``: the option count of every sample (None: generative), or one per sample
    (``GENERATIVE`` = 0 for generative ones), for the chance term only.
    """
    if int(max_group_size) != max_group_size or max_group_size < 2:
        raise ValueError(f"max_group_size must be an integer >= 2, got {max_group_size!r}")
    codes = transition_codes(base, post, missing)
    k_per_sample = _sample_option_counts(num_choices, codes.shape[1])
    codes = codes[(codes >= 0).any(axis=1)]  # a seed with nothing scored is no seed here
    seeds = codes.shape[0]
    by_k: dict[int, ConsensusCounts] = {}
    agree_2 = None
    for k in range(2, min(seeds, max_group_size) + 1):
        counts, agree = _combination_counts(codes, k)
        by_k[k] = ConsensusCounts(k, len(counts), counts.mean(axis=0), counts.var(axis=0))
        if k == 2:
            agree_2 = agree / len(counts)  # per sample and type: share of pairs agreeing
    if agree_2 is None or agree_2.sum() == 0:
        return Consensus(seeds, by_k)
    m = by_k[2].mean
    total = m.sum()  # the release's denominator: the sum of the four mean counts
    f, bt = float(m[2] / total), float(m[1] / total)
    chance = _chance(agree_2, k_per_sample)
    return Consensus(
        seeds,
        by_k,
        f_consensus=f,
        bt_consensus=bt,
        chance_consensus=chance,
        f_true_consensus=max(f - chance, 0.0),
        bt_true_consensus=max(bt - chance, 0.0),
    )


def _sample_option_counts(num_choices: int | None | np.ndarray, samples: int) -> np.ndarray:
    """Option counts per sample as floats (None: generative), checked by ``chance_and_ceilings``."""
    if num_choices is None:
        return np.full(samples, GENERATIVE, dtype=np.float64)
    k = np.asarray(num_choices, dtype=np.float64)
    if k.ndim > 1 or (k.ndim == 1 and k.shape[0] != samples):
        raise ValueError(
            f"num_choices must be one count or one per sample ({samples}), got {k.shape}"
        )
    k = np.broadcast_to(k, (samples,))
    chance_and_ceilings(np.zeros(k.shape), np.zeros(k.shape), k)  # raises on a bad count
    return k


def _combination_counts(codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per combination of k seeds its four counts (rows), and per (type, sample) in how many
    combinations all k seeds agree on that type."""
    counts = []
    agree = np.zeros((4, codes.shape[1]), dtype=np.int64)
    for combo in combinations(range(codes.shape[0]), k):
        rows = codes[list(combo)]
        same = (rows == rows[0]).all(axis=0) & (rows[0] >= 0)
        kind = rows[0][same].astype(np.int64)
        counts.append(np.bincount(kind, minlength=4))
        np.add.at(agree, (kind, np.flatnonzero(same)), 1)
    return np.asarray(counts, dtype=np.float64), agree


def _chance(agree: np.ndarray, k: np.ndarray) -> float:
    """c = sum_g c_g M_g / M over option-count groups of the consensus table (module docstring)."""
    chance = 0.0
    for value in np.unique(k):
        m = agree[:, k == value].sum(axis=1)
        size = m.sum()
        if size == 0:
            continue
        c_g = chance_and_ceilings((m[2] + m[3]) / size, (m[1] + m[3]) / size, np.asarray(value))[0]
        chance += float(c_g) * size
    return chance / float(agree.sum())


def reliable_changes(
    base: np.ndarray, post: np.ndarray, *, missing: np.ndarray | None = None
) -> ReliableChanges:
    """Per sample, whether its 1->0 (``forgotten``) or 0->1 (``gained``) flip is the same flip in a
    strict majority of the seeds given (module docstring; missing answers count against)."""
    codes = transition_codes(base, post, missing)
    seeds = codes.shape[0]
    if seeds == 0:
        raise ValueError("reliable_changes needs at least one seed")
    seeds_10 = (codes == 2).sum(axis=0)
    seeds_01 = (codes == 1).sum(axis=0)
    return ReliableChanges(
        seeds=seeds,
        seeds_10=seeds_10,
        seeds_01=seeds_01,
        forgotten=2 * seeds_10 > seeds,
        gained=2 * seeds_01 > seeds,
    )


NOISE_ALPHA = 0.05
"""The largest chance that seed noise alone flips a question as often as it flipped, for that
flip to count as beyond the noise floor."""


def beyond_noise(
    seeds_flipped: np.ndarray, seeds: np.ndarray, noise_floor: np.ndarray
) -> np.ndarray:
    """Per question: whether flipping in ``seeds_flipped`` of ``seeds`` seeds is unlikely
    (P <= ``NOISE_ALPHA``) under seed noise at the rate ``noise_floor`` (NaN: not known -> False);
    the binomial upper tail P(X >= m) = 1 - F(m - 1; S, r)."""
    m = np.asarray(seeds_flipped, dtype=np.int64)
    s = np.asarray(seeds, dtype=np.int64)
    r = np.asarray(noise_floor, dtype=np.float64)
    known = ~np.isnan(r) & (m >= 1) & (s >= 1)
    tail = np.ones(np.broadcast(m, s, r).shape)
    if known.any():
        mk, sk, rk = (np.broadcast_to(a, tail.shape)[known] for a in (m, s, r))
        tail[known] = 1.0 - binomial_cdf(mk - 1, sk, np.clip(rk, 0.0, 1.0))
    return known & (tail <= NOISE_ALPHA)


def reliable_flags(
    seeds_flipped: np.ndarray, seeds: np.ndarray, noise_floor: np.ndarray
) -> np.ndarray:
    """Per question: a reliable change, flipped in a strict majority of its seeds and beyond the
    noise floor (module docstring)."""
    m = np.asarray(seeds_flipped, dtype=np.int64)
    return np.asarray(
        (2 * m > np.asarray(seeds, dtype=np.int64)) & beyond_noise(m, seeds, noise_floor)
    )


def reliable_threshold(seeds: np.ndarray, noise_floor: np.ndarray) -> np.ndarray:
    """Per (pair, benchmark) with ``seeds`` seeds and noise floor ``noise_floor``: the fewest seeds
    a question must flip in for a reliable change (``reliable_flags``), or seeds + 1 where no
    count is (a single seed at a loud floor, or no floor known). A count query can then test
    ``flipped >= threshold`` without the binomial tail."""
    s = np.asarray(seeds, dtype=np.int64)
    r = np.asarray(noise_floor, dtype=np.float64)
    out = s + 1
    for m in range(int(s.max(initial=0)), 0, -1):  # the smallest m that qualifies wins
        ok = (m <= s) & reliable_flags(np.full(s.shape, m), s, r)
        out = np.where(ok, m, out)
    return out
