"""The Open LLM Leaderboards' details datasets, and lm-eval's own push of other tasks, from a
Hugging Face cache, end to end: `forgetmap import hub` of each model, the same import again, pair,
map.

Writes N models' details datasets of one leaderboard generation (or push) into a huggingface_hub
cache, in its real layout (``app/demo/layouts/leaderboard.py``: every scored task at its real size,
the same questions for every model, each model right where its skill beats a question's difficulty):

- v2 (default): BBH's 24 tasks, GPQA's 3, MMLU-Pro (12,032), MuSR's 3, MATH hard's 7 and IFEval,
  21,606 questions a model, as lm-eval 0.4.3's ``samples_leaderboard_<task>_<run>.jsonl`` (each
  option's request repeating its few-shot context, as lm-eval logs it) beside
  ``results_<run>.json``;
- v1 (``--generation v1``): ARC, HellaSwag, MMLU's 57 subjects, TruthfulQA, Winogrande and
  GSM8K, 28,659 questions a model, as the leaderboard's harness wrote its details parquet (a
  column per metric, the prompt's token ids once per option; TruthfulQA in lighteval's rows)
  beside ``results_<run>.json``;
- an lm-eval push (``--generation push``): lm-eval's own tasks of v1's benchmarks (arc_challenge,
  hellaswag, mmlu_<subject>, winogrande, gsm8k; 27,842 questions a model) as ``lm_eval
  --log_samples --hf_hub_log_args push_samples_to_hub=True`` pushes them, the same lines as v2's
  in ``<org>__<model>/`` beside ``results_<run>.json``, in a dataset per model.

Generative answers (GSM8K, MATH, IFEval) hold ``--answer-tokens`` words of reasoning on average.
Then times, each round on a fresh database:

- baseline: reading the same files: pyarrow's JSON read of each samples file (v2, as
  bench/lm_eval_import.py reads lm-eval's) or its ``read_table`` of each details file (v1),
  three times a round;
- ours: ``forgetmap import hub REPO_ID`` of each model, a fresh CLI process with
  ``HF_HUB_OFFLINE=1`` and ``HF_HUB_CACHE`` at the written cache (huggingface_hub's offline
  snapshot, the staging, the reader, the store), with its peak memory (max RSS, by GNU time);
- the first model's import again: it imports nothing new;
- ``forgetmap pair add`` of the first model with each other one, ``forgetmap map --format json``.

Prints rows/s of both, the ratio, and bench/lm_eval_import.py's ratio beside it (the streaming
lm-eval import: 4.4-4.6x its read).

    .venv/bin/python bench/hub_import.py                    # v2, 2 models x 21,606 questions
    .venv/bin/python bench/hub_import.py --generation v1    # v1, 2 models x 28,659 questions
    .venv/bin/python bench/hub_import.py --generation push  # a push, 2 models x 27,842
    .venv/bin/python bench/hub_import.py --quick            # a smoke run, 5% of the questions
    .venv/bin/python bench/hub_import.py --models 4 --scale 0.5 --workdir /tmp/hub --keep
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow.json as pa_json  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from forgetmap.demo.layouts.leaderboard import repo_id, write_dataset  # noqa: E402
from forgetmap.demo.layouts.leaderboard_tasks import SHAPES, questions  # noqa: E402

from bench._data import fmt_s, machine_line  # noqa: E402
from bench.harness_import import CLI_ENV  # noqa: E402

LM_EVAL_RATIO = "4.4-4.6x"  # bench/lm_eval_import.py, docs/performance.md
GNU_TIME = shutil.which("time")  # /usr/bin/time (the shell's own is not on PATH)
IMPORTED = re.compile(r"imported ([\d,]+) new rows \(([\d,]+) already stored\)")


def model_names(generation: str, count: int) -> list[str]:
    """A base model and its post-trained descendants."""
    base = "bench/Model-7B" if generation == "v1" else "bench/Model-8B"
    return [base] + [f"{base}-Chat" + (f"-{i}" if i > 1 else "") for i in range(1, count)]


def write_cache(
    cache: Path, generation: str, models: list[str], scale: float, answer_tokens: int
) -> None:
    """Every model's dataset in ``cache``: the same questions, answered by growing skills."""
    tasks = {shape.task: questions(shape, scale=scale) for shape in SHAPES[generation]}
    for number, model in enumerate(models):
        written = write_dataset(
            cache, generation, model, tasks, skill=0.2 * number, answer_tokens=answer_tokens
        )
        print(
            f"  {written.repo_id}: {written.rows:,} rows, {written.files} files, "
            f"{written.size / 1e6:,.0f} MB"
        )


def snapshot_files(cache: Path, generation: str, model: str) -> list[Path]:
    """The files of ``model``'s dataset that its import reads (its one run's task files)."""
    storage = cache / f"datasets--{repo_id(generation, model).replace('/', '--')}"
    commit = (storage / "refs" / "main").read_text().strip()
    pattern = "details_*.parquet" if generation == "v1" else "samples_*.jsonl"
    return sorted((storage / "snapshots" / commit).rglob(pattern))


def plain_read(files: list[Path], generation: str) -> tuple[float, int]:
    start = time.perf_counter()
    if generation == "v1":
        rows = sum(pq.read_table(f).num_rows for f in files)
    else:
        rows = sum(pa_json.read_json(f).num_rows for f in files)
    return time.perf_counter() - start, rows


def hub_env(cache: Path, work: Path) -> dict[str, str]:
    """The CLI's environment on a node whose Hugging Face cache holds the datasets, offline."""
    env = {k: v for k, v in CLI_ENV.items() if not k.startswith("HF_")}
    return {
        **env,
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(cache),
        "HF_HOME": str(work / "hf-home"),
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    }


def run(cmd: list[str], env: dict[str, str], work: Path) -> tuple[float, float, str]:
    """(seconds, max RSS in MB, stdout) of one CLI process. The peak is GNU time's: a child's
    own ``ru_maxrss`` counts the memory its parent held when it forked (Linux keeps the larger),
    and this process holds a JSON read's gigabyte by then."""
    if GNU_TIME is None:
        raise SystemExit("the peak memory is measured with GNU time: apt-get install time")
    with tempfile.NamedTemporaryFile(dir=work, suffix=".rss") as peak:
        start = time.perf_counter()
        done = subprocess.run(
            [GNU_TIME, "-f", "%M", "-o", peak.name, *cmd],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
        rss_kb = Path(peak.name).read_text().split()[-1]
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[3:])} failed ({done.returncode}):\n{done.stderr}")
    return seconds, int(rss_kb) / 1024, done.stdout


def imported(stdout: str) -> tuple[int, int]:
    """(rows added, rows already stored) of an import's summary line."""
    found = IMPORTED.search(stdout)
    if found is None:
        raise SystemExit(f"no summary in the import's output: {stdout!r}")
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


def forget(db: Path) -> None:
    """Remove a database file and the folder of long answers beside it."""
    db.unlink(missing_ok=True)
    shutil.rmtree(db.with_name(db.name + ".texts"), ignore_errors=True)


def one_round(
    db: Path, env: dict, work: Path, generation: str, models: list[str], rows: int
) -> dict:
    """Import every model, the first again, pair the first with each other, map."""
    exe = [sys.executable, "-m", "forgetmap.cli", "--db", str(db)]
    out: dict = {"import": [], "rss": []}
    for model in models:
        seconds, rss, stdout = run([*exe, "import", "hub", repo_id(generation, model)], env, work)
        if imported(stdout) != (rows, 0):
            raise SystemExit(f"{model}: expected {rows:,} new rows, the import said {stdout!r}")
        out["import"].append(seconds)
        out["rss"].append(rss)
    out["again"], _, stdout = run(
        [*exe, "import", "hub", repo_id(generation, models[0])], env, work
    )
    if imported(stdout) != (0, rows):
        raise SystemExit(f"the second import was not a no-op: {stdout!r}")
    out["pair add"] = []
    for post in models[1:]:
        seconds, _, stdout = run([*exe, "pair", "add", models[0], post], env, work)
        out["pair add"].append(seconds)
        out["report"] = stdout.strip().splitlines()[-1]
    out["map"], _, _ = run([*exe, "map", "--format", "json"], env, work)
    return out


def report(
    args: argparse.Namespace,
    files: dict[str, list[Path]],
    reads: list[float],
    rounds: list[dict],
    rows: int,
) -> None:
    models = list(files)
    total = rows * len(models)
    read_t = statistics.median(reads)
    per_round = [sum(r["import"]) for r in rounds]
    import_t = statistics.median(per_round)
    one = statistics.median(t for r in rounds for t in r["import"])
    peak = max(rss for r in rounds for rss in r["rss"])
    again = statistics.median(r["again"] for r in rounds)
    pair = statistics.median(t for r in rounds for t in r["pair add"])
    mapped = statistics.median(r["map"] for r in rounds)
    size = sum(f.stat().st_size for m in models for f in files[m])
    baseline = "pyarrow read_table" if args.generation == "v1" else "pyarrow JSON read"
    print(
        f"{args.generation}: {len(models)} models x {rows:,} rows in {len(files[models[0]])} "
        f"files, {size / 1e6:,.0f} MB in all"
    )
    print(
        f"{baseline + ':':22} median {fmt_s(read_t):>8}, {total / read_t:>9,.0f} rows/s "
        f"({', '.join(f'{t:.2f}' for t in reads)})"
    )
    print(
        f"{'forgetmap import hub:':22} median {fmt_s(import_t):>8}, {total / import_t:>9,.0f} "
        f"rows/s ({', '.join(f'{t:.2f}' for t in per_round)})"
    )
    print(f"  one import: median {fmt_s(one)}, max RSS {peak:,.0f} MB")
    print(f"  again (imports nothing new): median {fmt_s(again)}")
    print(f"  pair add: median {fmt_s(pair)}; map: median {fmt_s(mapped)}")
    print(f"  {rounds[-1]['report']}")
    print(
        f"hub_import: import {import_t / read_t:.2f}x the read ({baseline}); "
        f"bench/lm_eval_import.py's streaming lm-eval import: {LM_EVAL_RATIO}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generation", choices=("v1", "v2", "push"), default="v2")
    parser.add_argument("--models", type=int, default=2, help="a base model and N-1 posts")
    parser.add_argument("--scale", type=float, default=1.0, help="of each task's real size")
    parser.add_argument(
        "--answer-tokens", type=int, default=300, help="words of a generative answer, on average"
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds (median)")
    parser.add_argument("--quick", action="store_true", help="5%% of the questions, one round")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.scale, args.repeat = min(args.scale, 0.05), 1
    if args.models < 2:
        parser.error("--models must be 2 or more (a base and a post model to pair)")

    work = args.workdir or Path(tempfile.mkdtemp(prefix="fm-hub-"))
    cache = work / f"hub-{args.generation}-{args.models}-{args.scale:g}-{args.answer_tokens}"
    models = model_names(args.generation, args.models)
    stamp = cache / ".written"
    try:
        print(machine_line())
        if not stamp.exists():
            shutil.rmtree(cache, ignore_errors=True)
            start = time.perf_counter()
            write_cache(cache, args.generation, models, args.scale, args.answer_tokens)
            stamp.touch()
            print(f"wrote {args.models} datasets in {time.perf_counter() - start:.1f} s to {cache}")
        files = {m: snapshot_files(cache, args.generation, m) for m in models}
        env = hub_env(cache, work)
        reads, rounds = [], []
        for i in range(args.repeat):
            for _ in range(3):
                timed = [plain_read(files[m], args.generation) for m in models]
                reads.append(sum(t for t, _ in timed))
            rows = timed[0][1]
            db = work / f"run{i}.duckdb"
            forget(db)
            rounds.append(one_round(db, env, work, args.generation, models, rows))
            forget(db)
        report(args, files, reads, rounds, rows)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
