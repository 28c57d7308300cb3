"""Evaluate the demo zoo in-process and compute its forgetting map (used by the tests and by
``python -m forgetmap.demo.zoo --evaluate``; ``forgetmap demo`` goes through the worker instead).

Scoring is the worker's: for a base-prompted model, multiple-choice items are scored by choice
log-likelihood over the option letters of the few-shot prompt
(``prompts.choice_continuations`` + ``grading.grade_choice_logprobs``, the worker's ``loglik``
mode) and generative items by greedy generation from the few-shot prompt graded by
``grading.grade``; a chat-prompted model gets the chat prompt (``build_prompt(mode="chat")``)
and greedy generation for every item (the worker's ``generate`` mode).

Seeds are the worker's evaluation seeds: the seed picks the few-shot examples
(``select_shots(..., seed=seed)``), so seed s of a base-prompted model sees other shots than seed t,
and that prompt variation is the sampling noise the noise floor measures. Greedy chat prompts are
zero-shot, so their seeds agree (noise floor 0) unless a temperature is given.

Because every option letter is a single token of the demo tokenizer, the log-likelihoods of all
options come from one forward pass over the context (``fast=True``); ``fast=False`` asks the engine
for each continuation (``TransformersEngine.choice_logprobs``), as the worker does. A test holds
the two together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from forgetmap.core.metrics import (
    TOTAL,
    VALUE_FIELDS,
    aggregate_arrays,
    benchmark_scores,
    count_transitions,
    noise_floor,
)
from forgetmap.worker.benchmarks.grading import grade, grade_choice_logprobs
from forgetmap.worker.benchmarks.items import Item, load_jsonl_benchmark
from forgetmap.worker.benchmarks.prompts import build_prompt, choice_continuations, select_shots
from forgetmap.worker.engines.base import GenerationParams, split_choice_ids

__all__ = [
    "Correctness",
    "PairScores",
    "ZooReport",
    "evaluate_model",
    "evaluate_model_tokens",
    "evaluate_zoo",
    "forgetting",
    "format_report",
    "load_benchmarks",
    "mean_over",
    "noise_by_category",
    "shots_by_item",
]

Correctness = dict[tuple[str, str, int], bool]
"""(benchmark, sample_id, seed) -> correct."""

Tokens = dict[tuple[str, str, int], int]
"""(benchmark, sample_id, seed) -> tokens the evaluation of that sample processed: for a
loglik-scored item its context (prompt) tokens plus every option's continuation tokens (what the
worker's engines score: ``split_choice_ids``), for a generated answer its prompt tokens plus the
generated tokens (``Generation.prompt_tokens + completion_tokens``, EOS included), all by the
model's own tokenizer. Prompt tokens are counted once per sample, as if each were a fresh request
(no prefix caching credited)."""


def _choice_splits(tokenizer, contexts: list[str], choices: list[list[str]]) -> list[list]:
    """Per context, ``split_choice_ids`` of each of its options."""
    return [
        [split_choice_ids(tokenizer, ctx, o) for o in opts]
        for ctx, opts in zip(contexts, choices, strict=True)
    ]


def _fast_choice_logprobs(
    engine, contexts: list[str], choices: list[list[str]], splits: list[list] | None = None
):
    """One forward per context when every continuation is one token right after the context's
    own ids (true for ``" A"``.. ``" Z"`` here); otherwise the engine's own method. ``splits``:
    ``_choice_splits`` of the same arguments, when the caller has them already."""
    import torch

    tok = engine.tokenizer
    plans = []
    if splits is None:
        splits = _choice_splits(tok, contexts, choices)
    for split in splits:
        ctx_ids = split[0][0]
        if any(len(c) != 1 or x != ctx_ids for x, c in split):
            return engine.choice_logprobs(contexts, choices)
        plans.append((ctx_ids, [c[0] for _, c in split]))
    scores: list[list[float]] = [[] for _ in plans]
    order = sorted(range(len(plans)), key=lambda i: len(plans[i][0]))
    for start in range(0, len(order), engine.batch_size):
        idx = order[start : start + engine.batch_size]
        input_ids, attention = engine._left_pad([plans[i][0] for i in idx])
        pos = (attention.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = engine.model(
                input_ids=input_ids,
                attention_mask=attention,
                position_ids=pos,
                logits_to_keep=1,
                use_cache=False,
            ).logits[:, -1]
        logprobs = torch.log_softmax(logits.float(), dim=-1).double()
        for row, i in enumerate(idx):
            scores[i] = [float(logprobs[row, t]) for t in plans[i][1]]
    return scores


def shots_by_item(items: Sequence[Item], n: int, seed: int) -> dict[str, list[Item]]:
    """``select_shots(item, items, n, seed=seed)`` for every item of one benchmark, keyed by
    sample id, from one ranking of the pool: select_shots ranks the whole pool per item, which is
    quadratic in the benchmark's size (minutes at the scaled suite's thousands of items). Every
    item gets the pool's first n items other than itself, so the first n + 1 (select_shots for an
    item outside the pool) decide them all."""
    ids = [it.sample_id for it in items]
    if len({it.benchmark for it in items}) != 1 or len(set(ids)) != len(ids):
        return {it.sample_id: select_shots(it, items, n, seed=seed) for it in items}
    outside = Item("\0outside", "\0outside", "?", None, "?", None, None)
    head = select_shots(outside, items, n + 1, seed=seed)
    return {sid: [c for c in head if c.sample_id != sid][:n] for sid in ids}


def evaluate_model(
    path: str | Path,
    benchmarks: Mapping[str, Sequence[Item]],
    *,
    prompting: str = "base",
    seeds: Iterable[int] = (0, 1, 2),
    shots: int = 3,
    temperature: float = 0.0,
    max_tokens: int = 8,
    num_threads: int = 2,
    fast: bool = True,
) -> Correctness:
    """Per-sample correctness of one model on the given benchmarks, for each evaluation seed."""
    return evaluate_model_tokens(
        path,
        benchmarks,
        prompting=prompting,
        seeds=seeds,
        shots=shots,
        temperature=temperature,
        max_tokens=max_tokens,
        num_threads=num_threads,
        fast=fast,
    )[0]


def evaluate_model_tokens(
    path: str | Path,
    benchmarks: Mapping[str, Sequence[Item]],
    *,
    prompting: str = "base",
    seeds: Iterable[int] = (0, 1, 2),
    shots: int = 3,
    temperature: float = 0.0,
    max_tokens: int = 8,
    num_threads: int = 2,
    fast: bool = True,
) -> tuple[Correctness, Tokens]:
    """``evaluate_model`` and the tokens each sample's evaluation processed (``Tokens``)."""
    from forgetmap.worker.engines.transformers_engine import TransformersEngine

    engine = TransformersEngine(path, device="cpu", num_threads=num_threads, batch_size=32)
    out: Correctness = {}
    tokens: Tokens = {}
    try:
        for seed in seeds:
            for items in benchmarks.values():
                mc = [it for it in items if it.choices is not None]
                gen = [it for it in items if it.choices is None]
                if prompting == "base":
                    shot = shots_by_item(items, shots, seed)
                    if mc:
                        pairs = [choice_continuations(it, shots=shot[it.sample_id]) for it in mc]
                        contexts = [c for c, _ in pairs]
                        conts = [list(o) for _, o in pairs]
                        splits = _choice_splits(engine.tokenizer, contexts, conts)
                        scores = (
                            _fast_choice_logprobs(engine, contexts, conts, splits)
                            if fast
                            else engine.choice_logprobs(contexts, conts)
                        )
                        for it, s, split in zip(mc, scores, splits, strict=True):
                            key = (it.benchmark, it.sample_id, seed)
                            out[key] = grade_choice_logprobs(it, s).correct
                            tokens[key] = len(split[0][0]) + sum(len(c) for _, c in split)
                    todo = gen
                    prompts = [
                        build_prompt(it, mode="base", shots=shot[it.sample_id]) for it in gen
                    ]
                elif prompting == "chat":
                    todo = list(items)
                    prompts = [build_prompt(it, mode="chat") for it in todo]
                else:
                    raise ValueError(f"prompting must be 'base' or 'chat', got {prompting!r}")
                if todo:
                    texts = [p.render(engine.apply_chat_template) for p in prompts]
                    params = GenerationParams(
                        temperature=temperature,
                        max_tokens=max_tokens,
                        seed=seed,
                        stop=tuple(prompts[0].stop),
                    )
                    for it, g in zip(todo, engine.generate(texts, params), strict=True):
                        out[(it.benchmark, it.sample_id, seed)] = grade(it, g.text).correct
                        tokens[(it.benchmark, it.sample_id, seed)] = (
                            g.prompt_tokens + g.completion_tokens
                        )
    finally:
        engine.close()
    return out, tokens


# ---------------------------------------------------------------------------------------------
# Forgetting between two models, and noise floors


@dataclass
class PairScores:
    """F_true / BT_true of one pair per category (macro, mean over seeds), per benchmark and
    seed."""

    categories: dict[str, dict[str, float]] = field(default_factory=dict)
    benchmarks: dict[tuple[str, int], dict[str, float]] = field(default_factory=dict)


def _arrays(
    pre: Correctness, post: Correctness, items: Sequence[Item], seed: int
) -> dict[int | None, tuple[np.ndarray, np.ndarray]]:
    groups: dict[int | None, tuple[list[int], list[int]]] = {}
    for it in items:
        key = (it.benchmark, it.sample_id, seed)
        if key in pre and key in post:
            a, b = groups.setdefault(it.k, ([], []))
            a.append(int(pre[key]))
            b.append(int(post[key]))
    return {k: (np.array(a), np.array(b)) for k, (a, b) in groups.items()}


def forgetting(
    pre: Correctness,
    post: Correctness,
    benchmarks: Mapping[str, Sequence[Item]],
    seeds: Iterable[int],
    *,
    how: str = "macro",
) -> PairScores:
    """The map of one pair: seed s of ``pre`` against seed s of ``post``
    (forgetmap.core.metrics)."""
    units = []
    result = PairScores()
    for seed in seeds:
        for name, items in benchmarks.items():
            groups = {
                k: count_transitions(a, b) for k, (a, b) in _arrays(pre, post, items, seed).items()
            }
            if not groups:
                continue
            s = benchmark_scores(groups)
            result.benchmarks[(name, seed)] = s.as_dict()
            category = items[0].category or ""
            units.append({"benchmark": name, "category": category, "seed": seed, **s.as_dict()})
    cols = {k: np.array([u[k] for u in units]) for k in ("benchmark", "category", "seed", "n")}
    values = {name: np.array([u[name] for u in units]) for name in VALUE_FIELDS}
    pair = np.zeros(len(units), dtype=np.int64)  # one pair
    for cat in aggregate_arrays(
        pair, cols["category"], cols["benchmark"], cols["seed"], cols["n"], values, how
    ):
        result.categories[cat["category"]] = {
            "f_true": cat["f_true"],
            "f_true_std": cat["f_true_std"] or 0.0,
            "bt_true": cat["bt_true"],
            "bt_true_std": cat["bt_true_std"] or 0.0,
            "f": cat["f"],
            "bt": cat["bt"],
            "f_max": cat["f_max"],
            "bt_max": cat["bt_max"],
        }
    return result


def noise_by_category(
    results: Correctness, benchmarks: Mapping[str, Sequence[Item]], seeds: Sequence[int]
) -> dict[str, float]:
    """A model's noise floor per category (and "Total"): the chance-adjusted flip rate of the
    model against itself, seed s vs seed t (``forgetmap.core.metrics.noise_floor``), averaged like
    the map (benchmarks within a category, categories for Total)."""
    seeds = list(seeds)
    per_cat: dict[str, list[float]] = {}
    for items in benchmarks.values():
        pairs = []
        for i, s in enumerate(seeds):
            for t in seeds[i + 1 :]:
                a = _arrays(results, results, items, s)
                b = _arrays(results, results, items, t)
                pairs.append({k: count_transitions(a[k][0], b[k][0]) for k in a if k in b})
        floor = noise_floor(pairs)
        if floor is not None:
            per_cat.setdefault(items[0].category or "", []).append(floor.f_true)
    out = {c: float(np.mean(v)) for c, v in per_cat.items()}
    if out:
        out[TOTAL] = float(np.mean(list(out.values())))
    return out


def mean_over(scores: PairScores, categories: Iterable[str], name: str = "f_true") -> float:
    """Unweighted mean of a category value over ``categories`` (those present)."""
    values = [scores.categories[c][name] for c in categories if c in scores.categories]
    return float(np.mean(values)) if values else float("nan")


# ---------------------------------------------------------------------------------------------
# The whole zoo


@dataclass
class ZooReport:
    """In-process evaluation of a zoo: accuracy per model and benchmark (mean over seeds), the
    map of every pair, and every model's noise floor per category."""

    seeds: tuple[int, ...]
    sft_category: str
    accuracy: dict[str, dict[str, float]]
    pairs: dict[str, PairScores]
    labels: dict[str, str]
    noise: dict[str, dict[str, float]]
    results: dict[str, Correctness]
    seconds: float
    tokens: dict[str, Tokens] = field(default_factory=dict)  # per model, as ``Tokens`` says

    @property
    def untouched(self) -> list[str]:
        """The categories the SFT data does not cover."""
        cats = {c for s in self.pairs.values() for c in s.categories}
        return sorted(c for c in cats if c not in (TOTAL, self.sft_category))


def load_benchmarks(manifest) -> dict[str, list[Item]]:
    """The zoo's benchmarks, read from its JSONL files as the worker reads them."""
    return {b.name: load_jsonl_benchmark(b.path) for b in manifest.benchmarks}


def evaluate_zoo(
    manifest,
    *,
    seeds: Sequence[int] | None = None,
    models: Sequence[str] | None = None,
    checkpoints: Sequence[str] = (),
    num_threads: int = 1,
    verbose: bool = False,
) -> ZooReport:
    """Evaluate the zoo's models (all, or ``models`` plus the base) and map every pair; plus the
    series checkpoints named in ``checkpoints``, each mapped against its series' base like the
    series' pairs (``report.pairs[checkpoint]``)."""
    import sys
    import time

    started = time.monotonic()
    seeds = tuple(manifest.eval["seeds"] if seeds is None else seeds)
    benchmarks = load_benchmarks(manifest)
    wanted = None if models is None else {"demo-base", *models}
    extra = [m for m in manifest.checkpoint_models() if m.name in checkpoints]
    if missing := set(checkpoints) - {m.name for m in extra}:
        raise ValueError(f"not checkpoints of the zoo's series: {sorted(missing)}")
    results: dict[str, Correctness] = {}
    tokens: dict[str, Tokens] = {}
    for m in [*manifest.models, *extra]:
        if wanted is not None and m.name not in wanted and m not in extra:
            continue
        t = time.monotonic()
        results[m.name], tokens[m.name] = evaluate_model_tokens(
            m.path,
            benchmarks,
            prompting=m.prompting,
            seeds=seeds,
            shots=manifest.eval["shots"],
            max_tokens=manifest.eval["max_tokens"],
            num_threads=num_threads,
        )
        if verbose:
            print(f"  evaluated {m.name} in {time.monotonic() - t:.1f}s", file=sys.stderr)
    accuracy = {}
    for name, res in results.items():
        per: dict[str, list[bool]] = {}
        for (bench, _sid, _seed), ok in res.items():
            per.setdefault(bench, []).append(ok)
        accuracy[name] = {b: float(np.mean(v)) for b, v in per.items()}
    pairs, labels = {}, {}
    for p in manifest.pairs:
        if p.post in results and p.base in results:
            pairs[p.post] = forgetting(results[p.base], results[p.post], benchmarks, seeds)
            labels[p.post] = p.label
    for run in manifest.series:
        for c in run.checkpoints:
            if c.model not in pairs and c.model in results and run.base in results:
                pairs[c.model] = forgetting(results[run.base], results[c.model], benchmarks, seeds)
                labels[c.model] = f"{run.label} @ step {c.step}"
    noise = {name: noise_by_category(res, benchmarks, seeds) for name, res in results.items()}
    return ZooReport(
        seeds=seeds,
        sft_category=manifest.recipe.sft_category,
        accuracy=accuracy,
        pairs=pairs,
        labels=labels,
        noise=noise,
        results=results,
        seconds=time.monotonic() - started,
        tokens=tokens,
    )


def format_report(report: ZooReport) -> str:
    """A plain-text table of the report."""
    lines = [f"accuracy (mean over seeds {list(report.seeds)})"]
    benches = list(next(iter(report.accuracy.values())))
    lines.append("  " + " ".join(f"{b[5:]:>14s}" for b in benches) + "  model")
    for name, acc in report.accuracy.items():
        lines.append(
            "  " + " ".join(f"{acc.get(b, float('nan')):14.2f}" for b in benches) + f"  {name}"
        )
    cats = [c for c in next(iter(report.pairs.values())).categories if c != TOTAL] + [TOTAL]
    lines.append("F_true / BT_true per category (macro; mean +- std over seeds)")
    for post, scores in report.pairs.items():
        lines.append(f"  {post} ({report.labels[post]})")
        for c in cats:
            v = scores.categories.get(c)
            if v is None:
                continue
            lines.append(
                f"    {c:13s} F_true {v['f_true']:.3f} +- {v['f_true_std']:.3f}   "
                f"BT_true {v['bt_true']:.3f} +- {v['bt_true_std']:.3f}   "
                f"F {v['f']:.3f} BT {v['bt']:.3f}"
            )
    lines.append("noise floor (chance-adjusted self flip rate across seeds) per category")
    for name, floor in report.noise.items():
        lines.append(
            f"  {name:22s} " + "  ".join(f"{c} {floor.get(c, 0.0):.3f}" for c in cats if c in floor)
        )
    lines.append(f"evaluated in {report.seconds:.1f}s")
    return "\n".join(lines)
