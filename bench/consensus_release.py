"""forgetmap's consensus across seeds against the paper's release, on the same files.

The release (github.com/post-forget/post-forget) counts, per task, the examples on which every
combination of 2 (and 3) seeds shows the same transition (``compute_cross_seed_statistics`` in
``src/analyze/process_data.py``) and divides the mean 2-seed counts into its "Adj. 2 Seed"
columns (``src/analyze/create_csv.py``). ``forgetmap.demo.release_consensus`` re-implements that
as written (files sorted by ``full_prompt`` and paired by position, missing metrics dropped per
seed); ``forgetmap.core.consensus`` is ours (seeds aligned by sample id). This script writes the
release's own layout (``forgetmap.demo.layouts.paper.write_run``: lighteval 0.10 details parquet,
``metrics.extractive_match``, ``full_prompt``, one run per seed with its seed in
``results_<ts>.json``), reads it both ways and prints both results and whether they are equal,
in three cases:

- ``complete``: every metric present;
- ``same-missing``: the post model's metric missing for the same questions in every seed (both
  must agree);
- ``different-missing``: missing for different questions in each seed; the release then compares
  different questions at one position and ours does not, so they differ (expected, shown).

Ours reads the complete tree through forgetmap's lighteval reader (its importer refuses a row
without a metric), and the same questions are marked missing on our side as in the files.
``--release`` names the release's own ``process_data.py`` (or a checkout holding
``src/analyze/process_data.py``; never committed here): its ``compare_models`` then runs on each
case's tree too (its definitions executed without its ``__main__`` block, as
``bench/paper_pipeline.py`` does) and its CSV's ``mean_count_*``/``var_count_*`` columns are
compared with the re-implementation's.

    .venv/bin/python bench/consensus_release.py                 # 4 seeds, 3 tasks x 400 questions
    .venv/bin/python bench/consensus_release.py --seeds 3 --per-task 100
    .venv/bin/python bench/consensus_release.py --release /path/to/post-forget
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from forgetmap.core.consensus import TRANSITIONS, consensus  # noqa: E402
from forgetmap.demo import release_consensus as release  # noqa: E402
from forgetmap.demo.layouts import paper  # noqa: E402
from forgetmap.importers.lighteval.reader import read_lighteval  # noqa: E402

BASE, POST = "org/base-7b", "org/post-7b"
ITEM = re.compile(r" item (\d+), which option")


def write_tree(out: Path, seeds: int, tasks: list[str], per_task: int, rng) -> dict:
    """Both models' runs, one per seed; returns task -> its items. Each question has a base
    accuracy; the post model forgets a fifth of what the base knows and gains a tenth; each seed
    resamples every answer from those probabilities (seed noise)."""
    items = {task: paper.make_items(task, per_task) for task in tasks}
    p_base = {t: rng.uniform(0.05, 0.95, per_task) for t in tasks}
    p_post = {t: np.clip(p - 0.2 * p + 0.1 * (1 - p), 0, 1) for t, p in p_base.items()}
    for seed in range(seeds):
        for model, probs, style, month in ((BASE, p_base, "base", 1), (POST, p_post, "chat", 2)):
            runs = {t: (items[t], rng.random(per_task) < probs[t]) for t in tasks}
            stamp = f"2025-0{month}-{seed + 1:02d}T00-00-00.000000"
            paper.write_run(out, model, stamp, runs, style=style, seed=seed, shuffle_seed=seed)
    return items


def ours_arrays(root: Path, items: dict) -> dict:
    """task -> (base, post, question index per column): correctness (seeds, samples) by sample id
    from forgetmap's reader."""
    table = read_lighteval(root, model=None)
    cols = {c: table[c].to_pylist() for c in ("model", "seed", "benchmark", "sample_id")}
    cols["correct"] = table["correct"].to_numpy(zero_copy_only=False)
    cols["question"] = table["question"].to_pylist()
    out = {}
    for task in items:
        rows = [i for i, b in enumerate(cols["benchmark"]) if b == task]
        ids = sorted({cols["sample_id"][i] for i in rows})
        seeds = sorted({cols["seed"][i] for i in rows})
        column = {s: j for j, s in enumerate(ids)}
        arrays = {m: np.full((len(seeds), len(ids)), np.nan) for m in (BASE, POST)}
        question = np.full(len(ids), -1)
        for i in rows:
            j = column[cols["sample_id"][i]]
            arrays[cols["model"][i]][seeds.index(cols["seed"][i]), j] = cols["correct"][i]
            question[j] = int(ITEM.search(cols["question"][i]).group(1))
        if np.isnan(arrays[BASE]).any() or np.isnan(arrays[POST]).any():
            raise SystemExit(f"{task}: base and post do not share their sample ids")
        out[task] = (arrays[BASE], arrays[POST], question)
    return out


def null_metrics(root: Path, missing: dict) -> None:
    """Set ``metrics`` to null in the post model's files for ``missing[(task, seed)]`` (question
    indexes), found by their ``full_prompt``."""
    for stamp_dir in sorted((root / "details" / POST).iterdir()):
        seed = int(stamp_dir.name[8:10]) - 1
        for file in stamp_dir.glob("details_*.parquet"):
            task = release._task_key(file.name)
            gone = missing.get((task, seed), set())
            table = pq.read_table(file)
            prompts = table["full_prompt"].to_pylist()
            keep = [int(ITEM.search(p).group(1)) not in gone for p in prompts]
            metrics = table["metrics"].combine_chunks()
            nulled = pa.StructArray.from_arrays(
                [metrics.field("extractive_match")],
                fields=[metrics.type.field(0)],
                mask=pa.array([not k for k in keep]),
            )
            index = table.schema.get_field_index("metrics")
            pq.write_table(table.set_column(index, "metrics", nulled), file)


def compare(name: str, root: Path, ours: dict, missing: dict, seeds: int) -> bool:
    transitions = release.transitions_from_files(root, BASE, POST)
    equal_all = True
    for task, (base, post, question) in ours.items():
        post = post.copy()
        for s in range(seeds):
            post[s, np.isin(question, sorted(missing.get((task, s), ())))] = np.nan
        mine = consensus(base, post, num_choices=4)
        theirs = release.task_statistics(transitions[task])
        rel_f, rel_bt = release.adj_two_seed(theirs)
        equal = np.isclose(mine.f_consensus, rel_f, rtol=0, atol=1e-12) and np.isclose(
            mine.bt_consensus, rel_bt, rtol=0, atol=1e-12
        )
        for k, counts in mine.by_k.items():
            stats = theirs["by_size"][k]
            rel_mean = np.array([stats["mean_counts"][t] for t in TRANSITIONS])
            rel_var = np.array([stats["var_counts"][t] for t in TRANSITIONS])
            equal &= counts.combos == stats["num_combos"]
            equal &= np.allclose(counts.mean, rel_mean, rtol=0, atol=1e-9)
            equal &= np.allclose(counts.var, rel_var, rtol=0, atol=1e-9)
            print(
                f"  {task:<28} k={k} combos={counts.combos:>2}  "
                f"mean ours {_fmt(counts.mean)}  release {_fmt(rel_mean)}  "
                f"var ours {_fmt(counts.var)}  release {_fmt(rel_var)}"
            )
        print(
            f"  {task:<28} f_consensus ours {mine.f_consensus:.6f} release {rel_f:.6f}  "
            f"bt_consensus ours {mine.bt_consensus:.6f} release {rel_bt:.6f}  "
            f"f_true_consensus {mine.f_true_consensus:.6f} bt_true_consensus "
            f"{mine.bt_true_consensus:.6f}  equal: {bool(equal)}"
        )
        equal_all &= bool(equal)
    print(f"{name}: {'EQUAL' if equal_all else 'DIFFERENT'}")
    return equal_all


def release_functions(path: Path) -> dict:
    """The release's module namespace, its ``__main__`` block (hard-coded model lists) left out."""
    if path.is_dir():
        path = path / "src" / "analyze" / "process_data.py"
    source = path.read_text(encoding="utf-8")
    namespace = {"__name__": "process_data"}
    exec(
        compile(source[: source.index('if __name__ == "__main__":')], str(path), "exec"), namespace
    )
    return namespace


def check_release(name: str, root: Path, functions: dict, work: Path) -> bool:
    """The release's own compare_models on the tree, its CSV against the re-implementation."""
    out = work / f"{name}.csv"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        functions["compare_models"](
            [str(root / "details")], [str(root / "results")], BASE, POST, str(out)
        )
    rows = {r["task"]: r for r in read_csv(out)}
    transitions = release.transitions_from_files(root, BASE, POST)
    equal = True
    for task, row in rows.items():
        stats = release.task_statistics(transitions[task])
        for k, by in stats["by_size"].items():
            for t in TRANSITIONS:
                col = t.replace("->", "_")
                equal &= (
                    abs(float(row[f"mean_count_{k}_seeds_{col}"]) - by["mean_counts"][t]) < 1e-9
                )
                equal &= abs(float(row[f"var_count_{k}_seeds_{col}"]) - by["var_counts"][t]) < 1e-9
    print(f"{name}: the release's own compare_models == its re-implementation: {equal}")
    return equal


def read_csv(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _fmt(values: np.ndarray) -> str:
    return "[" + " ".join(f"{v:7.2f}" for v in values) + "]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--per-task", type=int, default=400)
    parser.add_argument("--missing", type=float, default=0.1, help="share of questions missing")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--release", type=Path, help="the release's process_data.py or checkout")
    args = parser.parse_args()
    if args.seeds < 2:
        parser.error("--seeds must be at least 2")
    rng = np.random.default_rng(51)
    work = Path(tempfile.mkdtemp(dir=args.workdir))
    tasks = [f"lighteval|mmlu_pro_{i}|0" for i in range(args.tasks)]
    start = time.perf_counter()
    complete = work / "complete"
    items = write_tree(complete, args.seeds, tasks, args.per_task, rng)
    ours = ours_arrays(complete, items)
    gone = int(args.missing * args.per_task)
    same = {t: set(rng.choice(args.per_task, gone, replace=False).tolist()) for t in tasks}
    cases = {
        "complete": {},
        "same-missing": {(t, s): same[t] for t in tasks for s in range(args.seeds)},
        "different-missing": {
            (t, s): set(rng.choice(args.per_task, gone, replace=False).tolist())
            for t in tasks
            for s in range(args.seeds)
        },
    }
    print(
        f"{args.seeds} seeds, {args.tasks} tasks x {args.per_task} questions; counts in the order "
        f"{', '.join(TRANSITIONS)}"
    )
    functions = release_functions(args.release) if args.release else None
    results = {}
    release_differs: list[str] = []
    for name, missing in cases.items():
        root = work / name
        if name != "complete":
            shutil.copytree(complete, root)
            null_metrics(root, missing)
        shown = (
            f", post metric missing for {gone} of {args.per_task} questions a seed"
            if missing
            else ""
        )
        print(f"\n{name}{shown}")
        results[name] = compare(name, root, ours, missing, args.seeds)
        if functions is not None and not check_release(name, root, functions, work):
            release_differs.append(name)
    print(
        "\ndifferent-missing: the release drops each seed's missing examples and then pairs seeds "
        "by position, so from the first missing question on it compares different questions; "
        "forgetmap aligns seeds by sample id, so the two differ there by design."
    )
    print(f"elapsed {time.perf_counter() - start:.1f} s")
    shutil.rmtree(work)
    if not (results["complete"] and results["same-missing"]):
        raise SystemExit("consensus differs from the release where it must agree")
    if release_differs:
        raise SystemExit(f"the re-implementation differs from the release in {release_differs}")


if __name__ == "__main__":
    main()
