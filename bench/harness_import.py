"""The paper's lighteval output, end to end: import two models' trees, pair, map.

Writes the paper's layout (app/demo/layouts/paper.py: lighteval 0.10 flat details, the paper's task
names, one run per seed with its seed in results_<ts>.json, few-shot base vs chat post) for the 94
scored benchmarks x 3 seeds x 2 models, N questions each (default 2,000: ~1.1M rows), then times

- baseline: pyarrow's plain read of every details file (``pq.read_table``), three times a round,
  in this process and in a fresh one (a script's ``python -c``: interpreter, pyarrow's import,
  a cold read), the goal's baseline, as each of our steps is a fresh process;
- a floor: the same read plus one DuckDB insert of the columns a sample keeps, in one statement
  (no parsing, no keys);
- ours: ``forgetmap import lighteval`` of each model's details folder, ``forgetmap pair add`` and
  ``forgetmap map --format json``, each a fresh CLI process on a fresh database (what a user runs).
- the same four steps in the bench's own process (``import_file``, ``add_pair``, ``map_records``):
  the work alone, so that the share of the four CLI processes' start (interpreter, module imports,
  fresh heaps) shows beside it.
- the output folder imported by one command (each model under the name the tree gives it), then
  ``pair add`` and ``map``: three CLI processes, one import transaction.

Prints both, the ratio and the paired sample count. Goal: ours <= 3x the fresh process's read (the
paper's pandas pipeline takes about 5x on such files).

    .venv/bin/python bench/harness_import.py                       # full, ~1.1M rows
    .venv/bin/python bench/harness_import.py --per-benchmark 200   # quick
    .venv/bin/python bench/harness_import.py --workdir /tmp/hi --keep   # reuse the written tree
    .venv/bin/python bench/harness_import.py --loglik              # log-likelihood tasks instead
    .venv/bin/python bench/harness_import.py --answer-tokens 0     # one-line answers, few ids

The files hold what the paper's runs hold (chat models reasoning before "Answer: $LETTER", up to
32,768 new tokens; lighteval 0.10 keeps each answer's text, its token ids in ``cont_tokens`` and
the prompt's in ``input_tokens``): answers of ``--answer-tokens`` tokens on average (default 150,
a short chain of thought; 2.6 GB of files) with their token ids and the prompts'
(``app/demo/layouts/paper.py`` ``with_generations``). ``--answer-tokens 0`` keeps the fixture's
short answers ("Let me think." then "Answer: B") and a few ids per row: the same rows at a tenth of
their bytes, where pyarrow's read has the least to do (the bench's default before 2026-12-04).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from forgetmap.core.taxonomy import scored_benchmarks  # noqa: E402
from forgetmap.demo.layouts.paper import make_items, write_run  # noqa: E402

BASE_MODEL, POST_MODEL = "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct"

# the CLI as a user runs it: an installed package keeps its compiled modules, so a shell that sets
# PYTHONDONTWRITEBYTECODE (this machine's does) must not make every command recompile ours
CLI_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def paper_task(name: str) -> str:
    family, _, subset = name.partition(":")
    if family == "arc":
        return f"community|arc_reasoning_custom_prompt_letter:{subset}|0"
    return f"community|{family}_reasoning_letter:{subset or 'main'}|0"


def write_tree(
    out: Path,
    per_benchmark: int,
    seeds: int,
    limit: int | None,
    loglik: bool = False,
    answer_tokens: int = 0,
) -> int:
    rng = random.Random(0)
    infos = scored_benchmarks()[:limit] if limit else scored_benchmarks()
    items = {
        paper_task(i.name): make_items(i.name, per_benchmark, options=min(i.num_choices or 4, 10))
        for i in infos
    }
    base = {t: [rng.random() < 0.6 for _ in its] for t, its in items.items()}
    rows = 0
    for s in range(seeds):
        post = {t: [(c if rng.random() < 0.8 else not c) for c in base[t]] for t in items}
        base_style, post_style = ("loglik", "loglik") if loglik else ("base", "chat")
        write_run(
            out,
            BASE_MODEL,
            f"2025-07-01T10-0{s}-00.000001",
            {t: (items[t], base[t]) for t in items},
            style=base_style,
            seed=s,
            shuffle_seed=s,
            answer_tokens=answer_tokens,
        )
        write_run(
            out,
            POST_MODEL,
            f"2025-07-02T10-0{s}-00.000001",
            {t: (items[t], post[t]) for t in items},
            style=post_style,
            seed=s,
            shuffle_seed=100 + s,
            answer_tokens=answer_tokens,
        )
        rows += 2 * sum(len(v) for v in items.values())
    return rows


def plain_read(out: Path) -> tuple[float, int]:
    files = sorted((out / "details").rglob("details_*.parquet"))
    start = time.perf_counter()
    rows = sum(pq.read_table(f).num_rows for f in files)
    return time.perf_counter() - start, rows


PROCESS_READ = """
import sys
from pathlib import Path
import pyarrow.parquet as pq
files = sorted(Path(sys.argv[1]).rglob("details_*.parquet"))
print(sum(pq.read_table(f).num_rows for f in files))
"""


def process_read(out: Path) -> float:
    """``plain_read`` as a script does it, in a fresh process timed from outside: the
    interpreter, pyarrow's import and a first read in a cold process, what each of our CLI steps
    pays too. The goal's baseline: ours is four such processes."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", PROCESS_READ, str(out / "details")],
        env=CLI_ENV,
        capture_output=True,
        check=True,
    )
    return time.perf_counter() - start


def read_and_store(out: Path, db: Path) -> float:
    """A floor for any importer that keeps the rows: pyarrow's read of every details file plus one
    DuckDB insert of the columns a sample keeps (prompt, predictions, gold, choices, metrics) into
    a fresh file, in one statement and one commit: no parsing, keys or counts."""
    files = sorted((out / "details").rglob("details_*.parquet"))
    keep = ["full_prompt", "predictions", "gold", "choices", "metrics"]
    start = time.perf_counter()
    rows = pa.concat_tables(pq.read_table(f, columns=keep) for f in files)  # noqa: F841 - by name
    con = duckdb.connect(str(db))
    con.execute("SET enable_progress_bar = false")
    con.execute("CREATE TABLE kept AS SELECT * FROM rows")
    con.close()
    return time.perf_counter() - start


def ours(out: Path, db: Path) -> tuple[float, dict[str, float], str]:
    exe = [sys.executable, "-m", "forgetmap.cli", "--db", str(db)]
    steps = {
        "import base": [
            *exe,
            "import",
            "lighteval",
            str(out / "details" / BASE_MODEL),
            "--model",
            "base",
        ],
        "import post": [
            *exe,
            "import",
            "lighteval",
            str(out / "details" / POST_MODEL),
            "--model",
            "post",
        ],
        "pair add": [*exe, "pair", "add", "base", "post"],
        "map": [*exe, "map", "--format", "json"],
    }
    return run_steps(steps)


def ours_tree(out: Path, db: Path) -> tuple[float, dict[str, float], str]:
    """The same work as ``ours`` with the whole output folder imported by one command: each model
    stored under the name lighteval's tree gives it (``OUT/details/<org>/<model>``), then paired by
    those names. One CLI process and one transaction fewer."""
    exe = [sys.executable, "-m", "forgetmap.cli", "--db", str(db)]
    steps = {
        "import output folder": [*exe, "import", "lighteval", str(out)],
        "pair add": [*exe, "pair", "add", BASE_MODEL, POST_MODEL],
        "map": [*exe, "map", "--format", "json"],
    }
    return run_steps(steps)


def run_steps(steps: dict[str, list[str]]) -> tuple[float, dict[str, float], str]:
    """Run each CLI command in a fresh process, in order: (total, per-step seconds, the last
    line `pair add` printed)."""
    times = {}
    report = ""
    for name, cmd in steps.items():
        start = time.perf_counter()
        done = subprocess.run(
            cmd, cwd=ROOT, env=CLI_ENV, capture_output=True, text=True, check=True
        )
        times[name] = time.perf_counter() - start
        if name == "pair add":
            report = done.stdout.strip().splitlines()[-1]
    return sum(times.values()), times, report


def in_process(out: Path, db: Path) -> float:
    """The same four steps in this process, with its modules loaded and its allocators warm from
    the reads: the work itself, without what each CLI process pays to start (interpreter, module
    imports, a fresh heap)."""
    from forgetmap.cli.common import block_unused_imports
    from forgetmap.db.pairing import add_pair
    from forgetmap.db.store import open_store
    from forgetmap.importers import import_file
    from forgetmap.services.map import MapQuery

    # as the CLI's processes do: else pyarrow's first array built from a list imports pandas
    from forgetmap.services.map_cache import map_records

    # here (0.23 s, in the first round's import)
    block_unused_imports()
    start = time.perf_counter()
    store = open_store(db)
    for model, name in ((BASE_MODEL, "base"), (POST_MODEL, "post")):
        import_file(store, "lighteval", out / "details" / model, model=name)
    with store.transaction() as conn:
        add_pair(conn, "base", "post", label=None, stage=None)
    json.dumps(map_records(store, MapQuery()))
    store.close()
    return time.perf_counter() - start


def startup(work: Path, repeat: int = 5) -> tuple[float, float]:
    """Medians of `forgetmap --help` and of `forgetmap map` on a small database (2 models x
    3 benchmarks x 50 questions x 1 seed): what every quick command pays before its work."""
    small = work / "small"
    if not (small / "db.duckdb").exists():
        shutil.rmtree(small, ignore_errors=True)
        out = small / "out"
        names = [paper_task(i.name) for i in scored_benchmarks()[:3]]
        items = {t: make_items(t, 50) for t in names}
        write_run(
            out,
            BASE_MODEL,
            "2025-07-01T10-00-00.000001",
            {t: (items[t], [i % 2 == 0 for i in range(50)]) for t in names},
            style="base",
            seed=0,
        )
        write_run(
            out,
            POST_MODEL,
            "2025-07-02T10-00-00.000001",
            {t: (items[t], [i % 3 == 0 for i in range(50)]) for t in names},
            style="chat",
            seed=0,
        )
        exe = [sys.executable, "-m", "forgetmap.cli", "--db", str(small / "db.duckdb")]
        for model, name in ((BASE_MODEL, "base"), (POST_MODEL, "post")):
            subprocess.run(
                [*exe, "import", "lighteval", str(out / "details" / model), "--model", name],
                cwd=ROOT,
                env=CLI_ENV,
                capture_output=True,
                check=True,
            )
        subprocess.run(
            [*exe, "pair", "add", "base", "post"],
            cwd=ROOT,
            env=CLI_ENV,
            capture_output=True,
            check=True,
        )
    times = {"help": [], "map": []}
    for _ in range(repeat):
        for name, args in (
            ("help", ["--help"]),
            ("map", ["--db", str(small / "db.duckdb"), "map"]),
        ):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "forgetmap.cli", *args],
                cwd=ROOT,
                env=CLI_ENV,
                capture_output=True,
                check=True,
            )
            times[name].append(time.perf_counter() - start)
    return statistics.median(times["help"]), statistics.median(times["map"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-benchmark", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--benchmarks", type=int, default=None, help="first N of the 94")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side (median)")
    parser.add_argument(
        "--loglik",
        action="store_true",
        help="log-likelihood tasks (MMLU-style acc, a score per choice) instead of the paper's "
        "generative letter tasks",
    )
    parser.add_argument(
        "--answer-tokens",
        type=int,
        default=150,
        help="generative answers as long as a chain of thought: this many tokens on average, "
        "with their token ids and the prompts' (app/demo/layouts/paper.py with_generations); "
        "0: the fixture's one-line answers",
    )
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    work = args.workdir or Path(tempfile.mkdtemp(prefix="fm-harness-"))
    out = work / ("out-loglik" if args.loglik else "out")
    if args.answer_tokens:
        out = out.with_name(f"{out.name}-answers{args.answer_tokens}")
    stamp = out / f".written-{args.per_benchmark}-{args.seeds}-{args.benchmarks}"
    try:
        if not stamp.exists():
            shutil.rmtree(out, ignore_errors=True)
            start = time.perf_counter()
            rows = write_tree(
                out,
                args.per_benchmark,
                args.seeds,
                args.benchmarks,
                args.loglik,
                args.answer_tokens,
            )
            stamp.touch()
            print(f"wrote {rows:,} rows in {time.perf_counter() - start:.1f} s to {out}")
        base_times, ours_times, parts, floor_times, inproc_times = [], [], [], [], []
        process_times = []
        tree_times, tree_parts = [], []
        round_ratios = []  # each round's end to end over its own three reads
        for i in range(args.repeat):
            # the read is the shortest step and the noisiest (0.9-1.3 s between runs here): three
            # of it per round keep the ratio's denominator steady
            for _ in range(3):
                t, rows = plain_read(out)
                base_times.append(t)
                process_times.append(process_read(out))
            floor_db = work / f"floor{i}.duckdb"
            floor_db.unlink(missing_ok=True)
            floor_times.append(read_and_store(out, floor_db))
            floor_db.unlink(missing_ok=True)
            db = work / f"run{i}.duckdb"
            db.unlink(missing_ok=True)
            inproc_times.append(in_process(out, db))
            db.unlink(missing_ok=True)
            total, steps, report = ours(out, db)
            ours_times.append(total)
            round_ratios.append(total / statistics.median(process_times[-3:]))
            parts.append(steps)
            db.unlink(missing_ok=True)
            total, steps, tree_report = ours_tree(out, db)
            tree_times.append(total)
            tree_parts.append(steps)
            db.unlink(missing_ok=True)
        base_t, ours_t = statistics.median(base_times), statistics.median(ours_times)
        print(f"rows: {rows:,} in {len(list((out / 'details').rglob('*.parquet')))} files")
        print(
            f"pyarrow plain read:  median {base_t:.2f} s  "
            f"({', '.join(f'{t:.2f}' for t in base_times)})"
        )
        process_t = statistics.median(process_times)
        print(
            f"the same read in a fresh process (interpreter, pyarrow's import, a cold read): "
            f"median {process_t:.2f} s ({', '.join(f'{t:.2f}' for t in process_times)})"
        )
        print(
            f"forgetmap end to end: median {ours_t:.2f} s  "
            f"({', '.join(f'{t:.2f}' for t in ours_times)})"
        )
        floor_t = statistics.median(floor_times)
        print(
            f"read + one DuckDB insert of the kept columns (a floor for any store): median "
            f"{floor_t:.2f} s ({floor_t / base_t:.2f}x the read; ours {ours_t / floor_t:.2f}x it)"
        )
        inproc_t = statistics.median(inproc_times)
        print(
            f"the same four steps in this process (no CLI start): median {inproc_t:.2f} s "
            f"({inproc_t / base_t:.2f}x the read; the four CLI processes add "
            f"{ours_t - inproc_t:.2f} s)"
        )
        for name in parts[0]:
            print(f"  {name}: median {statistics.median(p[name] for p in parts):.2f} s")
        print(f"  {report}")
        tree_t = statistics.median(tree_times)
        print(
            f"the output folder in one import (import, pair add, map: three CLI processes): "
            f"median {tree_t:.2f} s ({tree_t / base_t:.2f}x the read)"
        )
        for name in tree_parts[0]:
            print(f"  {name}: median {statistics.median(p[name] for p in tree_parts):.2f} s")
        if tree_report != report:
            raise SystemExit(f"the two ways paired differently: {report!r} vs {tree_report!r}")
        help_t, map_t = startup(work)
        print(
            f"cli start: `forgetmap --help` median {help_t:.2f} s (goal < 0.3 s), "
            f"`forgetmap map` on a small database median {map_t:.2f} s (goal < 0.5 s)"
        )
        print(
            f"per round (ours / that round's fresh-process read; the machine's speed drifts): "
            f"{', '.join(f'{r:.2f}x' for r in round_ratios)}, median "
            f"{statistics.median(round_ratios):.2f}x"
        )
        print(
            f"harness_import: end to end {ours_t / process_t:.2f}x pyarrow's read in a fresh "
            f"process (goal <= 3x; {ours_t / base_t:.2f}x the read in this process)"
        )
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
