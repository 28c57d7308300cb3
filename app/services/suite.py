"""The paper's suite as local copies: ``suite fetch`` writes them where the hub is reachable,
``suite check`` loads every benchmark exactly as a worker would and reports what it saw.

A copy folder holds ``<name>.jsonl`` per benchmark (``bbh:navigate`` -> ``bbh_navigate.jsonl``) in
the local JSONL benchmark format (``forgetmap.worker.benchmarks.items``): the loader's stable ids,
options in the dataset's order (the seeded shuffles of GPQA and TruthfulQA mc1 are applied when a
worker loads the copy, as they are for the hub), the gold letter, category and k. Beside them,
``manifest.json`` records per benchmark the hub splits it came from (repo, config, split and the
revision the hub served), the number of items and the file's SHA-256. Workers find the copies
through ``FORGETMAP_BENCHMARK_DIRS`` and use them before the hub.
"""

from __future__ import annotations

import collections
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from forgetmap.core.errors import InputError
from forgetmap.core.taxonomy import CATEGORIES, canonical_name, lookup, scored_benchmarks
from forgetmap.worker.benchmarks.items import BenchmarkError, Item, load_jsonl_benchmark
from forgetmap.worker.benchmarks.registry import (
    LoadedBenchmark,
    copy_file_name,
    file_sha256,
    get_spec,
    known_benchmarks,
    load_benchmark,
)
from forgetmap.worker.benchmarks.sources import hub_revision, load_hub_rows

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
GOLD_SKEW = 0.9
"""A multiple-choice benchmark whose gold sits at one letter for more than this share of at least
``GOLD_SKEW_MIN_ITEMS`` items is flagged: an unshuffled source (TruthfulQA, GPQA) looks like
that."""
GOLD_SKEW_MIN_ITEMS = 20

Progress = Callable[[str, int, int], None]


def select_benchmarks(
    benchmarks: Sequence[str] = (), categories: Sequence[str] = (), paper: bool = False
) -> list[str]:
    """Canonical names of the benchmarks asked for: a list, whole categories, or the paper's 94
    scored ones (also the default when nothing is asked for)."""
    if sum(map(bool, (benchmarks, categories, paper))) > 1:
        raise InputError("give one of --benchmarks, --categories or --paper")
    if benchmarks:
        names = [canonical_name(b) for b in benchmarks]
        known = set(known_benchmarks())
        unknown = [raw for raw, name in zip(benchmarks, names, strict=True) if name not in known]
        if unknown:
            raise InputError(
                f"unknown benchmark(s): {', '.join(unknown)}; names are the taxonomy's "
                "(mmlu:anatomy, bbh:navigate, piqa, ...): see app/core/taxonomy.yaml"
            )
        return list(dict.fromkeys(names))
    if categories:
        wrong = [c for c in categories if c not in CATEGORIES]
        if wrong:
            raise InputError(
                f"unknown categor(ies): {', '.join(wrong)}; one of: {', '.join(CATEGORIES)}"
            )
        return [b.name for b in scored_benchmarks() if b.category in categories]
    return [b.name for b in scored_benchmarks()]


# ------------------------------------------------------------------------------------ fetch


@dataclass(frozen=True)
class Fetched:
    name: str
    status: str  # fetched | current | failed
    rows: int = 0
    error: str | None = None


def copy_record(item: Item) -> dict[str, Any]:
    """One line of a local copy (the local JSONL benchmark format)."""
    record: dict[str, Any] = {
        "id": item.sample_id,
        "benchmark": item.benchmark,
        "question": item.question,
        "choices": None if item.choices is None else list(item.choices),
        "answer": item.gold,
        "k": item.k,
        "category": item.category,
    }
    if item.context is not None:
        record["context"] = item.context
    if item.metadata:
        record["metadata"] = item.metadata
    return record


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.is_file():
        return {"format": MANIFEST_FORMAT, "benchmarks": {}}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(
            f"{path}: unreadable ({exc}); delete it to fetch everything again"
        ) from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("benchmarks"), dict):
        raise InputError(f"{path}: not a forgetmap manifest; delete it to fetch again")
    return manifest


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _is_current(entry: dict | None, path: Path, revisions: list[str | None]) -> bool:
    """The copy is on disk unchanged, and the hub serves the revision it was made from (when the
    hub can be asked: an unknown revision does not make a copy stale)."""
    if not entry or not path.is_file() or file_sha256(path) != entry.get("sha256"):
        return False
    recorded = [s.get("revision") for s in entry.get("sources", [])]
    return all(r is None for r in revisions) or recorded == revisions


def fetch_suite(
    names: Sequence[str],
    out: Path,
    *,
    hub_dir: Path | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> list[Fetched]:
    """Write a local copy of each benchmark into ``out`` (see the module docstring).

    ``hub_dir``: read the hub's Parquet exports from that folder instead of the hub.
    ``force``: rewrite copies that are current. The manifest is rewritten after every benchmark,
    so an interrupted run keeps what it finished.
    """
    out.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(out)
    fetch = partial(load_hub_rows, hub_dir=hub_dir)
    results = []
    for done, name in enumerate(names):
        if progress:
            progress(name, done, len(names))
        spec = get_spec(name)
        assert spec is not None, name  # select_benchmarks admits known benchmarks only
        path = out / copy_file_name(name)
        revisions = [None if hub_dir else hub_revision(s) for s in spec.sources]
        if not force and _is_current(manifest["benchmarks"].get(name), path, revisions):
            results.append(Fetched(name, "current", manifest["benchmarks"][name]["rows"]))
            continue
        try:
            items = load_benchmark(name, shuffle=False, fetch=fetch).items
            text = "".join(
                json.dumps(copy_record(it), ensure_ascii=False, sort_keys=True) + "\n"
                for it in items
            )
            _write_atomic(path, text)
            if load_jsonl_benchmark(path, benchmark=name) != items:  # the copy must give these
                raise BenchmarkError(f"{path}: the written copy does not read back the same items")
        except BenchmarkError as exc:
            results.append(Fetched(name, "failed", error=str(exc)))
            continue
        manifest["benchmarks"][name] = {
            "file": path.name,
            "sha256": file_sha256(path),
            "rows": len(items),
            "sources": [
                {**{k: asdict(s)[k] for k in ("repo", "config", "split")}, "revision": rev}
                for s, rev in zip(spec.sources, revisions, strict=True)
            ],
            "from": str(hub_dir.resolve()) if hub_dir else "huggingface.co",
            "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        manifest["format"] = MANIFEST_FORMAT
        _write_atomic(out / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        results.append(Fetched(name, "fetched", len(items)))
    if progress:
        progress("", len(names), len(names))
    return results


# ------------------------------------------------------------------------------------ check


@dataclass
class Checked:
    """How one benchmark loads on this machine (a ``suite check --format json`` record)."""

    name: str
    ok: bool
    source: str  # local | hub | none
    n: int = 0
    path: str | None = None
    sha256: str | None = None
    k_histogram: dict[str, int] = field(default_factory=dict)
    gold_histogram: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    error: str | None = None


def _problems(loaded: LoadedBenchmark) -> list[str]:
    out = []
    if loaded.path is not None:
        entry = read_manifest(loaded.path.parent)["benchmarks"].get(loaded.name)
        if entry and entry.get("sha256") != loaded.sha256:
            out.append(
                f"{loaded.path.name} differs from its {MANIFEST} "
                f"(sha256 {str(loaded.sha256)[:12]}... "
                f"vs {str(entry.get('sha256'))[:12]}...): copy the folder again"
            )
    info = lookup(loaded.name)
    ks = {it.k for it in loaded.items}
    if info is not None and info.num_choices is not None and ks != {info.num_choices}:
        shown = ", ".join("generative" if k is None else str(k) for k in sorted(ks, key=str))
        out.append(f"the taxonomy says k = {info.num_choices}, the items show {shown}")
    golds = collections.Counter(it.gold for it in loaded.items if it.choices is not None)
    total = sum(golds.values())
    if total >= GOLD_SKEW_MIN_ITEMS:
        letter, count = golds.most_common(1)[0]
        if count / total > GOLD_SKEW:
            out.append(f"the gold answer is {letter} for {count} of {total} items (unshuffled?)")
    return out


def check_benchmark(name: str, local_dirs: Sequence[Path]) -> Checked:
    """Load one benchmark as a worker would (local copy first, else the hub; seed 0)."""
    try:
        loaded = load_benchmark(name, local_dirs=local_dirs)
    except BenchmarkError as exc:
        return Checked(name, ok=False, source="none", error=str(exc))
    ks = collections.Counter("generative" if it.k is None else str(it.k) for it in loaded.items)
    golds = collections.Counter(it.gold for it in loaded.items if it.choices is not None)
    return Checked(
        name,
        ok=True,
        source=loaded.source,
        n=len(loaded.items),
        path=None if loaded.path is None else str(loaded.path),
        sha256=loaded.sha256,
        k_histogram=dict(sorted(ks.items(), key=lambda kv: (len(kv[0]), kv[0]))),
        gold_histogram=dict(sorted(golds.items())),
        problems=_problems(loaded),
    )


def check_suite(
    names: Sequence[str], local_dirs: Sequence[Path], *, progress: Progress | None = None
) -> list[Checked]:
    out = []
    for done, name in enumerate(names):
        if progress:
            progress(name, done, len(names))
        out.append(check_benchmark(name, local_dirs))
    if progress:
        progress("", len(names), len(names))
    return out
