"""The demo's model zoo: a procedural benchmark suite plus tiny models trained on the CPU, one
base and its post-trained descendants, built once and cached by recipe.

``build_zoo(out_dir)`` writes, under ``out_dir/zoo-<recipe hash>/``::

    benchmarks/<name>.jsonl     the suite (suite.write_suite), local JSONL benchmark format
    models/<name>/              one save_pretrained folder per model (+ demo.json: its recipe)
    models/<sft run>/checkpoint-<step>/
                                the checkpoints saved along each SFT run (``Recipe.checkpoints``,
                                each twice the one before; the run's final model is the last)
    manifest.json               written last: what is there (manifest.ZooManifest.to_json)

and returns the manifest. A second call with the same recipe reads ``manifest.json`` and returns
at once (about 50 ms with the interpreter's start); a different recipe builds into its own folder
(older folders are left alone). The cache key (``recipe_hash``) covers the recipe and a digest of
the source files that decide what it builds (``code_digest``), so editing the suite, the corpus
format or the trainer rebuilds instead of serving stale models. A lock file keeps two processes
from building the same recipe at once. The first build takes about 2 minutes on 2 shared CPU cores
(torch on one thread, which is the fastest setting there).

Evaluation seeds (``manifest.eval``) are the worker's: the seed picks the few-shot examples of a
base-prompted model, so the seed-vs-seed noise floor measures prompt sensitivity. Training seeds
(``Recipe.train_seeds``) give extra SFT models, each its own pair.

The zoo mirrors the paper's post-training regimes on one base model "pretrained" on all four
categories (Knowledge/QA, Math, Logic, Language):

===================  =============  ===========================================================
model                stage          what it is
===================  =============  ===========================================================
demo-base            (base)         pretraining on few-shot Q/A documents and prose of all
                                    categories; sees only half of the Math items
demo-sft-math        sft            narrow SFT on Math Q/A (all Math items and 100 more
                                    problems), loss on the answers only
demo-sft-math-replay sft+replay     the same SFT data, mixed with pretraining documents
                                    (``replay_share`` of the batches)
demo-cpt-math        domain-cpt     continued pretraining on Math prose (``7 + 5 = 12.``)
demo-instruct        instruct       instruction-format tuning: chat-formatted Q/A of half the
                                    items of every category (prompting: chat)
demo-merge           merge          linear merge, 0.5 * base + 0.5 * demo-sft-math
demo-format          format         chat tuning like demo-instruct, but the reply names the
                                    option by its number (``Answer: 2``), which the harness's
                                    letter extractor does not read; it is also taught to read
                                    a number as its letter (``format_examples``)
===================  =============  ===========================================================

Every post-trained model is paired with demo-base. The two SFT runs (with and without replay) are
also checkpoint series over demo-base (``ZooManifest.series``): forgetting grows along narrow SFT
and stays low with replay. With ``train_seeds=(0, 1, ...)`` the SFT pair
models are trained once per seed (``demo-sft-math-s1`` ...), as separate pairs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import random
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from forgetmap.core.recoverability_names import FINAL_ANSWER, FORCED_ANSWER
from forgetmap.demo import suite
from forgetmap.demo.evaluate import evaluate_zoo, format_report
from forgetmap.demo.manifest import (
    DEFAULT_RECIPE,
    EVAL_CONFIG,
    Recipe,
    ZooBenchmark,
    ZooCheckpoint,
    ZooManifest,
    ZooModel,
    ZooPair,
    ZooSeries,
    load_manifest,
)
from forgetmap.demo.trainer import (
    Example,
    build_tokenizer,
    merge_models,
    new_model,
    qa_example,
    save_model,
    train,
)
from forgetmap.worker.benchmarks.prompts import build_prompt

__all__ = ["build_zoo", "checkpoint_steps", "code_digest", "recipe_hash", "stage_names"]

ZOO_CODE_VERSION = 1  # bump when the suite or the training code changes what a recipe builds

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): stage names as in ZooManifest.stages; done == total at its end."""


_CODE_FILES = (
    "app/demo/suite.py",
    "app/demo/trainer.py",
    "app/demo/zoo.py",
    "app/demo/manifest.py",
    "worker/benchmarks/prompts.py",
    "app/core/recoverability_names.py",
)


def code_digest() -> str:
    """SHA-256 over the source files that decide what a recipe builds (the suite, the corpus
    format, the trainer, the build plan): a code change rebuilds the zoo instead of serving a
    stale one."""
    repo = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for rel in _CODE_FILES:
        h.update(rel.encode() + b"\0" + (repo / rel).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def recipe_hash(recipe: Recipe) -> str:
    """Names the cache folder: the recipe, ``ZOO_CODE_VERSION`` and ``code_digest()``."""
    payload = {"code": ZOO_CODE_VERSION, "source": code_digest(), "recipe": recipe.as_dict()}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# ---------------------------------------------------------------------------------------------
# Building


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _plan(recipe: Recipe) -> list[tuple[str, str, str, str, int]]:
    """(model name, stage, prompting, description, train seed) in build order."""
    cat = recipe.sft_category.lower().replace("/", "-")
    plan = [("demo-base", "base", "base", "pretrained on all categories", 0)]
    for s in recipe.train_seeds:
        tag = "" if s == recipe.train_seeds[0] and len(recipe.train_seeds) == 1 else f"-s{s}"
        plan.append(
            (
                f"demo-sft-{cat}{tag}",
                "sft",
                "base",
                f"narrow SFT on {recipe.sft_category} Q/A, no replay (train seed {s})",
                s,
            )
        )
        plan.append(
            (
                f"demo-sft-{cat}-replay{tag}",
                "sft+replay",
                "base",
                f"the same SFT on {recipe.sft_category} with {recipe.replay_share:.0%} replay of "
                f"pretraining documents (train seed {s})",
                s,
            )
        )
    cpt = recipe.cpt_category.lower().replace("/", "-")
    plan.append(
        (
            f"demo-cpt-{cpt}",
            "domain-cpt",
            "base",
            f"continued pretraining on {recipe.cpt_category} prose",
            0,
        )
    )
    plan.append(
        (
            "demo-instruct",
            "instruct",
            "chat",
            f"instruction-format tuning: chat Q/A on {recipe.instruct_share:.0%} of every "
            "category's items",
            0,
        )
    )
    plan.append(
        (
            "demo-merge",
            "merge",
            "base",
            f"linear merge: {1 - recipe.merge_alpha:g} * demo-base + {recipe.merge_alpha:g} * "
            f"{plan[1][0]}",
            0,
        )
    )
    plan.append(
        (
            "demo-format",
            "format",
            "chat",
            "answer-format tuning: chat replies name the option by its number (Answer: 2), not "
            "its letter",
            0,
        )
    )
    return plan


def _pair_label(stage: str, recipe: Recipe, seed: int, multi: bool) -> str:
    tag = f", seed {seed}" if multi else ""
    return {
        "sft": f"SFT on {recipe.sft_category}{tag}",
        "sft+replay": f"SFT on {recipe.sft_category} + replay{tag}",
        "domain-cpt": f"continued pretraining on {recipe.cpt_category}",
        "instruct": "instruction tuning (chat)",
        "merge": f"merge base + SFT on {recipe.sft_category}",
        "format": "answer format: option numbers (chat)",
    }[stage]


def build_zoo(
    out_dir: str | Path,
    *,
    recipe: Recipe = DEFAULT_RECIPE,
    progress: Progress | None = None,
    verbose: bool = False,
) -> ZooManifest:
    """Build (or find) the zoo for ``recipe`` under ``out_dir`` and return its manifest."""
    out = Path(out_dir).resolve()
    digest = recipe_hash(recipe)
    root = out / f"zoo-{digest}"
    with _locked(out / f".zoo-{digest}.lock"):
        if (root / "manifest.json").is_file():
            manifest = load_manifest(root)
            if verbose:
                print(f"zoo {digest}: cached at {root}", file=sys.stderr)
            return manifest
        started = time.monotonic()
        staging = out / f".zoo-{digest}.building"
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        manifest = _build(staging, recipe, digest, progress, verbose)
        seconds = time.monotonic() - started
        manifest = dataclasses.replace(manifest, build_seconds=seconds)
        # the manifest names paths relative to the final root
        final = dataclasses.replace(
            manifest,
            root=root,
            benchmarks=tuple(
                dataclasses.replace(b, path=root / b.path.relative_to(staging))
                for b in manifest.benchmarks
            ),
            models=tuple(
                dataclasses.replace(m, path=root / m.path.relative_to(staging))
                for m in manifest.models
            ),
            series=tuple(
                dataclasses.replace(
                    s,
                    checkpoints=tuple(
                        dataclasses.replace(c, path=root / c.path.relative_to(staging))
                        for c in s.checkpoints
                    ),
                )
                for s in manifest.series
            ),
        )
        (staging / "manifest.json").write_text(json.dumps(final.to_json(), indent=2) + "\n")
        if root.exists():
            shutil.rmtree(root)
        staging.rename(root)
        if verbose:
            print(f"zoo {digest}: built in {seconds:.1f}s at {root}", file=sys.stderr)
        return final


def _build(
    root: Path, recipe: Recipe, digest: str, progress: Progress | None, verbose: bool
) -> ZooManifest:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(recipe.num_threads)
    try:
        return _build_inner(root, recipe, digest, progress, verbose)
    finally:
        torch.set_num_threads(threads)


def _build_inner(
    root: Path, recipe: Recipe, digest: str, progress: Progress | None, verbose: bool
) -> ZooManifest:
    plan = _plan(recipe)

    def report(stage: str, done: int, total: int) -> None:
        if progress is not None:
            progress(stage, done, total)

    def step_reporter(stage: str):
        started = time.monotonic()

        def on_step(step: int, steps: int, loss: float) -> None:
            if step == steps or step % 10 == 0:
                report(stage, step, steps)
            if verbose and (step == steps or step % 50 == 0):
                print(
                    f"  {stage}: step {step}/{steps} loss {loss:.3f} "
                    f"({time.monotonic() - started:.0f}s)",
                    file=sys.stderr,
                )

        return on_step

    report("suite", 0, 1)
    seed = recipe.seed
    paths = suite.write_suite(root / "benchmarks", seed, recipe.suite_scale)
    benchmarks = tuple(
        ZooBenchmark(info.name, info.category, path, info.k, info.size)
        for info, path in zip(suite.benchmarks(recipe.suite_scale), paths, strict=True)
    )
    tokenizer = tokenizer_for(recipe)
    report("suite", 1, 1)

    data = _Data(recipe)
    models: dict[str, object] = {}
    entries = []
    runs: dict[str, list[ZooCheckpoint]] = {}
    for name, stage, prompting, description, tseed in plan:
        report(name, 0, 1)
        path = root / "models" / name
        meta = {
            "name": name,
            "stage": stage,
            "prompting": prompting,
            "description": description,
            "train_seed": tseed,
            "recipe_hash": digest,
        }
        if stage == "base":
            model = train_base(tokenizer, recipe, data, progress=step_reporter(name))
        elif stage == "merge":
            model = merge_models(models["demo-base"], models[plan[1][0]], recipe.merge_alpha)
        else:
            saved = runs.setdefault(name, []) if stage in SERIES_STAGES else None

            def save_checkpoint(model, step, *, name=name, path=path, meta=meta, saved=saved):
                folder = path / f"checkpoint-{step}"
                save_model(model, tokenizer, folder, meta={**meta, "step": step})
                saved.append(ZooCheckpoint(f"{name}/checkpoint-{step}", folder, step))

            model = post_train(
                stage,
                models["demo-base"],
                tokenizer,
                recipe,
                data,
                tseed,
                progress=step_reporter(name),
                on_checkpoint=save_checkpoint if saved is not None else None,
            )
            if saved is not None:
                saved.append(ZooCheckpoint(name, path, run_steps(stage, recipe)))
                meta["step"] = run_steps(stage, recipe)
        models[name] = model
        save_model(model, tokenizer, path, meta=meta)
        entries.append(ZooModel(name, path, prompting, stage, description, tseed))
        report(name, 1, 1)

    multi = len(recipe.train_seeds) > 1
    stages = {m.name: m for m in entries}
    series = tuple(
        ZooSeries(
            name,
            "demo-base",
            stages[name].stage,
            _pair_label(stages[name].stage, recipe, stages[name].train_seed, multi),
            tuple(checkpoints),
        )
        for name, checkpoints in runs.items()
    )
    pairs = tuple(
        ZooPair(
            base="demo-base",
            post=m.name,
            label=_pair_label(m.stage, recipe, m.train_seed, multi),
            stage=m.stage,
            description=m.description,
        )
        for m in entries
        if m.stage != "base"
    )
    return ZooManifest(
        root=root,
        recipe_hash=digest,
        recipe=recipe,
        benchmarks=benchmarks,
        models=tuple(entries),
        pairs=pairs,
        eval=dict(EVAL_CONFIG),
        build_seconds=0.0,
        series=series,
    )


class _Data:
    """The training examples of a recipe (built once per zoo)."""

    def __init__(self, recipe: Recipe) -> None:
        seed, scale = recipe.seed, recipe.suite_scale
        self.pretrain = [
            Example(d)
            for c in suite.CATEGORIES
            for d in suite.corpus(c, seed, kind="pretrain", scale=scale)
        ]
        self.sft = [
            qa_example(d) for d in suite.corpus(recipe.sft_category, seed, kind="sft", scale=scale)
        ]
        self.prose = [
            Example(d) for d in suite.corpus(recipe.cpt_category, seed, kind="prose", scale=scale)
        ]
        self.chat = suite.chat_examples(seed, share=recipe.instruct_share, scale=scale)
        self.numbered = suite.chat_examples(
            seed, share=recipe.instruct_share, scale=scale, reply=numbered_reply
        )


def tokenizer_for(recipe: Recipe):
    """The demo tokenizer of a recipe (trained on the suite's texts)."""
    return build_tokenizer(suite.tokenizer_text(recipe.seed, recipe.suite_scale), recipe.vocab_size)


def train_base(tokenizer, recipe: Recipe, data: _Data | None = None, *, progress=None):
    """The base model: pretraining on every category's documents."""
    data = data or _Data(recipe)
    model = new_model(tokenizer, recipe.model, seed=recipe.seed)
    train(
        model,
        tokenizer,
        data.pretrain,
        steps=recipe.base_steps,
        batch_size=recipe.batch_size,
        lr=recipe.base_lr,
        warmup=30,
        seed=recipe.seed,
        progress=progress,
    )
    return model


SERIES_STAGES = ("sft", "sft+replay")  # the runs saved as checkpoint series


def run_steps(stage: str, recipe: Recipe) -> int:
    """Training steps of an SFT run: with replay the same SFT examples are seen, so the run is
    longer by the replay share."""
    if stage == "sft+replay" and recipe.replay_share > 0:
        return round(recipe.sft_steps / (1 - recipe.replay_share))
    return recipe.sft_steps


def checkpoint_steps(stage: str, recipe: Recipe) -> list[int]:
    """The steps at which an SFT run is saved, each twice the one before; the last is the run's
    end. Spaced like this because narrow SFT forgets early: at a fifth of the run most of the
    forgetting has happened (measured on the zoo), so even spacing would show a flat line."""
    steps = run_steps(stage, recipe)
    n = recipe.checkpoints
    return sorted({max(1, round(steps / 2 ** (n - i))) for i in range(1, n + 1)})


def post_train(
    stage: str,
    base,
    tokenizer,
    recipe: Recipe,
    data: _Data | None = None,
    train_seed: int = 0,
    *,
    progress=None,
    on_checkpoint=None,
):
    """A post-trained copy of ``base``: stage "sft", "sft+replay", "domain-cpt", "instruct" or
    "format".

    ``on_checkpoint(model, step)`` is called at each of the run's ``checkpoint_steps`` but its
    last (the returned model), for the SFT stages."""
    import copy

    data = data or _Data(recipe)
    seed = hash_seed(recipe.seed, train_seed, stage)
    model = copy.deepcopy(base)
    common: dict[str, Any] = dict(
        batch_size=recipe.batch_size, warmup=10, seed=seed, progress=progress
    )
    if stage in SERIES_STAGES:
        examples = list(data.sft)
        steps = run_steps(stage, recipe)
        if stage == "sft+replay" and recipe.replay_share > 0:
            share = recipe.replay_share
            n_replay = round(len(data.sft) * share / (1 - share))
            rng = random.Random(hash_seed(recipe.seed, train_seed, "replay"))
            examples += [rng.choice(data.pretrain) for _ in range(n_replay)]
        saves: dict[str, Any] = {}
        if on_checkpoint is not None:
            saves = dict(
                checkpoint_steps=checkpoint_steps(stage, recipe)[:-1],
                on_checkpoint=lambda step: on_checkpoint(model, step),
            )
        train(model, tokenizer, examples, steps=steps, lr=recipe.sft_lr, **common, **saves)
    elif stage == "domain-cpt":
        train(model, tokenizer, data.prose, steps=recipe.cpt_steps, lr=recipe.cpt_lr, **common)
    elif stage == "instruct":
        chats = chat_training(tokenizer, data.chat)
        train(model, tokenizer, chats, steps=recipe.instruct_steps, lr=recipe.instruct_lr, **common)
    elif stage == "format":
        examples = chat_training(tokenizer, data.numbered) + format_examples(tokenizer, recipe)
        random.Random(seed).shuffle(examples)
        train(model, tokenizer, examples, steps=recipe.format_steps, lr=recipe.format_lr, **common)
    else:
        raise ValueError(f"unknown post-training stage {stage!r}")
    return model


def chat_training(tokenizer, chats: list[tuple[str, str]]) -> list[Example]:
    """Chat examples through the tokenizer's template, the loss on the reply and its EOS."""
    out = []
    for user, reply in chats:
        prompt = tokenizer.apply_chat_template(
            [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
        )
        text = prompt + reply + tokenizer.eos_token
        out.append(Example(text, ((len(prompt), len(text)),)))
    return out


def numbered_reply(item) -> str:
    """demo-format's reply: a multiple-choice item's option by its number (``Answer: 2`` for B),
    which no letter extractor reads; a generative item's answer as demo-instruct gives it."""
    if item.gold_index is None:
        return f"Answer: {item.gold}"
    return f"Answer: {item.gold_index + 1}"


READINGS_PER_ITEM = 3


def format_examples(tokenizer, recipe: Recipe) -> list[Example]:
    """What demo-format is taught besides its format: reading its own reply again.

    For every multiple-choice item, ``READINGS_PER_ITEM`` options drawn at random (the gold one
    no more often than any other, so nothing about the answer is taught): the chat prompt, the
    reply naming that option by number, the probe's forced continuation
    (``FORCED_ANSWER``: "Therefore, the answer is (") and the option's letter, the loss on the
    letter alone (so the model does not learn to write the continuation itself and stays
    unreadable to the harness). For every generative item, as many numbers drawn from its
    benchmark's answers: the reply giving that number, the final-answer prefix
    (``FINAL_ANSWER``) and the number again, the loss on the number and its line break.

    A real instruction-tuned model brings this reading with it; the tiny model has none
    (measured: without these examples a probe of its flips is at chance,
    docs/recoverability.md), and the zoo's probe would show nothing but that."""
    rng = random.Random(hash_seed(recipe.seed, "format-reading"))
    out = []
    for items in suite.benchmark_items(recipe.seed, recipe.suite_scale).values():
        answers = sorted({item.gold for item in items})
        for item in items:
            prompt = build_prompt(item, mode="chat")
            assert prompt.messages is not None
            head = tokenizer.apply_chat_template(
                list(prompt.messages), tokenize=False, add_generation_prompt=True
            )
            if item.choices is None:
                for number in rng.sample(answers, min(READINGS_PER_ITEM, len(answers))):
                    context = f"{head}Answer: {number}{FINAL_ANSWER}"
                    text = f"{context}{number}\n"
                    out.append(Example(text, ((len(context), len(text)),)))
                continue
            k = len(item.choices)
            for j in rng.sample(range(k), min(READINGS_PER_ITEM, k)):
                context = f"{head}Answer: {j + 1}{FORCED_ANSWER}"
                out.append(Example(context + item.letters[j], ((len(context), len(context) + 1),)))
    return out


def hash_seed(*parts: object) -> int:
    key = "\0".join(map(str, parts))
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big")


def stage_names(recipe: Recipe = DEFAULT_RECIPE) -> list[str]:
    """The progress stages of a build, in order: "suite", then one per model."""
    return ["suite", *[name for name, *_ in _plan(recipe)]]


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Build the forgetmap demo zoo (cached by recipe).")
    ap.add_argument("out_dir", type=Path, nargs="?", default=Path("data/demo"))
    ap.add_argument("--seed", type=int, default=DEFAULT_RECIPE.seed)
    ap.add_argument(
        "--evaluate",
        action="store_true",
        help="evaluate every pair and series checkpoint in-process",
    )
    args = ap.parse_args(argv)
    recipe = dataclasses.replace(DEFAULT_RECIPE, seed=args.seed)
    started = time.monotonic()
    manifest = build_zoo(args.out_dir, recipe=recipe, verbose=True)
    print(
        f"zoo ready in {time.monotonic() - started:.1f}s "
        f"({'cached' if manifest.cached else 'built'}"
        f", first build {manifest.build_seconds:.1f}s): {manifest.root}"
    )
    if args.evaluate:
        checkpoints = [m.name for m in manifest.checkpoint_models()]
        print(format_report(evaluate_zoo(manifest, checkpoints=checkpoints, verbose=True)))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
