"""Recoverability, torch side: score documents, build the known-answer controls, run a pair.

The analysis itself (corrections, fits, shares, bootstrap) is pure and lives in
``app/analysis/recoverability_fitting.py``; this module turns models and documents into its
:class:`~forgetmap.analysis.recoverability_fitting.TokenStats` and per-document loss sums.

Scoring: documents are token-id sequences (``prepare_documents`` tokenizes text: BOS first when the
tokenizer has one, then at most ``max_tokens`` = 2047 document tokens). Position i predicts token
i + 1, so a document of n input ids gives n - 1 scored tokens. Documents go through the model's own
forward pass (full logits, whatever the model's head does: soft-capping, scaling...), longest
first, right-padded in batches of about ``batch_tokens`` padded positions (right padding changes
nothing for a causal model), and each document's logits are reduced in chunks of positions to the
statistics of TokenStats on the model's device. Peak extra memory: batch_tokens x V logits (x4 bytes
once upcast per chunk), e.g. 4096 x 152k x 2 bytes = 1.2 GB for a bf16 model on a GPU.

Kept logits: the full vocabulary when V <= ``full_vocab_max`` (default 4096: exact temperature
fits; tiny models), else only the bias tokens S, in float16, plus the complement grid (module doc
of forgetmap.analysis.recoverability_fitting). Pass ``out_dir`` to keep the big arrays in .npy
memory maps. float16 rounding of the shifted logits moves a token's nll by up to ~5e-4 nats (mean
~2e-6 measured on the tiny model); differences between corrections of the same model are computed
from the same rounded values. The complement grid costs ~97 x 4 elementwise operations per
complement token per scored token: more than the whole forward pass of a tiny CPU model
(bench/recover.py: 0.12x-0.40x of the forward pass's tokens/s), under 1% of the ~2 x params FLOPs
per token of a 1B+ model.
Controls, built from the base model by swapping its output layer for a modified copy (the input
embeddings are untouched even when tied to the head), restored afterwards:

- ``planted_bias``: a bias on the head's outputs, N(0, planted_std^2) (seeded) on the first
  ``planted_fraction`` (10%) of S, i.e. its most frequent tokens (``bias_tokens`` must be ordered
  most frequent first, as ``top_k_tokens`` returns them), where a bias can be estimated from the
  FIT counts. The bias correction's family contains the undamaged model, so the symmetric share
  is 1 up to estimation noise and the L2 penalty: expect > 0.9.
- ``doubled_logits``: head weights (and bias) times 2. The temperature fit should give T = 2 x the
  base's fitted T (= 2 for a calibrated base).
- ``weight_noise``: head weights + N(0, (noise_std x std(W))^2), no bias and no temperature change
  planted: whatever the corrections recover here is what they recover from damage that is not a
  bias or a temperature.
"""

from __future__ import annotations

import gc
import json
import logging
import math
import shutil
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from forgetmap.analysis.recoverability_fitting import (
    KINDS,
    L2_GRID,
    LOG_BETA_GRID,
    SPLITS,
    Correction,
    TokenStats,
    correction_loss_sums,
    fit_corrections,
    split_documents,
    top_k_tokens,
)
from forgetmap.analysis.recoverability_shares import bootstrap_shares, build_table, shares_from_sums
from forgetmap.core.recoverability_names import CONTROLS, DEFAULT_K, DEFAULT_MAX_TOKENS

log = logging.getLogger(__name__)

FULL_VOCAB_MAX = 4096

Progress = Callable[[str, int, int], None]


# ----------------------------------------------------------------------------------------------
# Documents
# ----------------------------------------------------------------------------------------------
def prepare_documents(
    tokenizer: Any,
    texts: Sequence[str],
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    add_bos: bool | None = None,
) -> tuple[list[np.ndarray], list[int]]:
    """Token ids of each text (BOS + at most ``max_tokens`` tokens) and the indices of the texts
    kept: a text with fewer than 2 input ids (nothing to score) is left out and not listed.

    add_bos: default True when the tokenizer has a BOS token (Llama-style); Qwen-style tokenizers
    have none, and their first token is then not scored.
    """
    bos = getattr(tokenizer, "bos_token_id", None)
    if add_bos is None:
        add_bos = bos is not None
    if add_bos and bos is None:
        raise ValueError("add_bos=True but the tokenizer has no BOS token")
    docs, kept = [], []
    for i, text in enumerate(texts):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"][:max_tokens]
        if add_bos and bos is not None:  # add_bos: there is one (checked above)
            ids = [int(bos), *ids]
        if len(ids) >= 2:
            docs.append(np.asarray(ids, dtype=np.int64))
            kept.append(i)
    return docs, kept


def read_corpus(
    paths: Sequence[str | Path], *, text_field: str = "text", txt_separator: str | None = None
) -> tuple[list[str], list[str]]:
    """Documents of local files, in order: (doc_ids, texts).

    ``.jsonl`` / ``.json`` (JSON Lines): one document per non-empty line, its ``text_field``
    (id ``name:line``); any other file is UTF-8 text: one document, or one per part between
    ``txt_separator`` (e.g. "\n\n"; id ``name#part``). Empty documents are left out.
    """

    ids: list[str] = []
    texts: list[str] = []
    for path in map(Path, paths):
        if path.suffix in (".jsonl", ".json"):
            with path.open(encoding="utf-8") as fh:
                for i, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    text = json.loads(line).get(text_field)
                    if not isinstance(text, str):
                        raise ValueError(f"{path}:{i}: no string field {text_field!r}")
                    if text.strip():
                        ids.append(f"{path.name}:{i}")
                        texts.append(text)
            continue
        raw = path.read_text(encoding="utf-8")
        parts = raw.split(txt_separator) if txt_separator else [raw]
        for j, text in enumerate(parts):
            if text.strip():
                ids.append(f"{path.name}#{j}" if txt_separator else path.name)
                texts.append(text)
    return ids, texts


def sample_documents(
    model: Any,
    n_docs: int,
    n_tokens: int,
    *,
    start_id: int,
    seed: int = 0,
    batch_size: int = 64,
) -> list[np.ndarray]:
    """Documents sampled from the model itself at T = 1 (full softmax: no top-k, no top-p).

    Each is ``[start_id, t_1 .. t_n_tokens]``. On such text the model is calibrated by
    construction (its best temperature is 1 and its best bias 0, up to sampling noise), which makes
    the controls' answers exact: doubled logits -> T = 2, planted bias -> share 1.
    """
    import torch

    device = next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(int(seed))
    docs: list[np.ndarray] = []
    with torch.inference_mode():
        for start in range(0, n_docs, batch_size):
            b = min(batch_size, n_docs - start)
            ids = torch.full((b, 1), int(start_id), dtype=torch.long, device=device)
            out = model(input_ids=ids, use_cache=True)
            seq = [ids]
            for _ in range(n_tokens):
                probs = torch.softmax(out.logits[:, -1].float(), dim=-1)
                nxt = torch.multinomial(probs, 1, generator=gen)
                seq.append(nxt)
                out = model(input_ids=nxt, past_key_values=out.past_key_values, use_cache=True)
            docs.extend(np.asarray(r, dtype=np.int64) for r in torch.cat(seq, dim=1).cpu().numpy())
    return docs


def _batches(lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Document indices in batches, longest first, each within batch_tokens padded positions."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        width = lengths[cur[0]] if cur else lengths[i]
        if cur and (len(cur) + 1) * width > batch_tokens:
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches


def _forward(model, docs: Sequence[np.ndarray], idx: Sequence[int]):
    import torch

    device = next(model.parameters()).device
    width = max(len(docs[i]) for i in idx)
    ids = torch.zeros((len(idx), width), dtype=torch.long)
    mask = torch.zeros((len(idx), width), dtype=torch.long)
    for r, i in enumerate(idx):
        ids[r, : len(docs[i])] = torch.from_numpy(docs[i])
        mask[r, : len(docs[i])] = 1
    ids, mask = ids.to(device), mask.to(device)
    logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
    return ids, logits


# ----------------------------------------------------------------------------------------------
# Scoring
# ----------------------------------------------------------------------------------------------
def _alloc(shape, dtype, out_dir: Path | None, name: str) -> np.ndarray:
    if out_dir is None:
        return np.empty(shape, dtype=dtype)
    return np.lib.format.open_memmap(out_dir / f"{name}.npy", mode="w+", dtype=dtype, shape=shape)


def score_documents(
    model: Any,
    docs: Sequence[np.ndarray],
    *,
    kept: np.ndarray | None = None,
    log_beta_grid: np.ndarray | None = None,
    logits_dtype: Any = np.float32,
    batch_tokens: int = 4096,
    chunk_positions: int = 1024,
    out_dir: str | Path | None = None,
    progress: Progress | None = None,
) -> TokenStats:
    """Score every document with the model; return its TokenStats (see module doc).

    kept: token ids whose shifted logits are stored (None: the whole vocabulary); the other tokens
    are summarized on ``log_beta_grid`` (default LOG_BETA_GRID).
    """
    import torch

    lengths = [len(d) for d in docs]
    if min(lengths) < 2:
        raise ValueError("every document needs at least 2 token ids")
    offsets = np.concatenate([[0], np.cumsum([n - 1 for n in lengths])]).astype(np.int64)
    n = int(offsets[-1])
    out_dir = None if out_dir is None else Path(out_dir)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    grid = LOG_BETA_GRID if log_beta_grid is None else np.asarray(log_beta_grid, np.float64)
    device = next(model.parameters()).device
    targets = np.empty(n, dtype=np.int64)
    target_logit = np.empty(n, dtype=np.float32)
    arrays: dict[str, np.ndarray] = {}
    vocab = None
    kept_t = comp_t = None
    betas = [math.exp(float(u)) for u in grid]
    batches = _batches(lengths, batch_tokens)
    done = 0
    with torch.inference_mode():
        for batch in batches:
            ids, logits = _forward(model, docs, batch)
            if vocab is None:
                vocab = int(logits.shape[-1])
                if kept is not None:
                    kept = np.asarray(kept, dtype=np.int64)
                    if len(kept) >= vocab:
                        kept = None
                if kept is None:
                    arrays["logits"] = _alloc((n, vocab), logits_dtype, out_dir, "logits")
                else:
                    kept_t = torch.as_tensor(kept, device=device)
                    comp_mask = torch.ones(vocab, dtype=torch.bool, device=device)
                    comp_mask[kept_t] = False
                    comp_t = torch.nonzero(comp_mask)[:, 0]
                    arrays["logits"] = _alloc((n, len(kept)), logits_dtype, out_dir, "logits")
                    arrays["comp"] = _alloc((n, len(grid)), np.float32, out_dir, "comp")
                    arrays["comp_du"] = _alloc((n, len(grid)), np.float32, out_dir, "comp_du")
            for r, d in enumerate(batch):
                m_tok = lengths[d] - 1
                for s in range(0, m_tok, chunk_positions):
                    e = min(m_tok, s + chunk_positions)
                    z = logits[r, s:e].float()
                    y = ids[r, s + 1 : e + 1]
                    zt = z - z.max(dim=-1, keepdim=True).values
                    lo, hi = int(offsets[d]) + s, int(offsets[d]) + e
                    targets[lo:hi] = y.cpu().numpy()
                    target_logit[lo:hi] = zt.gather(-1, y[:, None])[:, 0].cpu().numpy()
                    if kept_t is None:
                        arrays["logits"][lo:hi] = zt.cpu().numpy().astype(logits_dtype, copy=False)
                        continue
                    arrays["logits"][lo:hi] = (
                        zt[:, kept_t].cpu().numpy().astype(logits_dtype, copy=False)
                    )
                    comp, du = _complement_grid(zt[:, comp_t], betas)
                    arrays["comp"][lo:hi] = comp.cpu().numpy()
                    arrays["comp_du"][lo:hi] = du.cpu().numpy()
            del logits
            done += len(batch)
            if progress is not None:
                progress("score", done, len(docs))
    assert vocab is not None  # docs is not empty (min above): a batch ran
    return TokenStats(
        offsets=offsets,
        targets=targets,
        target_logit=target_logit,
        kept=np.arange(vocab) if kept is None else kept,
        logits=arrays["logits"],
        vocab_size=vocab,
        comp=arrays.get("comp"),
        comp_du=arrays.get("comp_du"),
        log_beta_grid=None if kept is None else grid,
    )


def _complement_grid(zc, betas: Sequence[float]):
    """C(u) = log sum exp(beta zc) and dC/du = beta E_softmax(beta zc)[zc] per row, per beta.

    With y = zc - max(zc) <= 0 computed once: C = beta max + log sum exp(beta y) and
    dC/du = beta (max + sum e y / sum e), e = exp(beta y) (no overflow for beta > 0).
    """
    import torch

    zmax = zc.max(dim=-1, keepdim=True).values
    y = zc - zmax
    comp = torch.empty((zc.shape[0], len(betas)), device=zc.device)
    du = torch.empty_like(comp)
    for g, beta in enumerate(betas):
        e = torch.exp(y * beta)
        tot = e.sum(-1)
        comp[:, g] = beta * zmax[:, 0] + torch.log(tot)
        du[:, g] = beta * (zmax[:, 0] + torch.einsum("ij,ij->i", e, y) / tot)
    return comp, du


def plain_nll(model: Any, docs: Sequence[np.ndarray], *, batch_tokens: int = 4096) -> np.ndarray:
    """Per-token nll from a plain forward pass and cross-entropy, in row order of score_documents.

    The reference (and the bench baseline): no statistics are kept.
    """
    import torch

    lengths = [len(d) for d in docs]
    offsets = np.concatenate([[0], np.cumsum([n - 1 for n in lengths])]).astype(np.int64)
    out = np.empty(int(offsets[-1]), dtype=np.float64)
    with torch.inference_mode():
        for batch in _batches(lengths, batch_tokens):
            ids, logits = _forward(model, docs, batch)
            for r, d in enumerate(batch):
                m = lengths[d] - 1
                nll = torch.nn.functional.cross_entropy(
                    logits[r, :m].float(), ids[r, 1 : m + 1], reduction="none"
                )
                out[offsets[d] : offsets[d + 1]] = nll.double().cpu().numpy()
    return out


# ----------------------------------------------------------------------------------------------
# Controls
# ----------------------------------------------------------------------------------------------
@contextmanager
def output_head_control(
    model: Any,
    kind: str,
    *,
    bias_tokens: np.ndarray | None = None,
    seed: int = 0,
    planted_std: float = 2.0,
    planted_fraction: float = 0.1,
    noise_std: float = 0.5,
):
    """Temporarily replace the model's output layer by a damaged copy (see module doc).

    Yields a dict describing what was planted (JSON-ready). The original layer is restored on exit.
    """
    import torch

    head = model.get_output_embeddings()
    if head is None or not hasattr(head, "weight"):
        raise ValueError("the model has no output layer to modify")
    w = head.weight
    new = torch.nn.Linear(w.shape[1], w.shape[0], bias=True, device=w.device, dtype=w.dtype)
    gen = torch.Generator().manual_seed(int(seed))
    info: dict[str, Any] = {"kind": kind, "seed": int(seed)}
    with torch.no_grad():
        new.weight.copy_(w)
        old_bias = getattr(head, "bias", None)
        new.bias.copy_(old_bias if old_bias is not None else torch.zeros_like(new.bias))
        if kind == "planted_bias":
            if bias_tokens is None or len(bias_tokens) == 0:
                raise ValueError("planted_bias needs bias_tokens (the bias support S)")
            rng = np.random.default_rng(seed)
            m = max(1, math.ceil(planted_fraction * len(bias_tokens)))
            tokens = np.asarray(bias_tokens, dtype=np.int64)[:m]
            values = rng.normal(0.0, planted_std, size=m)
            idx = torch.as_tensor(tokens, device=w.device)
            new.bias[idx] += torch.as_tensor(values, device=w.device, dtype=w.dtype)
            info.update(
                planted_std=planted_std, n_tokens=m, tokens=tokens.tolist(), values=values.tolist()
            )
        elif kind == "doubled_logits":
            new.weight.mul_(2.0)
            new.bias.mul_(2.0)
            info.update(scale=2.0)
        elif kind == "weight_noise":
            std = float(w.float().std())
            noise = torch.randn(tuple(w.shape), generator=gen) * (noise_std * std)
            new.weight.add_(noise.to(device=w.device, dtype=w.dtype))
            info.update(noise_std=noise_std, weight_std=std)
        else:
            raise ValueError(f"unknown control {kind!r} (one of {', '.join(CONTROLS)})")
    model.set_output_embeddings(new)
    try:
        yield info
    finally:
        model.set_output_embeddings(head)
        del new


# ----------------------------------------------------------------------------------------------
# One model, and a pair with its controls
# ----------------------------------------------------------------------------------------------
def analyze_model(
    model: Any,
    docs: Sequence[np.ndarray],
    splits: np.ndarray,
    bias_tokens: np.ndarray,
    *,
    kinds: Sequence[str] = KINDS,
    l2_grid: Sequence[float] = L2_GRID,
    full_vocab_max: int = FULL_VOCAB_MAX,
    logits_dtype: Any = None,
    batch_tokens: int = 4096,
    max_iter: int = 500,
    out_dir: str | Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Score, fit every correction and sum losses per document for one model.

    Returns ``corrections`` (kind -> Correction), ``sums`` (kind -> per-document loss sums),
    ``temperature`` (kind -> fitted T), ``timing`` (seconds and tokens of scoring and fitting).
    """
    head = model.get_output_embeddings()
    vocab = int(head.weight.shape[0]) if head is not None else None
    full = vocab is not None and vocab <= full_vocab_max
    if logits_dtype is None:
        logits_dtype = np.float32 if full else np.float16
    t0 = time.perf_counter()
    stats = score_documents(
        model,
        docs,
        kept=None if full else np.sort(np.asarray(bias_tokens)),
        logits_dtype=logits_dtype,
        batch_tokens=batch_tokens,
        out_dir=out_dir,
        progress=progress,
    )
    t1 = time.perf_counter()
    corrections = fit_corrections(
        stats, splits, bias_tokens, kinds=kinds, l2_grid=l2_grid, max_iter=max_iter
    )
    t2 = time.perf_counter()
    sums = correction_loss_sums(stats, corrections)
    t3 = time.perf_counter()
    fit_tokens = int((np.isin(splits, ["fit_train", "fit_select"]) * stats.doc_tokens).sum())
    result = {
        "corrections": corrections,
        "sums": sums,
        "temperature": {k: c.temperature for k, c in corrections.items()},
        "timing": {
            "score_s": t1 - t0,
            "fit_s": t2 - t1,
            "sums_s": t3 - t2,
            "tokens": stats.n_tokens,
            "fit_tokens": fit_tokens,
            "full_vocab": stats.full,
            "stats_bytes": stats.nbytes(),
        },
    }
    del stats
    gc.collect()
    return result


@dataclass
class RecoverabilityResult:
    """Everything a recoverability run produces (``to_dict`` is JSON-ready)."""

    config: dict[str, Any]
    table: dict[str, list]
    corrections: dict[str, dict[str, Correction]]
    shares: dict[str, dict[str, Any]]  # model -> bootstrap_shares(...) against the base, on EVAL
    in_sample: dict[str, dict[str, Any]]  # model -> shares_from_sums(..., split="fit")
    controls: dict[str, dict[str, Any]] = field(default_factory=dict)  # what each control planted
    timing: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self, *, with_bias: bool = False) -> dict[str, Any]:
        return {
            "config": self.config,
            "table": self.table,
            "corrections": {
                m: {k: (c.to_dict() if with_bias else c.summary()) for k, c in cs.items()}
                for m, cs in self.corrections.items()
            },
            "shares": self.shares,
            "in_sample": self.in_sample,
            "controls": self.controls,
            "timing": self.timing,
        }


def _vocab_size(model: Any) -> int | None:
    head = model.get_output_embeddings()
    return int(head.weight.shape[0]) if head is not None else None


def load_model(
    path: str | Path,
    *,
    device: str | None = None,
    dtype: str | None = None,
    trust_remote_code: bool = False,
    revision: str | None = None,
):
    """AutoModelForCausalLM in eval mode (float32 on CPU, the checkpoint's dtype on GPU)."""
    import torch
    from transformers import AutoModelForCausalLM

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype is None:
        dtype = "float32" if device == "cpu" else "auto"
    model = AutoModelForCausalLM.from_pretrained(
        str(path),
        dtype=dtype if dtype == "auto" else getattr(torch, dtype),
        trust_remote_code=trust_remote_code,
        revision=revision,
    ).to(device)  # type: ignore[arg-type]  # transformers types ``to`` without its bound self
    model.eval()
    return model


def run_recoverability(
    base: Any,
    post: Any | None,
    docs: Sequence[np.ndarray],
    *,
    doc_ids: Sequence[Any] | None = None,
    k: int = DEFAULT_K,
    eval_fraction: float = 0.2,
    select_fraction: float = 0.1,
    seed: int = 0,
    controls: Sequence[str] = CONTROLS,
    control_options: dict[str, dict[str, Any]] | None = None,
    kinds: Sequence[str] = KINDS,
    l2_grid: Sequence[float] = L2_GRID,
    n_boot: int = 2000,
    full_vocab_max: int = FULL_VOCAB_MAX,
    batch_tokens: int = 4096,
    max_iter: int = 500,
    load: Callable[[Any], Any] = load_model,
    progress: Progress | None = None,
    scratch_dir: str | Path | None = None,
) -> RecoverabilityResult:
    """The whole analysis for a pair (post may be None: controls only) and its controls.

    base/post: model objects or paths (``load`` turns a path into a model; a loaded path model is
    released after use, so at most one model is in memory). docs: token ids from
    :func:`prepare_documents` (one tokenizer, the base's: the pair must share its vocabulary).
    scratch_dir: keep each model's token statistics in .npy memory maps there (removed after that
    model's fits) instead of in memory: for real vocabularies and long corpora.
    """
    if len(docs) < 3:
        raise ValueError("need at least 3 documents")
    doc_ids = list(range(len(docs))) if doc_ids is None else list(doc_ids)
    splits = split_documents(
        len(docs), eval_fraction=eval_fraction, select_fraction=select_fraction, seed=seed
    )
    fit_targets = np.concatenate([d[1:] for d, s in zip(docs, splits, strict=True) if s != "eval"])
    bias_tokens = top_k_tokens(fit_targets, k)
    opts = dict(control_options or {})
    common = dict(
        kinds=kinds,
        l2_grid=l2_grid,
        full_vocab_max=full_vocab_max,
        batch_tokens=batch_tokens,
        max_iter=max_iter,
    )

    def analyze(model, name):
        out_dir = None if scratch_dir is None else Path(scratch_dir) / name
        try:
            return analyze_model(
                model, docs, splits, bias_tokens, progress=stage(name), out_dir=out_dir, **common
            )
        finally:
            if out_dir is not None:
                shutil.rmtree(out_dir, ignore_errors=True)

    def stage(name):
        if progress is None:
            return None
        return lambda what, done, total: progress(f"{name}:{what}", done, total)

    per_model: dict[str, dict[str, Any]] = {}
    planted: dict[str, dict[str, Any]] = {}
    base_model = load(base) if isinstance(base, (str, Path)) else base
    base_vocab = _vocab_size(base_model)
    per_model["base"] = analyze(base_model, "base")
    for kind in controls:
        # seeded by kind, not position: a control is the same whichever others run beside it
        o = {"seed": seed + 1 + CONTROLS.index(kind), **opts.get(kind, {})}
        with output_head_control(base_model, kind, bias_tokens=bias_tokens, **o) as info:
            per_model[kind] = analyze(base_model, kind)
        planted[kind] = info
    if isinstance(base, (str, Path)):
        del base_model
        gc.collect()
    if post is not None:
        post_model = load(post) if isinstance(post, (str, Path)) else post
        if _vocab_size(post_model) != base_vocab:
            raise ValueError(
                f"the pair must share its vocabulary: the base has {base_vocab} output tokens, "
                f"the post-trained model {_vocab_size(post_model)}"
            )
        per_model["post"] = analyze(post_model, "post")
        if isinstance(post, (str, Path)):
            del post_model
            gc.collect()

    n_tokens = [len(d) - 1 for d in docs]
    table = build_table(doc_ids, splits, n_tokens, {m: r["sums"] for m, r in per_model.items()})
    shares, in_sample = {}, {}
    for m in per_model:
        if m == "base":
            continue
        shares[m] = bootstrap_shares(table, n_boot=n_boot, seed=seed, base="base", post=m)
        in_sample[m] = shares_from_sums(table, base="base", post=m, split="fit")
    config = {
        "k": int(k),
        "n_bias_tokens": int(len(bias_tokens)),
        "eval_fraction": eval_fraction,
        "select_fraction": select_fraction,
        "seed": int(seed),
        "kinds": list(kinds),
        "l2_grid": list(l2_grid),
        "controls": list(controls),
        "n_boot": int(n_boot),
        "n_docs": len(docs),
        "n_tokens": int(sum(n_tokens)),
        "split_docs": {s: int((splits == s).sum()) for s in SPLITS},
        "split_tokens": {
            s: int(sum(n for n, sp in zip(n_tokens, splits, strict=True) if sp == s))
            for s in SPLITS
        },
    }
    return RecoverabilityResult(
        config=config,
        table=table,
        corrections={m: r["corrections"] for m, r in per_model.items()},
        shares=shares,
        in_sample=in_sample,
        controls=planted,
        timing={m: r["timing"] for m, r in per_model.items()},
    )
