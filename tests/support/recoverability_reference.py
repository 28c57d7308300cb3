"""The numpy reference of the statistics the torch scorer computes on the device
(worker/recoverability_scoring.py), for tests on small data: full logits in, TokenStats out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from forgetmap.analysis.recoverability_fitting import (
    LOG_BETA_GRID,
    NO_CORRECTION,
    Correction,
    TokenStats,
    token_nll,
)


def summarize_logits(
    logits: np.ndarray,
    targets: np.ndarray,
    kept: np.ndarray | None = None,
    log_beta_grid: np.ndarray | None = None,
    logits_dtype: Any = np.float32,
) -> dict[str, np.ndarray | None]:
    """Reference (numpy) reduction of full logits (n x V) to the statistics of :class:`TokenStats`.

    Returns ``target_logit``, ``logits`` (kept columns), ``comp`` and ``comp_du`` (None when
    ``kept`` is None, i.e. all tokens kept). The torch scorer computes the same on the device.
    """
    z = np.asarray(logits, dtype=np.float64)
    zt = z - z.max(axis=1, keepdims=True)
    rows = np.arange(len(zt))
    out: dict[str, np.ndarray | None] = {
        "target_logit": zt[rows, np.asarray(targets)].astype(np.float32),
        "comp": None,
        "comp_du": None,
    }
    if kept is None:
        out["logits"] = zt.astype(logits_dtype)
        return out
    grid = LOG_BETA_GRID if log_beta_grid is None else np.asarray(log_beta_grid, dtype=np.float64)
    mask = np.ones(z.shape[1], dtype=bool)
    mask[np.asarray(kept)] = False
    zc = zt[:, mask]
    comp = np.empty((len(zt), len(grid)), dtype=np.float32)
    du = np.empty_like(comp)
    for g, u in enumerate(grid):
        a = math.exp(u) * zc
        m = a.max(axis=1, keepdims=True)
        e = np.exp(a - m)
        s = e.sum(axis=1)
        comp[:, g] = (m[:, 0] + np.log(s)).astype(np.float32)
        du[:, g] = (math.exp(u) * (e * zc).sum(axis=1) / s).astype(np.float32)
    out["logits"] = zt[:, np.asarray(kept)].astype(logits_dtype)
    out["comp"], out["comp_du"] = comp, du
    return out


def stats_from_logits(
    doc_logits: Sequence[np.ndarray],
    doc_targets: Sequence[np.ndarray],
    *,
    kept: np.ndarray | None = None,
    log_beta_grid: np.ndarray | None = None,
    logits_dtype: Any = np.float32,
) -> TokenStats:
    """TokenStats from per-document full logits (n_d x V) and targets (n_d,); for small
    data/tests."""
    vocab = int(doc_logits[0].shape[1])
    parts = [
        summarize_logits(z, y, kept, log_beta_grid, logits_dtype)
        for z, y in zip(doc_logits, doc_targets, strict=True)
    ]
    lengths = [len(y) for y in doc_targets]
    grid = None if kept is None else (LOG_BETA_GRID if log_beta_grid is None else log_beta_grid)
    return TokenStats(
        offsets=np.concatenate([[0], np.cumsum(lengths)]),
        targets=np.concatenate([np.asarray(y, dtype=np.int64) for y in doc_targets]),
        target_logit=np.concatenate([p["target_logit"] for p in parts]),
        kept=np.arange(vocab) if kept is None else np.asarray(kept, dtype=np.int64),
        logits=np.concatenate([p["logits"] for p in parts]),
        vocab_size=vocab,
        comp=None if kept is None else np.concatenate([p["comp"] for p in parts]),
        comp_du=None if kept is None else np.concatenate([p["comp_du"] for p in parts]),
        log_beta_grid=None if grid is None else np.asarray(grid, dtype=np.float64),
    )


def mean_nll(
    stats: TokenStats, correction: Correction = NO_CORRECTION, rows: np.ndarray | None = None
) -> float:
    nll = token_nll(stats, correction, rows)
    return float(nll.mean())
