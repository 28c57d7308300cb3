"""lm-eval output, end to end: import two models' samples folders, pair, map.

Writes two lm-eval output folders (``lm_eval --log_samples``, lm-eval >= 0.4.3 lines: arguments as
``gen_args_<i>``, leaves as strings) of the same documents: N MMLU subjects scored by
log-likelihood, plus gsm8k and BBH navigate scored with two filters each (strict-match and
flexible-extract, one line per filter and document), Q documents per task (default 40 x 2,000 +
2 x 2 x 2,000 = 88,000 lines a model). Then times

- baseline: pyarrow's plain JSON read of every samples file (``pyarrow.json.read_json``);
- ours: ``forgetmap import lm-eval`` of each folder, ``forgetmap pair add`` and
  ``forgetmap map --format json``, each a fresh CLI process on a fresh database.

Prints both, the ratio and the paired count. ``--release`` writes the folders as another lm-eval
release does: ``0.4.5`` (0.4.3-0.4.6: lines that do not name their filter, the run's
``results_<date>.json`` beside them naming the filters), ``0.4.2`` (0.4.0-0.4.2: each task's
samples as one JSON array in ``<model_args>_<task>.jsonl`` beside ``results.json``; the
baseline is then Python's ``json.loads`` of each file, as pyarrow's reader takes JSON lines only).

    .venv/bin/python bench/lm_eval_import.py                      # 40 subjects x 2,000
    .venv/bin/python bench/lm_eval_import.py --tasks 5 --per-task 200   # quick
    .venv/bin/python bench/lm_eval_import.py --release 0.4.2     # lm-eval 0.4.0-0.4.2 output
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow.json as pa_json  # noqa: E402
from forgetmap.core.taxonomy import scored_benchmarks  # noqa: E402
from forgetmap.demo.layouts.lm_eval import write_lm_eval_results, write_lm_eval_samples  # noqa: E402

from bench.harness_import import run_steps  # noqa: E402

MODELS = ("base", "post")
RELEASES = ("0.4.7", "0.4.5", "0.4.2")
LEGACY_MODEL_ARGS = "pretrained=org/model,dtype=bfloat16"


def write_tree(out: Path, tasks: int, per_task: int, release: str = "0.4.7") -> int:
    rng = random.Random(0)
    subjects = [i.name.split(":")[1] for i in scored_benchmarks() if i.name.startswith("mmlu:")]
    subjects = (subjects * (tasks // len(subjects) + 1))[:tasks]
    names = [
        f"mmlu_{s}" if i < len(set(subjects)) else f"mmlu_{s}_{i}" for i, s in enumerate(subjects)
    ]
    base = {
        t: [rng.random() < 0.6 for _ in range(per_task)]
        for t in [*names, "gsm8k", "bbh_cot_fewshot_navigate"]
    }
    style = {
        "0.4.7": {},
        "0.4.5": {"filters_named": False},
        "0.4.2": {"legacy_model_args": LEGACY_MODEL_ARGS},
    }[release]
    filters = {
        t: (None if t.startswith("mmlu") else ["strict-match", "flexible-extract"]) for t in base
    }
    lines = 0
    for model in MODELS:
        folder = out / model
        for task, right in base.items():
            right = (
                right if model == "base" else [(c if rng.random() < 0.8 else not c) for c in right]
            )
            if task.startswith("mmlu"):
                write_lm_eval_samples(folder, task, right, **style)
                lines += len(right)
            else:
                lenient = [c or rng.random() < 0.2 for c in right]
                write_lm_eval_samples(
                    folder,
                    task,
                    {"strict-match": right, "flexible-extract": lenient},
                    kind="generate_until",
                    **style,
                )
                lines += 2 * len(right)
        if release != "0.4.7":
            write_lm_eval_results(folder, filters, legacy_model_args=style.get("legacy_model_args"))
    return lines


def samples_files(out: Path) -> list[Path]:
    return sorted(out.rglob("*.jsonl"))


def plain_read(out: Path, release: str) -> tuple[float, int]:
    files = samples_files(out)
    start = time.perf_counter()
    if release == "0.4.2":  # one JSON array a task: pyarrow's reader takes JSON lines only
        rows = sum(len(json.loads(f.read_bytes())) for f in files)
    else:
        rows = sum(pa_json.read_json(f).num_rows for f in files)
    return time.perf_counter() - start, rows


def ours(out: Path, db: Path) -> tuple[float, dict[str, float], str]:
    exe = [sys.executable, "-m", "forgetmap.cli", "--db", str(db)]
    steps = {
        "import base": [*exe, "import", "lm-eval", str(out / "base"), "--model", "base"],
        "import post": [*exe, "import", "lm-eval", str(out / "post"), "--model", "post"],
        "pair add": [*exe, "pair", "add", "base", "post"],
        "map": [*exe, "map", "--format", "json"],
    }
    return run_steps(steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=40, help="MMLU subjects (log-likelihood)")
    parser.add_argument("--per-task", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side (median)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--release", choices=RELEASES, default="0.4.7", help="the lm-eval release whose files"
    )
    args = parser.parse_args()

    work = args.workdir or Path(tempfile.mkdtemp(prefix="fm-lm-eval-"))
    out = work / f"out-{args.release}"
    stamp = out / f".written-{args.tasks}-{args.per_task}"
    try:
        if not stamp.exists():
            shutil.rmtree(out, ignore_errors=True)
            start = time.perf_counter()
            lines = write_tree(out, args.tasks, args.per_task, args.release)
            stamp.touch()
            print(f"wrote {lines:,} lines in {time.perf_counter() - start:.1f} s to {out}")
        base_times, ours_times, parts = [], [], []
        for i in range(args.repeat):
            for _ in range(3):
                t, rows = plain_read(out, args.release)
                base_times.append(t)
            db = work / f"run{i}.duckdb"
            db.unlink(missing_ok=True)
            total, steps, report = ours(out, db)
            ours_times.append(total)
            parts.append(steps)
            db.unlink(missing_ok=True)
        base_t, ours_t = statistics.median(base_times), statistics.median(ours_times)
        baseline = "json.loads" if args.release == "0.4.2" else "pyarrow JSON read"
        print(f"lm-eval {args.release} files; samples: {rows:,} in {len(samples_files(out))} files")
        print(
            f"{baseline + ':':21} median {base_t:.2f} s  "
            f"({', '.join(f'{t:.2f}' for t in base_times)})"
        )
        print(
            f"forgetmap end to end: median {ours_t:.2f} s  "
            f"({', '.join(f'{t:.2f}' for t in ours_times)})"
        )
        for name in parts[0]:
            print(f"  {name}: median {statistics.median(p[name] for p in parts):.2f} s")
        print(f"  {report}")
        print(f"lm_eval_import: end to end {ours_t / base_t:.2f}x the baseline ({baseline})")
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
