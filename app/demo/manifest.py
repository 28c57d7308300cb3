"""The demo zoo's recipe (what a build trains) and its manifest (what a build wrote), read back
from ``manifest.json`` by ``load_manifest``; ``forgetmap.demo.zoo`` builds them."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from forgetmap.demo import suite
from forgetmap.demo.trainer import ModelSpec

__all__ = [
    "DEFAULT_RECIPE",
    "EVAL_CONFIG",
    "MANIFEST_VERSION",
    "Recipe",
    "ZooBenchmark",
    "ZooCheckpoint",
    "ZooManifest",
    "ZooModel",
    "ZooPair",
    "ZooSeries",
    "load_manifest",
]

MANIFEST_VERSION = 2


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
    format_steps: int = 600  # demo-format: option numbers instead of letters, and reading them
    format_lr: float = 3e-3
    checkpoints: int = 5  # saved along each SFT run (zoo.checkpoint_steps); the last is its end
    train_seeds: tuple[int, ...] = (0,)  # post-training seeds (data order) of the SFT models
    num_threads: int = 1  # torch threads while training (1 is fastest on a shared small CPU)
    suite_scale: int = 1  # each benchmark's size times this, the world grown with it (suite.py)

    def __post_init__(self) -> None:
        if self.sft_category not in suite.CATEGORIES or self.cpt_category not in suite.CATEGORIES:
            raise ValueError(f"categories must be among {suite.CATEGORIES}")
        if not 0 <= self.replay_share < 1:
            raise ValueError("replay_share must be in [0, 1)")
        if not self.train_seeds:
            raise ValueError("train_seeds must not be empty")
        if self.checkpoints < 1:
            raise ValueError("checkpoints must be >= 1 (the last is the final model)")
        suite.benchmarks(self.suite_scale)  # raises on a scale the suite cannot draw

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
class ZooCheckpoint:
    model: str  # the model's name: "<series>/checkpoint-<step>", the final model's at the last step
    path: Path  # absolute path of its save_pretrained folder
    step: int


@dataclass(frozen=True)
class ZooSeries:
    """A post-training run of the zoo as a checkpoint series over the base, in step order (as
    HF Trainer lays it out: ``models/<run>/checkpoint-<step>/``, the final model in
    ``models/<run>/`` itself, which is the last checkpoint)."""

    name: str  # the final model's name
    base: str
    stage: str
    label: str
    checkpoints: tuple[ZooCheckpoint, ...]


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
    series: tuple[ZooSeries, ...] = ()

    def checkpoint_models(self) -> list[ZooModel]:
        """Every series checkpoint that is not also one of ``models`` (the final models are), as
        a model of its run's stage and prompting."""
        known = {m.name for m in self.models}
        return [
            dataclasses.replace(
                self.model(s.name),
                name=c.model,
                path=c.path,
                description=f"{s.name} at step {c.step}",
            )
            for s in self.series
            for c in s.checkpoints
            if c.model not in known
        ]

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
            "series": [
                {
                    "name": s.name,
                    "base": s.base,
                    "stage": s.stage,
                    "label": s.label,
                    "checkpoints": [
                        {"model": c.model, "path": rel(c.path), "step": c.step}
                        for c in s.checkpoints
                    ],
                }
                for s in self.series
            ],
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
                )
                for m in data["models"]
            ),
            pairs=tuple(ZooPair(**p) for p in data["pairs"]),
            eval=dict(data["eval"]),
            build_seconds=float(data["build_seconds"]),
            cached=cached,
            series=tuple(
                ZooSeries(
                    s["name"],
                    s["base"],
                    s["stage"],
                    s["label"],
                    tuple(
                        ZooCheckpoint(c["model"], root / c["path"], c["step"])
                        for c in s["checkpoints"]
                    ),
                )
                for s in data["series"]
            ),
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
