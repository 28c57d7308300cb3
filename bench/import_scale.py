"""Import memory and time against rows and answer length: does an import scale with its files?

Writes one model's lighteval tree in the paper's layout (app/demo/layouts/paper.py: lighteval 0.10
flat details, a chat model reasoning before "Answer: $LETTER", one run, each answer's token ids
in ``cont_tokens`` and the prompt's in ``input_tokens``, as lighteval keeps them) at each size
(``--scales``: 1x = ``--tasks`` tasks of ``--per-task`` questions; 4x and 16x as many tasks, or
with ``--grow rows`` as many questions in each task; ``--seeds`` runs of each) and
answer length (``--answers``: tokens on average; 0 = the fixture's one-line answers), then runs,
each in a fresh process measured by ``/usr/bin/time -v`` (wall time, peak RSS):

- ``pyarrow``: ``pq.read_table`` of every details file, every column (the baseline);
- ``pyarrow kept``: the same files, only the columns an import reads (its projection);
- ``duckdb kept``: DuckDB's ``read_parquet`` over the files, the same columns, aggregated;
- ``import``: ``forgetmap import lighteval`` of the tree into a fresh database.

Prints one row per tree: rows, files' size, each reader's and the import's time and peak
memory (medians of ``--repeat`` rounds, the four alternating), the import's ratio to pyarrow's
read, and what the database holds: its file, the answer files beside it (``app/db/texts.py``),
and both per million rows. Goals: the import within 2x of pyarrow's read, long and
short answers alike; peak memory independent of rows (4x the rows within 1.25x or +150 MB) and
under 1 GB at 4,000-token answers.

    .venv/bin/python bench/import_scale.py                 # 1x/4x/16x x 0/400/4000 tokens (~5 min)
    .venv/bin/python bench/import_scale.py --scales 1,4 --answers 0,4000 --repeat 3
    .venv/bin/python bench/import_scale.py --workdir /tmp/is --keep   # reuse the written trees
    .venv/bin/python bench/import_scale.py --lm-eval 20000,80000 --answers 2500   # lm-eval files
    .venv/bin/python bench/import_scale.py --grow rows --tasks 1 --per-task 880 --seeds 3 \
        --scales 1,16 --answers 4000    # one task growing to MMLU's 14,080 questions x 3 seeds

``--lm-eval N,M``: instead, one lm-eval ``samples_gsm8k_<date>.jsonl`` of N (then M) lines, each
answer ``--answers`` words long (app/demo/layouts/lm_eval.py and lighteval.py's lines, 0.4.7
layout), imported by ``forgetmap import lm-eval`` against ``pyarrow.json.read_json`` of the file (a
file past ``forgetmap.importers.lm_eval.reader.STREAM_BYTES`` is read in blocks, twice).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from forgetmap.demo.layouts.paper import make_items, write_run  # noqa: E402

MODEL = "Qwen/Qwen2.5-7B-Instruct"
KEPT = [
    "example",
    "full_prompt",
    "predictions",
    "choices",
    "gold_index",
    "gold",
    "metrics",
    "specifics",
]
CLI_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

PYARROW = """
import sys, pyarrow.parquet as pq
from pathlib import Path
files = sorted(Path(sys.argv[1]).rglob("details_*.parquet"))
columns = sys.argv[2].split(",") if len(sys.argv) > 2 else None
print(sum(pq.read_table(f, columns=columns).num_rows for f in files))
"""
DUCKDB = """
import sys, duckdb
from pathlib import Path
files = [str(f) for f in sorted(Path(sys.argv[1]).rglob("details_*.parquet"))]
con = duckdb.connect()
con.execute("SET memory_limit = '1GB'")
print(con.execute(
    "SELECT count(*), sum(length(example)), sum(length(full_prompt)), "
    "sum(length(predictions[1])), sum(len(choices)) FROM read_parquet(?)", [files]
).fetchall()[0][0])
"""


def write_tree(out: Path, tasks: int, per_task: int, tokens: int, seeds: int = 1) -> int:
    """One model's tree: ``tasks`` tasks of ``per_task`` questions, one run per seed."""
    rng = random.Random(tasks)
    items = {
        f"community|t{i}_reasoning_letter:main|0": make_items(f"t{i}", per_task)
        for i in range(tasks)
    }
    for seed in range(seeds):
        outcomes = {t: (its, [rng.random() < 0.6 for _ in its]) for t, its in items.items()}
        write_run(
            out,
            MODEL,
            f"2025-07-02T10-00-{seed:02d}.000001",
            outcomes,
            style="chat",
            seed=seed,
            shuffle_seed=seed,
            answer_tokens=tokens,
        )
    return tasks * per_task * seeds


PYARROW_JSON = """
import sys, pyarrow.json as pj
print(pj.read_json(sys.argv[1]).num_rows)
"""


def write_samples(folder: Path, lines: int, words: int) -> Path:
    from forgetmap.demo.layouts.lm_eval import write_lm_eval_samples

    folder.mkdir(parents=True, exist_ok=True)
    path = write_lm_eval_samples(folder, "gsm8k", [1, 0], kind="generate_until")
    template = [json.loads(line) for line in path.read_text().splitlines()]
    rng = random.Random(lines)
    vocabulary = "the so option answer because which means therefore first we check each".split()
    with path.open("w") as out:
        for i in range(lines):
            line = dict(template[i % 2], doc_id=i, doc_hash=f"h{i}")
            text = " ".join(rng.choice(vocabulary) for _ in range(words))
            line["resps"] = [[text + " The answer is 5."]]
            out.write(json.dumps(line) + "\n")
    return path


def lm_eval_rows(args: argparse.Namespace, work: Path) -> None:
    words = int(args.answers.split(",")[0])
    print(f"{'lines':>7} {'file MB':>8} | {'read_json s/MB':>14} {'import s/MB':>13} {'ratio':>5}")
    for lines in [int(n) for n in args.lm_eval.split(",")]:
        folder = work / f"lm-eval-{lines}-{words}"
        path = next(folder.glob("samples_*.jsonl"), None) or write_samples(folder, lines, words)
        python, db = sys.executable, work / "lm.duckdb"
        reads, imports = [], []
        for _ in range(args.repeat):
            reads.append(timed([python, "-c", PYARROW_JSON, str(path)]))
            for old in (db, db.with_name(db.name + ".texts"), db.with_name(db.name + ".wal")):
                shutil.rmtree(old) if old.is_dir() else old.unlink(missing_ok=True)
            forgetmap = str(Path(python).with_name("forgetmap"))
            imports.append(
                timed(
                    [forgetmap, "--db", str(db), "import", "lm-eval", str(folder), "--model", "m"]
                )
            )
        read = (statistics.median(t for t, _ in reads), statistics.median(m for _, m in reads))
        ours = (statistics.median(t for t, _ in imports), statistics.median(m for _, m in imports))
        print(
            f"{lines:>7,} {size_mb(path):>8.0f} | {read[0]:7.2f}/{read[1]:6.0f} "
            f"{ours[0]:6.2f}/{ours[1]:6.0f} {ours[0] / read[0]:5.2f}",
            flush=True,
        )


def timed(command: list[str], **kwargs) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one command, by /usr/bin/time -v."""
    done = subprocess.run(
        ["/usr/bin/time", "-v", *command], capture_output=True, text=True, env=CLI_ENV, **kwargs
    )
    if done.returncode:
        raise SystemExit(f"failed: {' '.join(command)}\n{done.stdout}\n{done.stderr}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    hours, minutes, seconds = wall.groups()
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds), int(rss.group(1)) / 1024


def size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6
    return 0.0


def measure(tree: Path, work: Path, repeat: int) -> dict:
    python = sys.executable
    runs: dict[str, list[tuple[float, float]]] = {
        "pyarrow": [],
        "pyarrow kept": [],
        "duckdb kept": [],
        "import": [],
    }
    db = work / "fm.duckdb"
    for _ in range(repeat):
        runs["pyarrow"].append(timed([python, "-c", PYARROW, str(tree)]))
        runs["pyarrow kept"].append(timed([python, "-c", PYARROW, str(tree), ",".join(KEPT)]))
        runs["duckdb kept"].append(timed([python, "-c", DUCKDB, str(tree)]))
        for old in (db, db.with_name(db.name + ".texts"), db.with_name(db.name + ".wal")):
            shutil.rmtree(old) if old.is_dir() else old.unlink(missing_ok=True)
        forgetmap = str(Path(python).with_name("forgetmap"))
        runs["import"].append(timed([forgetmap, "--db", str(db), "import", "lighteval", str(tree)]))
    result = {
        name: (statistics.median(t for t, _ in r), statistics.median(m for _, m in r))
        for name, r in runs.items()
    }
    result["database"] = size_mb(db)
    result["answers"] = size_mb(db.with_name(db.name + ".texts"))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--per-task", type=int, default=210)
    parser.add_argument("--scales", default="1,4,16")
    parser.add_argument(
        "--grow",
        choices=("tasks", "rows"),
        default="tasks",
        help="what a scale multiplies: the tasks, or the questions of each task",
    )
    parser.add_argument("--seeds", type=int, default=1, help="runs of the model, one per seed")
    parser.add_argument("--answers", default="0,400,4000")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--lm-eval", help="lines of lm-eval samples files to import instead")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="import-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.lm_eval:
        try:
            lm_eval_rows(args, work)
        finally:
            if not args.keep and args.workdir is None:
                shutil.rmtree(work, ignore_errors=True)
        return
    header = (
        f"{'answers':>7} {'scale':>5} {'rows':>7} {'files MB':>8} | "
        f"{'pyarrow s/MB':>13} {'pa kept s/MB':>13} {'duckdb s/MB':>13} "
        f"{'import s/MB':>13} {'ratio':>5} | {'db MB':>6} {'answers MB':>10} "
        f"{'MB per 1M rows':>14}"
    )
    print(header)
    try:
        for tokens in [int(a) for a in args.answers.split(",")]:
            for scale in [int(s) for s in args.scales.split(",")]:
                tasks, per_task = args.tasks, args.per_task
                if args.grow == "tasks":
                    tasks *= scale
                else:
                    per_task *= scale
                tree = work / f"tree-{tokens}-{tasks}x{per_task}x{args.seeds}"
                rows = tasks * per_task * args.seeds
                if not tree.is_dir():
                    write_tree(tree, tasks, per_task, tokens, args.seeds)
                r = measure(tree, work, args.repeat)
                stored = r["database"] + r["answers"]

                def cell(name: str, r: dict = r) -> str:
                    return f"{r[name][0]:6.2f}/{r[name][1]:6.0f}"

                print(
                    f"{tokens:>7} {scale:>4}x {rows:>7,} {size_mb(tree):>8.0f} | "
                    f"{cell('pyarrow')} {cell('pyarrow kept')} {cell('duckdb kept')} "
                    f"{cell('import')} {r['import'][0] / r['pyarrow'][0]:5.2f} | "
                    f"{r['database']:6.1f} {r['answers']:10.1f} {stored / rows * 1e6:14,.0f}",
                    flush=True,
                )
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
