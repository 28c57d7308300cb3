"""forgetmap against the paper's own pipeline, on the same files: the end-to-end ratio (goal: at least 3x faster).

The paper's release (github.com/post-forget/post-forget) turns its lighteval details into flip
counts with ``src/analyze/process_data.py``: ``compare_models(details_dirs, results_dirs, before,
after, output)`` reads every details file of both models with pandas, pairs the rows of each (task,
seed) and writes per-task transition counts to a CSV (its ``create_csv.py`` then pivots that CSV
into tables; it needs openpyxl, which this bench leaves out). The release is not committed here:
``--release`` names a checkout of it, or a bare git directory (the search tool's ``fetch`` puts one
at ``/work/.mirror/post-forget+post-forget/repo``), read at run time; the module's functions are
executed as its file defines them, without its ``__main__`` block (hard-coded model lists).

Writes the paper's layout (bench/harness_import.py's tree: app/demo/layouts/paper.py, lighteval 0.10
flat details, one run per seed with its seed in ``results_<ts>.json``) and times, each in a fresh
process, alternating for ``--repeat`` rounds (medians):

- paper: ``compare_models`` on the output folder (both models);
- ours: ``forgetmap import lighteval OUT`` (both models, one transaction), ``pair add``, ``map``.

Goal: ours at least 3x faster than the paper's pipeline.

    .venv/bin/python bench/paper_pipeline.py --per-benchmark 200 --answer-tokens 0   # quick
    .venv/bin/python bench/paper_pipeline.py --release /path/to/post-forget --limit 41
"""  # noqa: E501

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from harness_import import BASE_MODEL, POST_MODEL, write_tree  # noqa: E402

MIRROR = Path("/work/.mirror/post-forget+post-forget/repo")
MODULE = "src/analyze/process_data.py"
CLI_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

DRIVE = """
import sys
source = open(sys.argv[1], encoding="utf-8").read()
definitions = source[: source.index('if __name__ == "__main__":')]
namespace = {"__name__": "process_data"}
exec(compile(definitions, sys.argv[1], "exec"), namespace)
out = sys.argv[2]
namespace["compare_models"]([out + "/details"], [out + "/results"], sys.argv[3], sys.argv[4],
                            sys.argv[5])
"""


def release_module(release: Path, into: Path) -> Path:
    """The release's process_data.py, copied out of a checkout or a bare git directory."""
    target = into / "process_data.py"
    if (release / MODULE).is_file():
        shutil.copy(release / MODULE, target)
    else:
        shown = subprocess.run(
            ["git", f"--git-dir={release}", "show", f"HEAD:{MODULE}"],
            capture_output=True,
            check=True,
        )
        target.write_bytes(shown.stdout)
    return target


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=CLI_ENV)
    if done.returncode:
        raise SystemExit(
            f"failed: {' '.join(command)}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, default=MIRROR)
    parser.add_argument("--per-benchmark", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--limit", type=int, help="the first N scored benchmarks only")
    parser.add_argument("--answer-tokens", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="paper-pipeline-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        out = work / f"out-{args.per_benchmark}-{args.limit}-{args.answer_tokens}"
        if not (out / "details").is_dir():
            rows = write_tree(
                out, args.per_benchmark, args.seeds, args.limit, answer_tokens=args.answer_tokens
            )
            print(f"wrote {rows:,} rows to {out}")
        module = release_module(args.release, work)
        python, forgetmap = sys.executable, str(Path(sys.executable).with_name("forgetmap"))
        db = work / "fm.duckdb"
        paper, ours = [], []
        for _ in range(args.repeat):
            csv = work / "paper.csv"
            paper.append(
                timed(
                    [python, "-c", DRIVE, str(module), str(out), BASE_MODEL, POST_MODEL, str(csv)],
                    work,
                )
            )
            for old in (db, db.with_name(db.name + ".texts"), db.with_name(db.name + ".wal")):
                shutil.rmtree(old) if old.is_dir() else old.unlink(missing_ok=True)
            ours.append(
                timed([forgetmap, "--db", str(db), "import", "lighteval", str(out)], work)
                + timed([forgetmap, "--db", str(db), "pair", "add", BASE_MODEL, POST_MODEL], work)
                + timed([forgetmap, "--db", str(db), "map", "--format", "json"], work)
            )
        p, o = statistics.median(paper), statistics.median(ours)
        print(f"paper's compare_models: median {p:.2f} s ({', '.join(f'{t:.2f}' for t in paper)})")
        print(
            f"forgetmap import + pair add + map: median {o:.2f} s "
            f"({', '.join(f'{t:.2f}' for t in ours)})"
        )
        print(
            f"paper_pipeline: forgetmap {p / o:.2f}x faster than the paper's pipeline (goal >= 3x)"
        )
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
