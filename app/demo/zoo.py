"""The demo's model zoo: a procedural benchmark suite plus tiny models trained on the CPU, one
base and its post-trained descendants, built once and cached by recipe.

``build_zoo(out_dir)`` writes, under ``out_dir/zoo-<recipe hash>/``::

    benchmarks/<name>.jsonl     the suite (suite.write_suite), local JSONL benchmark format
    models/<name>/              one save_pretrained folder per model (+ demo.json: its recipe)
    manifest.json               written last: what is there (ZooManifest.to_json)

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
===================  =============  ===========================================================

Every post-trained model is paired with demo-base. With ``train_seeds=(0, 1, ...)`` the SFT pair
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
from dataclasses import dataclass, field
from pathlib import Path

from app.demo import suite
from app.demo.trainer import (
    Example,
    ModelSpec,
    build_tokenizer,
    merge_models,
    new_model,
    qa_example,
    save_model,
    train,
)

__all__ = [
    "DEFAULT_RECIPE",
    "MANIFEST_VERSION",
    "Recipe",
    "ZooBenchmark",
    "ZooManifest",
    "ZooModel",
    "ZooPair",
    "build_zoo",
    "load_manifest",
    "recipe_hash",
]

MANIFEST_VERSION = 1
ZOO_CODE_VERSION = 1  # bump when the suite or the training code changes what a recipe builds

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): stage names as in ZooManifest.stages; done == total at its end."""


@dataclass(frozen=True)
class Recipe:
    """Everything that decides the zoo's contents (its hash names the cache folder)."""

    seed: int = 0  # the world (suite and corpus) and the base model's initialization
    vocab_size: int = 768
    model: ModelSpec = field(default_factory=ModelSpec)
    batch_size: int = 16
    base_steps: int = 480
    base_lr: float = 3e-3
    sft_category: str = "Math"
    sft_steps: int = 120  # SFT steps without replay; with replay the same SFT examples are seen
    sft_lr: float = 1e-3
    replay_share: float = 0.2  # share of each replay batch drawn from pretraining documents
    cpt_category: str = "Math"
    cpt_steps: int = 80
    cpt_lr: float = 1e-3
    instruct_steps: int = 150
    instruct_lr: float = 1e-3
    instruct_share: float = 0.5  # share of each benchmark's items shown in chat format
    merge_alpha: float = 0.5
    train_seeds: tuple[int, ...] = (0,)  # post-training seeds (data order) of the SFT models
    num_threads: int = 1  # torch threads while training (1 is fastest on a shared small CPU)

    def __post_init__(self) -> None:
        if self.sft_category not in suite.CATEGORIES or self.cpt_category not in suite.CATEGORIES:
            raise ValueError(f"categories must be among {suite.CATEGORIES}")
        if not 0 <= self.replay_share < 1:
            raise ValueError("replay_share must be in [0, 1)")
        if not self.train_seeds:
            raise ValueError("train_seeds must not be empty")

    def as_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["train_seeds"] = list(self.train_seeds)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Recipe:
        data = dict(data)
        data["model"] = ModelSpec(**data["model"])
        data["train_seeds"] = tuple(data["train_seeds"])
        return cls(**data)


DEFAULT_RECIPE = Recipe()


_CODE_FILES = ("app/demo/suite.py", "app/demo/trainer.py", "app/demo/zoo.py",
               "worker/benchmarks/prompts.py")  # fmt: skip


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
# Manifest


@dataclass(frozen=True)
class ZooBenchmark:
    name: str
    category: str
    path: Path  # absolute path of the JSONL file
    num_choices: int | str | None  # 2..5, "3/4" (mixed), None = generative
    size: int

    @property
    def generative(self) -> bool:
        return self.num_choices is None


@dataclass(frozen=True)
class ZooModel:
    name: str
    path: Path  # absolute path of the save_pretrained folder
    prompting: str  # "base" (few-shot plain text) or "chat" (chat template)
    stage: str  # "base", "sft", "sft+replay", "domain-cpt", "instruct", "merge"
    description: str
    train_seed: int = 0


@dataclass(frozen=True)
class ZooPair:
    base: str
    post: str
    label: str
    stage: str
    description: str


@dataclass(frozen=True)
class ZooManifest:
    root: Path
    recipe_hash: str
    recipe: Recipe
    benchmarks: tuple[ZooBenchmark, ...]
    models: tuple[ZooModel, ...]
    pairs: tuple[ZooPair, ...]
    eval: dict
    build_seconds: float
    cached: bool = False  # True when build_zoo found it already built

    @property
    def benchmark_dir(self) -> Path:
        return self.root / "benchmarks"

    def model(self, name: str) -> ZooModel:
        for m in self.models:
            if m.name == name:
                return m
        raise KeyError(name)

    def to_json(self) -> dict:
        """The manifest.json content; paths relative to ``root``."""

        def rel(p: Path) -> str:
            return p.relative_to(self.root).as_posix()

        return {
            "version": MANIFEST_VERSION,
            "recipe_hash": self.recipe_hash,
            "recipe": self.recipe.as_dict(),
            "benchmarks": [
                {
                    "name": b.name,
                    "category": b.category,
                    "path": rel(b.path),
                    "num_choices": b.num_choices,
                    "size": b.size,
                    "generative": b.generative,
                }
                for b in self.benchmarks
            ],
            "models": [
                {
                    "name": m.name,
                    "path": rel(m.path),
                    "prompting": m.prompting,
                    "stage": m.stage,
                    "description": m.description,
                    "train_seed": m.train_seed,
                }
                for m in self.models
            ],
            "pairs": [dataclasses.asdict(p) for p in self.pairs],
            "eval": self.eval,
            "build_seconds": round(self.build_seconds, 1),
        }

    @classmethod
    def from_json(cls, data: dict, root: Path, *, cached: bool = False) -> ZooManifest:
        if data.get("version") != MANIFEST_VERSION:
            raise ValueError(f"unsupported zoo manifest version {data.get('version')!r}")
        return cls(
            root=root,
            recipe_hash=data["recipe_hash"],
            recipe=Recipe.from_dict(data["recipe"]),
            benchmarks=tuple(
                ZooBenchmark(
                    b["name"], b["category"], root / b["path"], b["num_choices"], b["size"]
                )
                for b in data["benchmarks"]
            ),
            models=tuple(
                ZooModel(
                    m["name"],
                    root / m["path"],
                    m["prompting"],
                    m["stage"],
                    m["description"],
                    m.get("train_seed", 0),
                )  # fmt: skip
                for m in data["models"]
            ),
            pairs=tuple(ZooPair(**p) for p in data["pairs"]),
            eval=dict(data["eval"]),
            build_seconds=float(data["build_seconds"]),
            cached=cached,
        )


def load_manifest(zoo_dir: str | Path) -> ZooManifest:
    """The manifest of a built zoo folder (``out_dir/zoo-<hash>``)."""
    root = Path(zoo_dir).resolve()
    data = json.loads((root / "manifest.json").read_text())
    return ZooManifest.from_json(data, root, cached=True)


EVAL_CONFIG = {
    "seeds": [0, 1, 2],
    "shots": 3,
    "multiple_choice_mode": "loglik",
    "generative_mode": "generate",
    "chat_mode": "generate",
    "temperature": 0.0,
    "max_tokens": 8,
    "note": (
        "Base-prompted models: multiple-choice benchmarks in loglik mode, generative ones in "
        "generate mode (greedy), 3 shots; the seed picks the shots. Chat-prompted models: "
        "generate mode, greedy, zero-shot chat prompt."
    ),
}


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
            (f"demo-sft-{cat}{tag}", "sft", "base",
             f"narrow SFT on {recipe.sft_category} Q/A, no replay (train seed {s})", s)
        )  # fmt: skip
        plan.append(
            (f"demo-sft-{cat}-replay{tag}", "sft+replay", "base",
             f"the same SFT on {recipe.sft_category} with {recipe.replay_share:.0%} replay of "
             f"pretraining documents (train seed {s})", s)
        )  # fmt: skip
    cpt = recipe.cpt_category.lower().replace("/", "-")
    plan.append(
        (f"demo-cpt-{cpt}", "domain-cpt", "base",
         f"continued pretraining on {recipe.cpt_category} prose", 0)
    )  # fmt: skip
    plan.append(
        ("demo-instruct", "instruct", "chat",
         f"instruction-format tuning: chat Q/A on {recipe.instruct_share:.0%} of every "
         "category's items", 0)
    )  # fmt: skip
    plan.append(
        ("demo-merge", "merge", "base",
         f"linear merge: {1 - recipe.merge_alpha:g} * demo-base + {recipe.merge_alpha:g} * "
         f"{plan[1][0]}", 0)
    )  # fmt: skip
    return plan


def _pair_label(stage: str, recipe: Recipe, seed: int, multi: bool) -> str:
    tag = f", seed {seed}" if multi else ""
    return {
        "sft": f"SFT on {recipe.sft_category}{tag}",
        "sft+replay": f"SFT on {recipe.sft_category} + replay{tag}",
        "domain-cpt": f"continued pretraining on {recipe.cpt_category}",
        "instruct": "instruction tuning (chat)",
        "merge": f"merge base + SFT on {recipe.sft_category}",
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
    paths = suite.write_suite(root / "benchmarks", seed)
    benchmarks = tuple(
        ZooBenchmark(info.name, info.category, path, info.k, info.size)
        for info, path in zip(suite.BENCHMARKS, paths, strict=True)
    )
    tokenizer = tokenizer_for(recipe)
    report("suite", 1, 1)

    data = _Data(recipe)
    models: dict[str, object] = {}
    entries = []
    for name, stage, prompting, description, tseed in plan:
        report(name, 0, 1)
        if stage == "base":
            model = train_base(tokenizer, recipe, data, progress=step_reporter(name))
        elif stage == "merge":
            model = merge_models(models["demo-base"], models[plan[1][0]], recipe.merge_alpha)
        else:
            model = post_train(stage, models["demo-base"], tokenizer, recipe, data, tseed,
                               progress=step_reporter(name))  # fmt: skip
        models[name] = model
        path = root / "models" / name
        meta = {"name": name, "stage": stage, "prompting": prompting, "description": description,
                "train_seed": tseed, "recipe_hash": digest}  # fmt: skip
        save_model(model, tokenizer, path, meta=meta)
        entries.append(ZooModel(name, path, prompting, stage, description, tseed))
        report(name, 1, 1)

    multi = len(recipe.train_seeds) > 1
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
    )


class _Data:
    """The training examples of a recipe (built once per zoo)."""

    def __init__(self, recipe: Recipe) -> None:
        seed = recipe.seed
        self.pretrain = [
            Example(d) for c in suite.CATEGORIES for d in suite.corpus(c, seed, kind="pretrain")
        ]
        self.sft = [qa_example(d) for d in suite.corpus(recipe.sft_category, seed, kind="sft")]
        self.prose = [Example(d) for d in suite.corpus(recipe.cpt_category, seed, kind="prose")]
        self.chat = suite.chat_examples(seed, share=recipe.instruct_share)


def tokenizer_for(recipe: Recipe):
    """The demo tokenizer of a recipe (trained on the suite's texts)."""
    return build_tokenizer(suite.tokenizer_text(recipe.seed), recipe.vocab_size)


def train_base(tokenizer, recipe: Recipe, data: _Data | None = None, *, progress=None):
    """The base model: pretraining on every category's documents."""
    data = data or _Data(recipe)
    model = new_model(tokenizer, recipe.model, seed=recipe.seed)
    train(model, tokenizer, data.pretrain, steps=recipe.base_steps, batch_size=recipe.batch_size,
          lr=recipe.base_lr, warmup=30, seed=recipe.seed, progress=progress)  # fmt: skip
    return model


def post_train(
    stage: str, base, tokenizer, recipe: Recipe, data: _Data | None = None, train_seed: int = 0,
    *, progress=None,
):  # fmt: skip
    """A post-trained copy of ``base``: stage "sft", "sft+replay", "domain-cpt" or "instruct"."""
    import copy

    data = data or _Data(recipe)
    seed = hash_seed(recipe.seed, train_seed, stage)
    model = copy.deepcopy(base)
    common = dict(batch_size=recipe.batch_size, warmup=10, seed=seed, progress=progress)
    if stage in ("sft", "sft+replay"):
        examples = list(data.sft)
        steps = recipe.sft_steps
        if stage == "sft+replay" and recipe.replay_share > 0:
            share = recipe.replay_share
            n_replay = round(len(data.sft) * share / (1 - share))
            rng = random.Random(hash_seed(recipe.seed, train_seed, "replay"))
            examples += [rng.choice(data.pretrain) for _ in range(n_replay)]
            steps = round(recipe.sft_steps / (1 - share))
        train(model, tokenizer, examples, steps=steps, lr=recipe.sft_lr, **common)
    elif stage == "domain-cpt":
        train(model, tokenizer, data.prose, steps=recipe.cpt_steps, lr=recipe.cpt_lr, **common)
    elif stage == "instruct":
        chats = []
        for user, reply in data.chat:
            prompt = tokenizer.apply_chat_template(
                [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
            )
            text = prompt + reply + tokenizer.eos_token
            chats.append(Example(text, ((len(prompt), len(text)),)))
        train(model, tokenizer, chats, steps=recipe.instruct_steps, lr=recipe.instruct_lr, **common)
    else:
        raise ValueError(f"unknown post-training stage {stage!r}")
    return model


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
    ap.add_argument("--evaluate", action="store_true", help="evaluate every pair in-process")
    args = ap.parse_args(argv)
    recipe = dataclasses.replace(DEFAULT_RECIPE, seed=args.seed)
    started = time.monotonic()
    manifest = build_zoo(args.out_dir, recipe=recipe, verbose=True)
    print(f"zoo ready in {time.monotonic() - started:.1f}s ({'cached' if manifest.cached else 'built'}"
          f", first build {manifest.build_seconds:.1f}s): {manifest.root}")  # fmt: skip
    if args.evaluate:
        from app.demo.evaluate import evaluate_zoo, format_report

        print(format_report(evaluate_zoo(manifest, verbose=True)))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
