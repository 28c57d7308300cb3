r"""Recoverability: how much of a post-trained model's loss rise a logit bias and a temperature
undo.

The fitting core (numpy + scipy, no I/O, no torch): token statistics, corrections and their fits,
per-document loss sums. The shares read from those sums are in
``app/analysis/recoverability_shares.py``. Scoring the models (torch, transformers) lives in
``worker/recoverability_scoring.py``; it produces the :class:`TokenStats` used here.

Corrections
-----------
Token t of a document has target y_t and next-token logits z_t over the vocabulary V. A correction
with temperature T (beta = 1/T) and bias b, b nonzero only on S (the K most frequent target tokens
of the FIT documents, K = 4096 by default, capped at the tokens seen)::

    log p'_t(v) = beta z_tv + b_v - log sum_u exp(beta z_tu + b_u)
    nll_t       = -log p'_t(y_t)

Kinds: ``none`` (T = 1, b = 0), ``bias`` (T = 1), ``temp`` (b = 0), ``bias_temp`` (both), and
``closed_bias``, a one-step closed-form bias at T = 1::

    b_k = log(f_k / pbar_k),   f_k = n_k / N,   pbar_k = (1/N) sum_t p_t(k)     (k in S, t in FIT)

(the first multiplicative step of iterative scaling towards the stationarity condition
mean_t p'_t(k) = f_k of the bias fit). The fitted kinds minimize, by L-BFGS-B over
(log T, b_S)::

    J(T, b) = (1/N) sum_{t in FIT_train} nll_t + lambda ||b||^2

with lambda (``bias``, ``bias_temp``) chosen from ``L2_GRID`` by the mean nll on FIT_select. The
gradients are exact::

    dJ/db_k    = (1/N) sum_t (p'_t(k) - [y_t = k]) + 2 lambda b_k
    dJ/dbeta   = (1/N) sum_t (E_{p'_t}[z_t] - z_{t,y_t})

Numerics: each function evaluation is one streaming pass over the FIT_train rows in float32
(one multiply-add, one exp, row sums, one weighted column sum, one row-wise dot), accumulated in
float64 per chunk; rounding is kept consistent between the terms so J is smooth to ~1e-9 (see
``_pass``), hence ``FTOL = 1e-8``. The bias is optimized in preconditioned coordinates
b_k sqrt(n_k / N + 2 lambda) (rare tokens otherwise crawl). Measured on 2 shared CPU cores
(bench/recover.py, V = 501): 0.5-0.9M token-passes/s, ~90-150 passes for a whole 5-lambda path,
a few passes for a temperature alone.

Splits (document level, seeded, :func:`split_documents`): EVAL is held out; the FIT documents, in
corpus order, give FIT_train (first 90%) and FIT_select (last 10%). Corrections are fitted once per
model, on that model's own scores: the symmetric share fits the same form separately on the base.

Sufficient statistics and memory
--------------------------------
Only beta, and b on S, vary. Logits are stored shifted by their per-token maximum,
zt = z - max_v z_v (the shift cancels in every nll and keeps small values precise in float16).
Per token the fit needs:

- ``target_logit`` zt_{y_t} (float32) and the target id;
- ``logits``: zt on a *kept* set of token ids, a superset of S (N x K_kept, float32 or float16);
- when the kept set is not the whole vocabulary, the log-partition of the rest (the complement R)
  as a function of beta. It is one scalar per token at T = 1 (enough for ``bias`` and
  ``closed_bias``), but a temperature needs all of it, so it is tabulated on a grid of
  u = log beta (``LOG_BETA_GRID``: 97 points, T in [1/8, 8]) with its derivative::

      C_t(u)   = log sum_{v in R} exp(e^u zt_tv)
      C'_t(u)  = e^u sum_{v in R} softmax(e^u zt_t)_v zt_tv          (= dC/du)

  and read by cubic Hermite interpolation (error ~ h^4/384 max|C''''|, h = 0.043: below 1e-5 nats
  on tiny models, checked against the full logits in the tests). T is bounded to the grid.

Memory per token: 4 + 4 + K_kept x (4 | 2) [+ 2 x 97 x 4] bytes. A tiny model (V ~ 500) keeps the
full vocabulary in float32: 2 kB/token, 20 MB for 10k tokens, and the temperature is exact. A real
vocabulary (V = 32k..152k) keeps only S (K = 4096) in float16 plus the grid: ~8.9 kB/token, so 1M
tokens take ~8.9 GB per model (instead of 0.6 TB of full float32 logits); the scorer can write the
arrays to .npy memory maps and every pass here streams over rows in chunks, so the fit runs in
bounded memory. The alternative, recomputing the forward pass at every L-BFGS evaluation, costs
~100 forward passes per fit and is not used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from forgetmap.core.recoverability_names import DEFAULT_K
from scipy.optimize import minimize

KINDS = ("bias", "temp", "bias_temp", "closed_bias")
ALL_CORRECTIONS = ("none", *KINDS)
SPLITS = ("fit_train", "fit_select", "eval")
L2_GRID = (1e-3, 1e-4, 1e-5, 1e-6, 0.0)
T_RANGE = 8.0  # the grid covers T in [1/T_RANGE, T_RANGE]
LOG_BETA_GRID = np.linspace(-math.log(T_RANGE), math.log(T_RANGE), 97)
# L-BFGS-B stops: relative decrease of J per iteration, projected gradient. The float32 passes
# give J to ~1e-9, so a smaller FTOL only makes line searches fail.
FTOL, GTOL = 1e-8, 1e-6
_CHUNK_ELEMENTS = 1 << 21  # rows per chunk x kept columns, for streaming passes
_GATHER_LIMIT = 1 << 31  # bytes: fit rows up to this size are copied once and kept in memory


# ----------------------------------------------------------------------------------------------
# Token statistics
# ----------------------------------------------------------------------------------------------
@dataclass
class TokenStats:
    """Per-token sufficient statistics of one model on a list of documents (see module doc).

    Document d owns rows ``offsets[d]:offsets[d + 1]`` (every document has at least one row).
    ``kept`` lists the token ids whose shifted logits are stored, in column order; ``comp`` and
    ``comp_du`` (N x G, on ``log_beta_grid``) summarize the other tokens and are None when every
    token is kept.
    """

    offsets: np.ndarray
    targets: np.ndarray
    target_logit: np.ndarray
    kept: np.ndarray
    logits: np.ndarray
    vocab_size: int
    comp: np.ndarray | None = None
    comp_du: np.ndarray | None = None
    log_beta_grid: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.offsets = np.asarray(self.offsets, dtype=np.int64)
        n = int(self.offsets[-1])
        if self.offsets[0] != 0 or np.any(np.diff(self.offsets) < 1):
            raise ValueError("offsets must start at 0 and give every document at least one token")
        if len(self.targets) != n or len(self.target_logit) != n or self.logits.shape[0] != n:
            raise ValueError("targets, target_logit and logits need one row per token")
        if self.logits.shape[1] != len(self.kept):
            raise ValueError("logits need one column per kept token")
        if (self.comp is None) != (len(self.kept) == self.vocab_size):
            raise ValueError("comp is needed exactly when some tokens are not kept")
        if self.comp is not None:
            if self.log_beta_grid is None or self.comp_du is None:
                raise ValueError("comp needs comp_du and log_beta_grid")
            if not np.any(np.isclose(self.log_beta_grid, 0.0, atol=1e-12)):
                raise ValueError("log_beta_grid must contain 0 (T = 1)")
        self._col = np.full(self.vocab_size, -1, dtype=np.int64)
        self._col[np.asarray(self.kept, dtype=np.int64)] = np.arange(len(self.kept))

    @property
    def n_docs(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.offsets[-1])

    @property
    def doc_tokens(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def full(self) -> bool:
        """True when every token's logit is kept (temperature fits are then exact)."""
        return self.comp is None

    def columns(self, token_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Column of each token id in ``logits`` (ValueError for a token that is not kept)."""
        ids = np.asarray(token_ids, dtype=np.int64)
        cols = self._col[ids]
        if np.any(cols < 0):
            raise ValueError(f"tokens not kept in these statistics: {ids[cols < 0][:10].tolist()}")
        return cols

    def rows_of(self, doc_mask: np.ndarray) -> np.ndarray:
        """Row indices of the documents selected by a boolean mask (in document order)."""
        docs = np.flatnonzero(np.asarray(doc_mask, dtype=bool))
        if len(docs) == 0:
            return np.zeros(0, dtype=np.int64)
        starts, ends = self.offsets[docs], self.offsets[docs + 1]
        return np.concatenate([np.arange(s, e) for s, e in zip(starts, ends, strict=True)])

    def nbytes(self) -> int:
        arrays = [self.targets, self.target_logit, self.logits, self.comp, self.comp_du]
        return int(sum(a.nbytes for a in arrays if a is not None))


# ----------------------------------------------------------------------------------------------
# Splits and the bias support
# ----------------------------------------------------------------------------------------------
def split_documents(
    n_docs: int, *, eval_fraction: float = 0.2, select_fraction: float = 0.1, seed: int = 0
) -> np.ndarray:
    """Split label per document: "eval", "fit_train" or "fit_select" (document level, seeded).

    EVAL: round(eval_fraction n) documents drawn at random (at least 1). The other documents, in
    corpus order, are FIT: its last round(select_fraction n_fit) (at least 1) are FIT_select, the
    rest FIT_train.
    """
    if n_docs < 3:
        raise ValueError(f"need at least 3 documents (eval, fit_train, fit_select), got {n_docs}")
    if not (0 < eval_fraction < 1 and 0 < select_fraction < 1):
        raise ValueError("eval_fraction and select_fraction must be in (0, 1)")
    rng = np.random.default_rng(seed)
    n_eval = min(max(1, round(eval_fraction * n_docs)), n_docs - 2)
    is_eval = np.zeros(n_docs, dtype=bool)
    is_eval[rng.permutation(n_docs)[:n_eval]] = True
    fit = np.flatnonzero(~is_eval)
    n_select = min(max(1, round(select_fraction * len(fit))), len(fit) - 1)
    labels = np.full(n_docs, "eval", dtype=object)
    labels[fit[: len(fit) - n_select]] = "fit_train"
    labels[fit[len(fit) - n_select :]] = "fit_select"
    return labels


def top_k_tokens(
    targets: np.ndarray, k: int = DEFAULT_K, vocab_size: int | None = None
) -> np.ndarray:
    """The k most frequent target ids (count > 0), most frequent first, ties by smaller id."""
    t = np.asarray(targets, dtype=np.int64)
    counts = np.bincount(t, minlength=vocab_size or 0)
    seen = np.flatnonzero(counts)
    order = np.lexsort((seen, -counts[seen]))
    return seen[order][: max(0, int(k))]


# ----------------------------------------------------------------------------------------------
# Corrections
# ----------------------------------------------------------------------------------------------
@dataclass
class Correction:
    """A fitted correction: logits / temperature + bias on ``bias_tokens`` (token ids)."""

    kind: str
    temperature: float = 1.0
    bias_tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    bias: np.ndarray = field(default_factory=lambda: np.zeros(0))
    l2: float | None = None
    train_loss: float | None = None  # mean nll on FIT_train (without the penalty)
    select_loss: float | None = None  # mean nll on FIT_select
    n_iter: int = 0
    n_eval: int = 0
    converged: bool = True
    path: list[dict[str, Any]] = field(default_factory=list)  # one entry per l2 tried

    def summary(self) -> dict[str, Any]:
        """JSON-ready description without the bias vector."""
        b = np.asarray(self.bias, dtype=np.float64)
        return {
            "kind": self.kind,
            "temperature": float(self.temperature),
            "n_bias": int(len(b)),
            "bias_norm": float(np.sqrt((b**2).sum())) if len(b) else 0.0,
            "bias_max_abs": float(np.abs(b).max()) if len(b) else 0.0,
            "l2": self.l2,
            "train_loss": self.train_loss,
            "select_loss": self.select_loss,
            "n_iter": int(self.n_iter),
            "n_eval": int(self.n_eval),
            "converged": bool(self.converged),
            "path": list(self.path),
        }

    def to_dict(self) -> dict[str, Any]:
        d = self.summary()
        d["bias_tokens"] = np.asarray(self.bias_tokens).tolist()
        d["bias"] = np.asarray(self.bias, dtype=np.float64).tolist()
        return d


NO_CORRECTION = Correction(kind="none")


def _hermite(grid: np.ndarray, values: np.ndarray, derivs: np.ndarray, u: float):
    """Cubic Hermite interpolation of each row at scalar u: (value, d value / du) per row."""
    i = int(np.clip(np.searchsorted(grid, u, side="right") - 1, 0, len(grid) - 2))
    h = float(grid[i + 1] - grid[i])
    s = (u - float(grid[i])) / h
    s2, s3 = s * s, s * s * s
    c0, c1 = values[:, i].astype(np.float64), values[:, i + 1].astype(np.float64)
    d0, d1 = derivs[:, i].astype(np.float64), derivs[:, i + 1].astype(np.float64)
    val = (
        (2 * s3 - 3 * s2 + 1) * c0
        + (s3 - 2 * s2 + s) * h * d0
        + (-2 * s3 + 3 * s2) * c1
        + (s3 - s2) * h * d1
    )
    dval = (
        (6 * s2 - 6 * s) * c0
        + (3 * s2 - 4 * s + 1) * h * d0
        + (-6 * s2 + 6 * s) * c1
        + (3 * s2 - 2 * s) * h * d1
    ) / h
    return val, dval


class _Rows:
    """Chunks of selected rows of a TokenStats, copied once when small enough (else per pass)."""

    def __init__(self, stats: TokenStats, rows: np.ndarray | None):
        self.stats = stats
        rows = np.arange(stats.n_tokens) if rows is None else np.asarray(rows, dtype=np.int64)
        self.rows = rows
        self.n = len(rows)
        kk = max(1, stats.logits.shape[1])
        self.chunk = max(1, _CHUNK_ELEMENTS // kk)
        row_bytes = stats.logits.itemsize * kk + (
            0 if stats.comp is None else 8 * stats.comp.shape[1]
        )
        self._cache = None
        if self.n * row_bytes <= _GATHER_LIMIT:
            self._cache = list(self._gather())

    def _gather(self):
        s = self.stats
        for start in range(0, self.n, self.chunk):
            idx = self.rows[start : start + self.chunk]
            contiguous = len(idx) and idx[-1] - idx[0] == len(idx) - 1
            sl = slice(int(idx[0]), int(idx[-1]) + 1) if contiguous else idx
            z = np.asarray(s.logits[sl])
            tcol = s._col[s.targets[sl]]
            comp = None if s.comp is None else (np.asarray(s.comp[sl]), np.asarray(s.comp_du[sl]))
            yield z, np.asarray(s.target_logit[sl], dtype=np.float64), tcol, comp

    def __iter__(self):
        return iter(self._cache) if self._cache is not None else self._gather()


def _pass(
    data: _Rows,
    beta: float,
    b_kept: np.ndarray | None,
    *,
    grad_b: bool = False,
    grad_beta: bool = False,
    per_token: bool = False,
):
    """One pass over the rows: total nll, sum_t p'_t over kept columns, d total / d beta, nlls.

    Stored logits are shifted (max over the vocabulary = 0), so beta zt + b <= max(b, 0) and a
    single scalar shift m = max(b, 0) keeps exp() from overflowing (no per-row max pass). Per
    chunk: one multiply-add and one exp in float32, row sums, and for the gradients one
    weighted column sum (sum_t p'_t) and one row-wise dot product (E_p'[zt]).

    Rounding is kept consistent so that L-BFGS sees a smooth function: the bias enters every term
    as the same float32 values, and beta is split into its float32 value beta32 plus a remainder
    d = beta - beta32 taken to first order (log sum exp((beta32 + d) zt) = lse + d E_p'[zt]; the
    neglected term, d^2 Var/2 ~ 1e-14, is far below float32 resolution).
    """
    s = data.stats
    u = math.log(beta)
    beta32 = np.float32(beta)
    d = beta - float(beta32)
    need_ez = grad_beta or d != 0.0
    total = 0.0
    p_sum = np.zeros(s.logits.shape[1]) if grad_b else None
    d_beta = 0.0
    nlls: list[np.ndarray] | None = [] if per_token else None
    shift = 0.0 if b_kept is None else max(0.0, float(b_kept.max()))
    add = None if b_kept is None else (b_kept - shift).astype(np.float32)
    for z, ty, tcol, comp in data:
        a = np.multiply(z, beta32, dtype=np.float32)
        if add is not None:
            a += add
        np.exp(a, out=a)
        tot = a.sum(axis=1).astype(np.float64)
        if need_ez:
            ez = np.einsum("ij,ij->i", a, z.astype(np.float32, copy=False)) / tot
            if d != 0.0:
                tot *= np.exp(d * ez)
        if comp is not None:
            assert s.log_beta_grid is not None  # TokenStats checks: comp comes with its grid
            c_val, c_du = _hermite(s.log_beta_grid, comp[0], comp[1], u)
            e_c = np.exp(c_val - shift)
            if need_ez:
                ez = (tot * ez + e_c * c_du / beta) / (tot + e_c)  # + p'(R) dC/dbeta
            tot = tot + e_c
        nll = shift + np.log(tot) - beta * ty
        if add is not None:
            has = tcol >= 0
            nll -= np.where(has, add[np.where(has, tcol, 0)].astype(np.float64) + shift, 0.0)
        total += float(nll.sum())
        if nlls is not None:  # per_token
            nlls.append(nll)
        if grad_b:
            # einsum rather than a BLAS gemv: no thread pool (multi-threaded BLAS is slow on busy
            # shared cores), and as fast single-threaded
            p_sum += np.einsum("i,ij->j", (1.0 / tot).astype(np.float32), a)
        if grad_beta:
            d_beta += float((ez - ty).sum())
    return total, p_sum, d_beta, (np.concatenate(nlls) if nlls is not None else None)


def _b_kept(stats: TokenStats, bias_cols: np.ndarray, bias: np.ndarray | None) -> np.ndarray | None:
    if bias is None or len(bias_cols) == 0:
        return None
    b = np.zeros(stats.logits.shape[1])
    b[bias_cols] = bias
    return b


def token_nll(
    stats: TokenStats, correction: Correction = NO_CORRECTION, rows: np.ndarray | None = None
) -> np.ndarray:
    """Per-token nll (float64) under a correction, for ``rows`` (default all, in row order)."""
    data = _Rows(stats, rows)
    cols = stats.columns(correction.bias_tokens)
    b = _b_kept(stats, cols, np.asarray(correction.bias, dtype=np.float64))
    return _pass(data, 1.0 / correction.temperature, b, per_token=True)[3]


def doc_loss_sums(stats: TokenStats, correction: Correction = NO_CORRECTION) -> np.ndarray:
    """Sum of per-token nll of each document (float64, one value per document)."""
    nll = token_nll(stats, correction)
    return np.add.reduceat(nll, stats.offsets[:-1])


def closed_form_bias(stats: TokenStats, rows: np.ndarray, bias_tokens: np.ndarray) -> Correction:
    """One-step closed-form bias on ``rows`` (T = 1): b_k = log(f_k / pbar_k) for k in S.

    f_k = n_k / N (empirical frequency of k as a target), pbar_k = mean_t softmax(z_t)_k.
    """
    bias_tokens = np.asarray(bias_tokens, dtype=np.int64)
    cols = stats.columns(bias_tokens)
    data = _Rows(stats, rows)
    total, p_sum, _, _ = _pass(data, 1.0, None, grad_b=True)
    counts = np.bincount(stats.targets[data.rows], minlength=stats.vocab_size)[bias_tokens]
    with np.errstate(divide="ignore"):
        bias = np.log(counts / data.n) - np.log(p_sum[cols] / data.n)
    bias[~np.isfinite(bias)] = 0.0  # a token of S never seen in these rows keeps b = 0
    return Correction(
        kind="closed_bias",
        bias_tokens=bias_tokens,
        bias=bias,
        train_loss=None,
        n_eval=1,
    )


def _fit_one(
    data: _Rows,
    kind: str,
    bias_cols: np.ndarray,
    n_s: np.ndarray,
    l2: float,
    tau0: float,
    b0: np.ndarray,
    max_iter: int,
    t_bounds: tuple[float, float],
):
    """L-BFGS-B over [log T]? + [b_S]?; returns (log T, b, scipy result, evaluations).

    The bias is optimized as c_k = b_k sqrt(h_k), h_k = max(n_k, 1)/N + 2 lambda (the diagonal of
    the Hessian at b = 0 when the model's mean probabilities match the frequencies), which makes
    the problem well conditioned: rare tokens otherwise have tiny gradients and slow L-BFGS down.
    """
    stats = data.stats
    has_t = kind in ("temp", "bias_temp")
    has_b = kind in ("bias", "bias_temp")
    n = data.n
    sc = np.sqrt(np.maximum(n_s, 1.0) / n + 2 * l2)
    counter = {"n": 0}

    def fun(x):
        counter["n"] += 1
        tau = float(x[0]) if has_t else 0.0
        beta = math.exp(-tau)
        b = (x[1:] if has_t else x) / sc
        bk = _b_kept(stats, bias_cols, b) if has_b else None
        total, p_sum, d_beta, _ = _pass(data, beta, bk, grad_b=has_b, grad_beta=has_t)
        f = total / n
        grad = []
        if has_t:
            grad.append(np.array([-beta * d_beta / n]))
        if has_b:
            f += l2 * float(b @ b)
            grad.append(((p_sum[bias_cols] - n_s) / n + 2 * l2 * b) / sc)
        return f, np.concatenate(grad)

    x0 = np.concatenate([[tau0] if has_t else [], b0 * sc if has_b else []])
    bounds = ([t_bounds] if has_t else []) + ([(None, None)] * len(bias_cols) if has_b else [])
    res = minimize(
        fun,
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter, "ftol": FTOL, "gtol": GTOL, "maxcor": 20},
    )
    tau = float(res.x[0]) if has_t else 0.0
    b = (res.x[1:] if has_t else res.x) / sc if has_b else np.zeros(0)
    return tau, b, res, counter["n"]


def fit_correction(
    stats: TokenStats,
    kind: str,
    *,
    train_rows: np.ndarray,
    select_rows: np.ndarray | None = None,
    bias_tokens: np.ndarray | None = None,
    l2_grid: Sequence[float] = L2_GRID,
    max_iter: int = 500,
) -> Correction:
    """Fit ``bias``, ``temp`` or ``bias_temp`` by L-BFGS-B (see module doc).

    For the bias kinds, each lambda of ``l2_grid`` is fitted on ``train_rows`` (largest lambda
    first, each fit warm-started from the previous one) and the lambda with the lowest mean nll on
    ``select_rows`` wins (ties: the larger lambda). ``temp`` has no penalty and ignores the grid.
    """
    if kind not in ("bias", "temp", "bias_temp"):
        raise ValueError(f"unknown fitted correction {kind!r}")
    has_b = kind != "temp"
    bias_tokens = np.zeros(0, np.int64) if not has_b else np.asarray(bias_tokens, dtype=np.int64)
    if has_b and len(bias_tokens) == 0:
        raise ValueError(f"{kind} needs bias_tokens")
    cols = stats.columns(bias_tokens)
    data = _Rows(stats, train_rows)
    if data.n == 0:
        raise ValueError("no training rows")
    sel = _Rows(stats, select_rows) if (select_rows is not None and len(select_rows)) else None
    n_s = np.bincount(stats.targets[data.rows], minlength=stats.vocab_size)[bias_tokens].astype(
        np.float64
    )
    lim = math.log(T_RANGE) if not stats.full else math.log(64.0)
    t_bounds = (-lim, lim)

    grid = sorted({float(v) for v in l2_grid}, reverse=True) if has_b else [0.0]
    if has_b and sel is None and len(grid) > 1:
        raise ValueError("choosing lambda needs select_rows")
    tau, b = 0.0, np.zeros(len(cols))
    best = None
    path = []
    total_iter = total_eval = 0
    for l2 in grid:
        tau, b, res, n_eval = _fit_one(data, kind, cols, n_s, l2, tau, b, max_iter, t_bounds)
        total_iter += int(res.nit)
        total_eval += n_eval
        temp = math.exp(tau)
        corr = Correction(
            kind=kind,
            temperature=temp,
            bias_tokens=bias_tokens,
            bias=np.array(b, dtype=np.float64),
            l2=l2 if has_b else None,
            converged=bool(res.success),
        )
        bk = _b_kept(stats, cols, corr.bias) if has_b else None
        corr.train_loss = _pass(data, 1.0 / temp, bk)[0] / data.n
        if sel is not None:
            corr.select_loss = _pass(sel, 1.0 / temp, bk)[0] / sel.n
        path.append(
            {
                "l2": l2,
                "temperature": temp,
                "train_loss": corr.train_loss,
                "select_loss": corr.select_loss,
                "n_iter": int(res.nit),
                "n_eval": int(n_eval),
                "converged": bool(res.success),
                "message": str(res.message),
            }
        )
        if best is None or (
            corr.select_loss is not None
            and best.select_loss is not None
            and corr.select_loss < best.select_loss - 1e-12
        ):
            best = corr
    if best is None:
        raise ValueError("l2_grid is empty")
    best.path = path
    best.n_iter, best.n_eval = total_iter, total_eval
    return best


def fit_corrections(
    stats: TokenStats,
    splits: Sequence[str] | np.ndarray,
    bias_tokens: np.ndarray,
    *,
    kinds: Sequence[str] = KINDS,
    l2_grid: Sequence[float] = L2_GRID,
    max_iter: int = 500,
) -> dict[str, Correction]:
    """Every correction of ``kinds`` (plus ``none``) for one model, from the document ``splits``.

    Fitted kinds use FIT_train and FIT_select; ``closed_bias`` uses all of FIT.
    """
    labels = np.asarray(splits, dtype=object)
    if len(labels) != stats.n_docs:
        raise ValueError(f"{len(labels)} split labels for {stats.n_docs} documents")
    train = stats.rows_of(labels == "fit_train")
    select = stats.rows_of(labels == "fit_select")
    fit = stats.rows_of((labels == "fit_train") | (labels == "fit_select"))
    out: dict[str, Correction] = {"none": NO_CORRECTION}
    for kind in kinds:
        if kind == "closed_bias":
            out[kind] = closed_form_bias(stats, fit, bias_tokens)
        elif kind in ("bias", "temp", "bias_temp"):
            out[kind] = fit_correction(
                stats,
                kind,
                train_rows=train,
                select_rows=select,
                bias_tokens=bias_tokens,
                l2_grid=l2_grid,
                max_iter=max_iter,
            )
        else:
            raise ValueError(f"unknown correction kind {kind!r}")
    return out


def correction_loss_sums(
    stats: TokenStats, corrections: Mapping[str, Correction]
) -> dict[str, np.ndarray]:
    """Per-document loss sums under each correction (same keys as ``corrections``)."""
    return {name: doc_loss_sums(stats, corr) for name, corr in corrections.items()}
