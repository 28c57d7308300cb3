"""Synthetic per-sample results for the benchmarks, plus small timing helpers (shared by
bench/*.py).

The data imitates a real sweep: ``models`` models, ``benchmarks`` benchmarks (the taxonomy's 94
scored benchmarks first, then made-up ones with a category given in the file), ``seeds`` seeds,
and ``rows // (models * benchmarks * seeds)`` samples per (model, benchmark, seed). Each sample has
a fixed difficulty shared by every model, so a base and a post model agree on most samples and
flip on some, as real checkpoints do. ``correct ~ Bernoulli(1/k + (1 - 1/k) * sigmoid(skill -
difficulty))`` (no chance floor for generative items). A few benchmarks mix option counts per
sample (the taxonomy's k = null ones and two made-up ones); two made-up ones are generative
(num_choices empty). No long text columns.

One Parquet file per model, in the generic table format: model, benchmark, sample_id, seed,
correct, num_choices, category.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from forgetmap.core.taxonomy import CATEGORIES, scored_benchmarks

FULL_ROWS = 10_000_000
FULL_MODELS = 10
FULL_BENCHMARKS = 100
FULL_SEEDS = 3

# option counts drawn per sample for benchmarks whose k varies between questions
_MIXED_K = {
    "musr:murder_mysteries": (2,),
    "musr:object_placements": (3, 4, 5),
    "musr:team_allocation": (3,),
    "truthfulqa:mc1": (4, 5, 6, 7, 8, 9, 10, 11, 12, 13),
    "salad_bench:mrq": (2, 3, 4),
}


@dataclass(frozen=True)
class Spec:
    rows: int = FULL_ROWS
    models: int = FULL_MODELS
    benchmarks: int = FULL_BENCHMARKS
    seeds: int = FULL_SEEDS
    correct_type: str = "bool"  # bool | int | str: the parquet type of `correct`
    rng_seed: int = 1234

    @property
    def samples(self) -> int:
        return max(1, self.rows // (self.models * self.benchmarks * self.seeds))

    @property
    def total_rows(self) -> int:
        return self.samples * self.models * self.benchmarks * self.seeds

    def model_names(self) -> list[str]:
        return [f"model-{i:02d}" for i in range(self.models)]

    def pairs(self, per_base: int = 3) -> list[tuple[str, str]]:
        """Each model is the base of ``per_base`` pairs (the next models, cyclically)."""
        names = self.model_names()
        n = len(names)
        per_base = min(per_base, n - 1)
        return [(names[i], names[(i + j) % n]) for i in range(n) for j in range(1, per_base + 1)]


@dataclass(frozen=True)
class BenchDef:
    name: str
    category: str
    # option count per sample; 0 = generative (written as null)
    k: np.ndarray
    difficulty: np.ndarray


def benchmark_defs(spec: Spec) -> list[BenchDef]:
    rng = np.random.default_rng(spec.rng_seed)
    known = list(scored_benchmarks())
    out: list[BenchDef] = []
    n = spec.samples
    for i in range(spec.benchmarks):
        if i < len(known):
            info = known[i]
            name, category = info.name, info.category
            if info.num_choices is not None:
                k = np.full(n, info.num_choices, dtype=np.int16)
            else:
                k = rng.choice(np.array(_MIXED_K.get(name, (2, 4)), dtype=np.int16), size=n)
        else:
            j = i - len(known)
            name = f"custom:task_{j:02d}"
            category = CATEGORIES[j % len(CATEGORIES)]
            kind = j % 3
            if kind == 0:  # mixed 2- and 4-option questions
                k = rng.choice(np.array([2, 4], dtype=np.int16), size=n)
            elif kind == 1:  # generative
                k = np.zeros(n, dtype=np.int16)
            else:
                k = np.full(n, 4, dtype=np.int16)
        out.append(BenchDef(name, category, k, rng.normal(0.0, 1.3, size=n)))
    return out


def model_table(spec: Spec, model_index: int, defs: list[BenchDef]) -> pa.Table:
    """All rows of one model, ordered by (benchmark, seed, sample)."""
    rng = np.random.default_rng(spec.rng_seed * 1000 + model_index)
    n, s, b = spec.samples, spec.seeds, len(defs)
    skill = -0.4 + 1.4 * model_index / max(1, spec.models - 1)
    bench_skill = skill + rng.normal(0.0, 0.4, size=b)
    # shape (b, s, n)
    difficulty = np.stack([d.difficulty for d in defs])[:, None, :]
    k = np.stack([d.k for d in defs])[:, None, :].astype(np.float64)
    floor = np.where(k > 0, 1.0 / np.maximum(k, 1.0), 0.0)
    logits = bench_skill[:, None, None] - difficulty + rng.normal(0.0, 0.35, size=(b, s, n))
    p = floor + (1.0 - floor) / (1.0 + np.exp(-logits))
    correct = (rng.random((b, s, n)) < p).reshape(-1)
    total = b * s * n

    bench_idx = np.repeat(np.arange(b, dtype=np.int32), s * n)
    seed = np.tile(np.repeat(np.arange(s, dtype=np.int64), n), b)
    sample_idx = np.tile(np.arange(n, dtype=np.int32), b * s)
    k_rows = np.broadcast_to(np.stack([d.k for d in defs])[:, None, :], (b, s, n)).reshape(-1)

    bench_names = pa.array([d.name for d in defs], pa.string())
    categories = pa.array([d.category for d in defs], pa.string())
    sample_ids = pa.array([f"q{i:05d}" for i in range(n)], pa.string())
    if spec.correct_type == "bool":
        correct_col = pa.array(correct)
    elif spec.correct_type == "int":
        correct_col = pa.array(correct.astype(np.int64))
    elif spec.correct_type == "str":
        correct_col = pc.take(pa.array(["false", "true"]), pa.array(correct.astype(np.int8)))
    else:
        raise ValueError(f"correct_type must be bool, int or str, got {spec.correct_type!r}")
    return pa.table(
        {
            "model": pc.take(
                pa.array([spec.model_names()[model_index]]), pa.array(np.zeros(total, np.int32))
            ),
            "benchmark": pc.take(bench_names, pa.array(bench_idx)),
            "sample_id": pc.take(sample_ids, pa.array(sample_idx)),
            "seed": pa.array(seed),
            "correct": correct_col,
            "num_choices": pa.array(k_rows.astype(np.int64), mask=k_rows == 0),
            "category": pc.take(categories, pa.array(bench_idx)),
        }
    )


def write_dataset(spec: Spec, directory: Path) -> list[Path]:
    """One Parquet file per model; returns the paths in model order."""
    directory.mkdir(parents=True, exist_ok=True)
    defs = benchmark_defs(spec)
    paths = []
    for i, name in enumerate(spec.model_names()):
        path = directory / f"{name}.parquet"
        pq.write_table(model_table(spec, i, defs), path)
        paths.append(path)
    return paths


def load_dataset(spec: Spec, store, paths: list[Path], *, pairs: bool = True) -> None:
    """Import every file with the app's own path and add the pairs (for benchmarks that need
    data)."""
    from forgetmap.db.pairing import add_pair
    from forgetmap.importers import import_file

    for path in paths:
        import_file(store, "table", path)
    if pairs:
        for base, post in spec.pairs():
            with store.transaction() as conn:
                add_pair(conn, base, post, label=None, stage=None)


# ---------------------------------------------------------------------------------------------
# timing helpers


def now() -> float:
    return time.perf_counter()


def median(values: list[float]) -> float:
    return statistics.median(values)


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    gc.collect()
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def fmt_s(seconds: float) -> str:
    if seconds < 0.001:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1.0:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_rate(rows: float, seconds: float) -> str:
    return f"{rows / seconds / 1e6:.3f} M rows/s"


def file_size_mb(path: Path) -> float:
    return os.path.getsize(path) / 1e6


def machine_line() -> str:
    import platform

    import duckdb

    return (
        f"python {platform.python_version()}, duckdb {duckdb.__version__}, "
        f"pyarrow {pa.__version__}, "
        f"cpus {os.cpu_count()}, load avg {', '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
