r"""Recoverability shares: how much of the post-trained model's loss rise each correction undoes.

Read from the per-document loss sums that ``app/analysis/recoverability_fitting.py`` computes (its
module doc defines the corrections and the EVAL split). No I/O.

Shares (on EVAL)
----------------
With L_{m,c} = sum_d loss_sum_d(m, c) / sum_d n_d (mean nll per token of model m under correction
c over the EVAL documents d)::

    gap             = L_post - L_base
    share_c         = (L_post - L_post,c) / (L_post - L_base)
    symmetric_c     = [(L_post - L_post,c) - (L_base - L_base,c)] / (L_post - L_base)

Every model is scored on the same tokens, so the token count cancels in the shares: they depend on
the per-document loss sums alone. The 95% intervals resample EVAL documents with replacement
(:func:`bootstrap_shares`, percentile intervals). The per-document table (:func:`build_table`:
document id, split, tokens, one loss-sum column per (model, correction)) is kept and exported so
that every share can be recomputed from it (:func:`shares_from_sums`).

A share means little alone: a model damaged at random (Gaussian noise on its output weights, no
bias and no temperature change planted) also gets part of its loss back from the same correction.
Read a pair's share next to that control's share (``worker/recoverability_scoring.py`` builds the
controls: planted bias, doubled logits, weight noise).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def loss_column(model: str, correction: str) -> str:
    """Name of the loss-sum column of (model, correction) in the table: "model/correction"."""
    if "/" in model or "/" in correction:
        raise ValueError("model and correction names may not contain '/'")
    return f"{model}/{correction}"


def build_table(
    doc_ids: Sequence[Any],
    splits: Sequence[str] | np.ndarray,
    n_tokens: Sequence[int],
    sums: Mapping[str, Mapping[str, np.ndarray]],
) -> dict[str, list]:
    """The exportable per-document table: columns ``doc_id, split, n_tokens`` and one loss-sum
    column ``model/correction`` per entry of ``sums[model][correction]`` (float, nats)."""
    n = len(doc_ids)
    if len(splits) != n or len(n_tokens) != n:
        raise ValueError("doc_ids, splits and n_tokens must have one entry per document")
    table: dict[str, list] = {
        "doc_id": list(doc_ids),
        "split": [str(s) for s in splits],
        "n_tokens": [int(v) for v in n_tokens],
    }
    for model, per_corr in sums.items():
        for corr, values in per_corr.items():
            values = np.asarray(values, dtype=np.float64)
            if len(values) != n:
                raise ValueError(f"{model}/{corr}: {len(values)} sums for {n} documents")
            table[loss_column(model, corr)] = values.tolist()
    return table


def table_models(table: Mapping[str, Sequence]) -> dict[str, list[str]]:
    """Models and their corrections present in a table."""
    out: dict[str, list[str]] = {}
    for col in table:
        if "/" in col:
            model, corr = col.split("/", 1)
            out.setdefault(model, []).append(corr)
    return out


def _select(table: Mapping[str, Sequence], split: str | Sequence[str] | None) -> np.ndarray:
    labels = np.asarray(table["split"], dtype=object)
    if split is None:
        return np.ones(len(labels), dtype=bool)
    wanted = {split} if isinstance(split, str) else set(split)
    if "fit" in wanted:
        wanted |= {"fit_train", "fit_select"}
    return np.isin(labels, list(wanted))


def _share_columns(table, base, post, corrections):
    have = table_models(table)
    for model in (base, post):
        if model not in have:
            raise KeyError(f"model {model!r} not in table (have {sorted(have)})")
    if corrections is None:
        corrections = [c for c in have[post] if c != "none" and c in have[base]]
    cols = [loss_column(base, "none"), loss_column(post, "none")]
    for c in corrections:
        cols += [loss_column(base, c), loss_column(post, c)]
    return list(corrections), cols


def _shares_from_totals(
    tot: np.ndarray, corrections: Sequence[str], n_tok: np.ndarray | np.float64
):
    """tot: (..., 2 + 2 len(corrections)) loss sums in _share_columns order; n_tok: (...)."""
    lb, lp = tot[..., 0], tot[..., 1]
    gap = lp - lb
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {"gap": gap / n_tok, "loss_base": lb / n_tok, "loss_post": lp / n_tok}
        for j, c in enumerate(corrections):
            lbc, lpc = tot[..., 2 + 2 * j], tot[..., 3 + 2 * j]
            out[f"share/{c}"] = (lp - lpc) / gap
            out[f"symmetric/{c}"] = ((lp - lpc) - (lb - lbc)) / gap
            out[f"gain_post/{c}"] = (lp - lpc) / n_tok
            out[f"gain_base/{c}"] = (lb - lbc) / n_tok
    return out


def _nest(flat: Mapping[str, Any], corrections: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {k: flat[k] for k in ("gap", "loss_base", "loss_post")}
    for key in ("share", "symmetric", "gain_post", "gain_base"):
        out[key] = {c: flat[f"{key}/{c}"] for c in corrections}
    return out


def shares_from_sums(
    table: Mapping[str, Sequence],
    *,
    base: str = "base",
    post: str = "post",
    split: str | Sequence[str] | None = "eval",
    corrections: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Recovery shares of ``post`` against ``base`` from the per-document loss sums (module doc).

    ``split``: "eval" (default), "fit" (FIT_train + FIT_select: in-sample), a list of labels, or
    None for all documents. Returns ``n_docs, n_tokens, gap, loss_base, loss_post`` (nats per
    token) and dicts keyed by correction: ``share``, ``symmetric``, ``gain_post``, ``gain_base``
    (gain = loss drop per token from the correction). A zero gap gives inf/nan shares.
    """
    corrections, cols = _share_columns(table, base, post, corrections)
    sel = _select(table, split)
    if not sel.any():
        raise ValueError(f"no documents in split {split!r}")
    mat = np.column_stack([np.asarray(table[c], dtype=np.float64)[sel] for c in cols])
    n_tok = float(np.asarray(table["n_tokens"], dtype=np.float64)[sel].sum())
    flat = _shares_from_totals(mat.sum(axis=0), corrections, np.float64(n_tok))
    out = {"base": base, "post": post, "n_docs": int(sel.sum()), "n_tokens": int(n_tok)}
    out.update(_nest({k: float(v) for k, v in flat.items()}, corrections))
    return out


def bootstrap_shares(
    table: Mapping[str, Sequence],
    n_boot: int = 2000,
    seed: int = 0,
    *,
    base: str = "base",
    post: str = "post",
    split: str | Sequence[str] | None = "eval",
    corrections: Sequence[str] | None = None,
    level: float = 0.95,
    return_replicates: bool = False,
) -> dict[str, Any]:
    """Point estimates and percentile bootstrap intervals over documents.

    Each replicate draws the selected documents with replacement (as many as there are), sums
    their loss sums and token counts, and recomputes every statistic of :func:`shares_from_sums`.
    Every statistic becomes ``{"estimate", "lo", "hi", "se"}`` (se: standard deviation of the
    finite replicates; lo/hi: their (1 - level)/2 and (1 + level)/2 quantiles). Replicates with a
    zero gap are dropped from the share statistics and counted in ``n_nonfinite``.
    """
    point = shares_from_sums(table, base=base, post=post, split=split, corrections=corrections)
    corrections, cols = _share_columns(table, base, post, corrections)
    sel = _select(table, split)
    mat = np.column_stack([np.asarray(table[c], dtype=np.float64)[sel] for c in cols])
    n_tok = np.asarray(table["n_tokens"], dtype=np.float64)[sel]
    d = len(n_tok)
    rng = np.random.default_rng(seed)
    per = max(1, min(n_boot, (1 << 22) // max(1, d)))
    flats: list[dict[str, np.ndarray]] = []
    done = 0
    while done < n_boot:
        m = min(per, n_boot - done)
        idx = rng.integers(0, d, size=(m, d))
        w = np.bincount((idx + d * np.arange(m)[:, None]).ravel(), minlength=m * d)
        w = w.reshape(m, d).astype(np.float64)
        flats.append(_shares_from_totals(w @ mat, corrections, w @ n_tok))
        done += m
    reps = {k: np.concatenate([f[k] for f in flats]) for k in flats[0]}
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    point_flat = {
        "gap": point["gap"],
        "loss_base": point["loss_base"],
        "loss_post": point["loss_post"],
    }
    for key in ("share", "symmetric", "gain_post", "gain_base"):
        for c in corrections:
            point_flat[f"{key}/{c}"] = point[key][c]
    stats: dict[str, Any] = {}
    n_nonfinite = 0
    for k, v in reps.items():
        finite = v[np.isfinite(v)]
        n_nonfinite = max(n_nonfinite, len(v) - len(finite))
        if len(finite):
            lo, hi = np.quantile(finite, [lo_q, hi_q])
            se = float(finite.std(ddof=1)) if len(finite) > 1 else 0.0
        else:
            lo = hi = se = float("nan")
        stats[k] = {"estimate": point_flat[k], "lo": float(lo), "hi": float(hi), "se": se}
    out = {
        "base": base,
        "post": post,
        "n_docs": point["n_docs"],
        "n_tokens": point["n_tokens"],
        "n_boot": int(n_boot),
        "seed": int(seed),
        "level": float(level),
        "n_nonfinite": int(n_nonfinite),
    }
    out.update(_nest(stats, corrections))
    if return_replicates:
        out["replicates"] = reps
    return out
