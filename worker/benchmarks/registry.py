"""The registry: a benchmark name -> its items, from a local copy or the Hugging Face hub.

``load_benchmark`` resolves a benchmark name (any spelling that
``forgetmap.core.taxonomy.canonical_name`` knows, or ``local:<path>``), and reads its rows from a
local copy first (``<name>.jsonl`` in a benchmark folder, written by ``forgetmap suite fetch`` with
the same ids and unshuffled options, so a copy gives exactly the hub's items), else from the hub
through ``forgetmap.worker.benchmarks.sources.load_hub_rows`` (script-based datasets from their
Parquet export; gated ones with ``HF_TOKEN``), then runs the benchmark's loader
(``forgetmap.worker.benchmarks.loaders``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from forgetmap.core.taxonomy import canonical_name, lookup, not_scored_benchmarks, scored_benchmarks
from forgetmap.runtime.paths import confined
from forgetmap.worker.benchmarks.ids import shuffle_item
from forgetmap.worker.benchmarks.items import BenchmarkError, Item, load_jsonl_benchmark
from forgetmap.worker.benchmarks.loaders import (
    BBH_DATASET_CONFIG,
    Row,
    load_arc,
    load_bbh,
    load_commonsense_qa,
    load_gpqa,
    load_hellaswag,
    load_mctest,
    load_mmlu,
    load_musr,
    load_piqa,
    load_salad_bench_mrq,
    load_social_iqa,
    load_truthfulqa_mc1,
)
from forgetmap.worker.benchmarks.sources import HubSource, load_hub_rows

__all__ = [
    "LOCAL_PREFIX",
    "BenchmarkSpec",
    "LoadedBenchmark",
    "copy_file_name",
    "file_sha256",
    "get_benchmark",
    "get_spec",
    "known_benchmarks",
    "load_benchmark",
]

LOCAL_PREFIX = "local:"


Loader = Callable[..., list[Item]]


@dataclass(frozen=True)
class BenchmarkSpec:
    """A hub benchmark: its canonical name, the splits it pools (usually one), loader and default
    option shuffle."""

    name: str
    sources: tuple[HubSource, ...]
    loader: Loader
    shuffle: bool = False


def _spec(name: str, source: HubSource, loader: Loader, shuffle: bool = False) -> BenchmarkSpec:
    return BenchmarkSpec(name, (source,), loader, shuffle)


def _mctest_spec(name: str) -> BenchmarkSpec:
    info = lookup(name)
    subsets = info.subsets if info is not None and info.subsets else ("mc500",)
    sources = tuple(HubSource("sagnikrayc/mctest", subset, "test") for subset in subsets)
    return BenchmarkSpec(name, sources, load_mctest)


def _spec_for(name: str) -> BenchmarkSpec | None:
    family, _, task = name.partition(":")
    if family == "mmlu" and task:
        return _spec(name, HubSource("lighteval/mmlu", task, "test"), load_mmlu)
    if family == "bbh" and task and task not in ("dyck_languages", "word_sorting"):
        config = BBH_DATASET_CONFIG.get(task, task)
        return _spec(name, HubSource("lighteval/big_bench_hard", config, "train"), load_bbh)
    if family == "arc" and task in ("easy", "challenge"):
        config = {"easy": "ARC-Easy", "challenge": "ARC-Challenge"}[task]
        return _spec(name, HubSource("allenai/ai2_arc", config, "test"), load_arc)
    if family == "musr" and task:
        return _spec(name, HubSource("TAUR-Lab/MuSR", None, task), load_musr)
    if name == "mctest":
        return _mctest_spec(name)
    gpqa = HubSource("Idavidrein/gpqa", "gpqa_diamond", "train", gated=True)
    truthful = HubSource("truthfulqa/truthful_qa", "multiple_choice", "validation")
    fixed: dict[str, BenchmarkSpec] = {
        "gpqa:diamond": _spec(name, gpqa, load_gpqa, shuffle=True),
        "truthfulqa:mc1": _spec(name, truthful, load_truthfulqa_mc1, shuffle=True),
        "hellaswag": _spec(name, HubSource("Rowan/hellaswag", None, "validation"), load_hellaswag),
        "social_iqa": _spec(
            name, HubSource("allenai/social_i_qa", None, "validation"), load_social_iqa
        ),
        "piqa": _spec(name, HubSource("ybisk/piqa", None, "validation", "plain_text"), load_piqa),
        "commonsense_qa": _spec(
            name, HubSource("tau/commonsense_qa", None, "validation"), load_commonsense_qa
        ),
        "salad_bench:mrq": _spec(
            name, HubSource("walledai/SaladBench", "mrq", "train"), load_salad_bench_mrq
        ),
    }
    return fixed.get(name)


@lru_cache(maxsize=1)
def _registry() -> dict[str, BenchmarkSpec]:
    names = [info.name for info in scored_benchmarks()] + list(not_scored_benchmarks())
    specs = {}
    for name in names:
        spec = _spec_for(name)
        if spec is not None:
            specs[name] = spec
    missing = [info.name for info in scored_benchmarks() if info.name not in specs]
    if missing:  # the taxonomy grew a benchmark this module does not know how to load
        raise RuntimeError(f"no loader for scored benchmark(s): {', '.join(missing)}")
    return specs


def known_benchmarks() -> tuple[str, ...]:
    """Canonical names ``get_benchmark`` loads from the hub: the 94 scored ones plus
    ``bbh:multistep_arithmetic_two`` (generative, not scored)."""
    return tuple(_registry())


def get_spec(name: str) -> BenchmarkSpec | None:
    """The hub spec of a benchmark name (any known spelling), or None."""
    return _registry().get(canonical_name(name))


def _resolve_local_path(raw: str, local_dirs: Sequence[str | Path]) -> Path:
    """The file of ``local:<raw>``. With ``local_dirs``, it must lie inside one of them (a relative
    path is looked up in each, in order); without, any readable path is accepted."""
    if not raw.strip():
        raise BenchmarkError(f"{LOCAL_PREFIX} needs a path: {LOCAL_PREFIX}<file.jsonl>")
    candidate = Path(raw.strip()).expanduser()
    if not local_dirs:
        return candidate
    roots = [Path(d).expanduser().resolve() for d in local_dirs]
    where = ", ".join(map(str, roots))
    if candidate.is_absolute():
        path = confined(candidate, roots)
        if path is None:
            raise BenchmarkError(
                f"local benchmark {raw!r} is outside the benchmark directories ({where})"
            )
        if path.is_file():
            return path
        raise BenchmarkError(f"local benchmark {raw!r} not found")
    for root in roots:
        path = confined(root / candidate, [root])
        if path is None:
            raise BenchmarkError(
                f"local benchmark {raw!r} points outside the benchmark directories"
            )
        if path.is_file():
            return path
    raise BenchmarkError(f"local benchmark {raw!r} not found in {where}")


def _find_local_file(raw: str, canonical: str, local_dirs: Sequence[str | Path]) -> Path | None:
    """A JSONL file named after the benchmark in one of ``local_dirs`` (an offline copy)."""
    names = []
    for n in (raw, canonical, canonical.replace(":", "_"), canonical.replace(":", "__")):
        if n and "/" not in n and "\\" not in n and n not in (".", "..") and n not in names:
            names.append(n)
    for directory in local_dirs:
        for n in names:
            path = Path(directory).expanduser() / f"{n}.jsonl"
            if path.is_file():
                return path
    return None


def _select(items: list[Item], limit: int | None) -> list[Item]:
    """At most ``limit`` items, chosen by a hash of their ids (a fixed pseudo-random subset that
    does not depend on row order), returned in their original order."""
    if limit is None:
        return items
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise BenchmarkError(f"limit must be a positive integer, got {limit!r}")
    if limit >= len(items):
        return items

    def key(pos: int) -> bytes:
        item = items[pos]
        return hashlib.sha256(f"{item.benchmark}\0{item.sample_id}".encode()).digest()

    keep = set(sorted(range(len(items)), key=key)[:limit])
    return [item for pos, item in enumerate(items) if pos in keep]


def copy_file_name(benchmark: str) -> str:
    """The file name of a benchmark's local copy (``suite fetch``): ``bbh:navigate`` ->
    ``bbh_navigate.jsonl``."""
    return f"{canonical_name(benchmark).replace(':', '_')}.jsonl"


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class LoadedBenchmark:
    """A benchmark's items and where they came from."""

    name: str
    items: list[Item]
    source: str
    """``local`` (a JSONL file: a ``suite fetch`` copy or a ``local:`` benchmark) or ``hub``."""
    path: Path | None = None
    sha256: str | None = None
    """SHA-256 of the local file, so that results can name the exact data they saw."""

    def data_record(self) -> dict[str, str]:
        """What a shard's eval config records about its data."""
        if self.path is None:
            return {"source": self.source}
        return {"source": self.source, "file": self.path.name, "sha256": str(self.sha256)}


def _from_file(name: str, path: Path, items: list[Item]) -> LoadedBenchmark:
    return LoadedBenchmark(name, items, "local", path, file_sha256(path))


def load_benchmark(
    name: str,
    *,
    local_dirs: Sequence[str | Path] = (),
    limit: int | None = None,
    seed: int = 0,
    shuffle: bool | None = None,
    fetch: Callable[[HubSource], Iterable[Row]] | None = None,
) -> LoadedBenchmark:
    """The items of one benchmark, and their source.

    ``name``: ``local:<path>`` (a JSONL benchmark; with ``local_dirs`` the path must lie inside one
    of them, relative paths are looked up there), or a benchmark name in any spelling the taxonomy
    knows (``mmlu:anatomy``, ``mmlu_anatomy``, ``leaderboard|mmlu:anatomy|5``). A local copy
    ``copy_file_name(name)`` (``mmlu_anatomy.jsonl``; also ``<name>.jsonl``) in one of
    ``local_dirs`` is used first, the hub only without one.

    ``limit``: keep at most that many items, a fixed pseudo-random subset chosen by hashed sample
    id (independent of row order and of the seed). ``seed``: the option-shuffle seed.
    ``shuffle``: ``None`` = the benchmark's default (on for GPQA and TruthfulQA mc1, off for the
    rest and for ``local:`` files), True/False = force. ``fetch``: replaces ``load_hub_rows``.
    """
    if not isinstance(name, str) or not name.strip():
        raise BenchmarkError("a benchmark name is required")
    raw = name.strip()
    if raw.startswith(LOCAL_PREFIX):
        path = _resolve_local_path(raw[len(LOCAL_PREFIX) :], local_dirs)
        items = load_jsonl_benchmark(path)
        if shuffle:
            items = [shuffle_item(it, seed) for it in items]
        return _from_file(raw, path, _select(items, limit))

    canonical = canonical_name(raw)
    spec = _registry().get(canonical)
    do_shuffle = (spec.shuffle if spec else False) if shuffle is None else shuffle
    local = _find_local_file(raw, canonical, local_dirs)
    if local is not None:
        items = load_jsonl_benchmark(local, benchmark=canonical)
        if do_shuffle:
            items = [shuffle_item(it, seed) for it in items]
        return _from_file(canonical, local, _select(items, limit))

    if spec is None:
        if canonical in not_scored_benchmarks():
            raise BenchmarkError(
                f"benchmark {raw!r} ({canonical}) is not scored by the paper and has no loader"
            )
        known = ", ".join(known_benchmarks())
        raise BenchmarkError(
            f"unknown benchmark {raw!r}; known: {known}; or {LOCAL_PREFIX}<path to a .jsonl file>"
        )
    try:
        rows = [row for source in spec.sources for row in (fetch or load_hub_rows)(source)]
    except BenchmarkError as exc:
        folders = ", ".join(map(str, local_dirs)) or "none configured"
        raise BenchmarkError(
            f"{spec.name}: no local copy {copy_file_name(spec.name)} in the benchmark folders "
            f"({folders}), and {exc}"
        ) from exc
    items = spec.loader(rows, spec.name, seed=seed, shuffle=do_shuffle)
    if not items:
        where = ", ".join(map(str, spec.sources))
        raise BenchmarkError(f"{spec.name}: {where} gave no usable rows")
    return LoadedBenchmark(spec.name, _select(items, limit), "hub")


def get_benchmark(name: str, **options: Any) -> list[Item]:
    """The items of one benchmark (``load_benchmark`` without the source)."""
    return load_benchmark(name, **options).items
