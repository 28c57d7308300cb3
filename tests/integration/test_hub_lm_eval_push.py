"""`forgetmap import hub` on lm-eval's own push of any tasks (``lm_eval --log_samples
--hf_hub_log_args push_samples_to_hub=True``), not only the Open LLM Leaderboard's, from a Hugging
Face cache in huggingface_hub's real layout with HF_HUB_OFFLINE=1 (the real library in the real
command's process, no network).

The datasets are laid out as lm-eval's ``EvaluationTracker`` pushes them: it uploads the folder it
wrote, ``<org>__<model>/`` holding ``results_<date_id>.json`` and ``samples_<task>_<date_id>.jsonl``
(the lines as ``save_results_samples`` writes them: ``forgetmap.demo.layouts.lm_eval``), and, with
``push_results_to_hub``, the results file again under ``<org>/<model>/``; one folder per model
evaluated into the dataset, a run's files beside those of earlier runs, the card at the root. The
stored per-sample values are known by hand from the values written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from forgetmap.demo.layouts.leaderboard import write_cached_dataset
from forgetmap.demo.layouts.lm_eval import write_lm_eval_samples

from tests.support.hub_cache import forgetmap, offline_env
from tests.support.server import Server

pytestmark = pytest.mark.integration

PUSH = "acme/lm-eval-results"  # lm-eval's default details dataset, two models in it
OLDER = "acme/lm-eval-results-0.4.5"  # lines that do not name their filter (lm-eval 0.4.3-0.4.6)
NEITHER = "acme/parquet-only"
MIXED = "acme/lm-eval-mixed"  # the v2 leaderboard's tasks and others in one push
BARE = "acme/lm-eval-samples-only"  # pushed without results files
BASE, INSTRUCT, OLD_MODEL = "acme/Small-1B", "acme/Small-1B-Instruct", "acme/Old-3B"
FIRST, LATEST, OTHER = (
    "2025-01-10T09-00-00.000001",
    "2025-02-11T10-30-00.654321",
    "2025-02-12T08-00-00.000002",
)

# per model, task: per filter, each document's value (1 right); the imported ones by hand below
BASE_FIRST = {"arc_easy": [0, 0, 0, 0]}  # an earlier run of arc_easy: not the one imported
BASE_LATEST = {
    "arc_easy": [1, 0, 1, 1],
    "hellaswag": [0, 1, 1],  # acc; its acc_norm says [1, 0, 0] and is not the reader's metric
    "mmlu_abstract_algebra": [1, 1, 0, 0],
    "gsm8k": {"strict-match": [1, 0, 0], "flexible-extract": [1, 1, 0]},
}
INSTRUCT_RUN = {"arc_easy": [0, 1, 1, 0], "mmlu_abstract_algebra": [0, 1, 1, 1]}
OLD_RUN = {"gsm8k": {"strict-match": [0, 0, 1], "flexible-extract": [0, 1, 1]}}
# leaderboard_bbh_navigate is scored by acc_norm (written as 1 - acc), arc_easy by acc
MIXED_RUN = {"leaderboard_bbh_navigate": [1, 1, 0], "arc_easy": [0, 1, 1, 1]}
BARE_RUN = {"arc_easy": [1, 1, 0, 0], "gsm8k": {"flexible-extract": [0, 1, 1]}}

EXPECTED = {  # (model, task): {doc_id: correct}
    (BASE, "arc_easy"): {"0": 1, "1": 0, "2": 1, "3": 1},  # the latest run's
    (BASE, "hellaswag"): {"0": 0, "1": 1, "2": 1},
    (BASE, "mmlu_abstract_algebra"): {"0": 1, "1": 1, "2": 0, "3": 0},
    (BASE, "gsm8k"): {"0": 1, "1": 1, "2": 0},  # flexible-extract, preferred to strict-match
    (INSTRUCT, "arc_easy"): {"0": 0, "1": 1, "2": 1, "3": 0},
    (INSTRUCT, "mmlu_abstract_algebra"): {"0": 0, "1": 1, "2": 1, "3": 1},
}


def _samples(folder: Path, task: str, values, stamp: str, *, named: bool = True) -> bytes:
    """A samples file's bytes as lm-eval writes them (MMLU-style options for the multiple-choice
    tasks, gsm8k generations with a line per filter)."""
    if isinstance(values, dict):
        path = write_lm_eval_samples(
            folder / stamp,
            task,
            values,
            kind="generate_until",
            timestamp=stamp,
            filters_named=named,
        )
    else:
        normed = task == "hellaswag" or task.startswith("leaderboard_")
        extra = {"acc_norm": [1 - v for v in values]} if normed else None
        path = write_lm_eval_samples(
            folder / stamp, task, values, extra_metrics=extra, timestamp=stamp, filters_named=named
        )
    return path.read_bytes()


def _results(model: str, tasks: dict) -> bytes:
    """A run's results file as ``save_results_aggregated`` writes it: scores per task and
    group, ``configs`` of the tasks with samples (their ``filter_list``), the run's config and
    the ``GeneralConfigTracker``'s fields (``model_name``)."""
    groups = (
        {"mmlu": [t for t in tasks if t.startswith("mmlu_")]}
        if any(t.startswith("mmlu_") for t in tasks)
        else {}
    )
    configs = {}
    for task, values in tasks.items():
        config = {
            "task": task,
            "dataset_path": task,
            "num_fewshot": 0,
            "output_type": "generate_until" if isinstance(values, dict) else "multiple_choice",
            "metadata": {"version": 1.0},
        }
        if isinstance(values, dict):
            config["filter_list"] = [
                {"name": name, "filter": [{"function": "take_first"}]} for name in values
            ]
        configs[task] = config
    document = {
        "results": {name: {"alias": name, "acc,none": 0.5} for name in [*groups, *tasks]},
        "group_subtasks": {**groups, **{t: [] for t in tasks if not t.startswith("mmlu_")}},
        "configs": dict(sorted(configs.items())),
        "versions": {task: 1.0 for task in tasks},
        "n-shot": {task: 0 for task in tasks},
        "config": {
            "model": "hf",
            "model_args": f"pretrained={model},revision=main,dtype=bfloat16",
            "batch_size": "auto",
        },
        "git_hash": "4f8e479",
        "date": 1739269800.0,
        "task_hashes": {},
        "model_source": "hf",
        "model_name": model,
        "model_name_sanitized": model.replace("/", "__"),
        "total_evaluation_time_seconds": "41.5",
    }
    return json.dumps(document, indent=2).encode()


def _push(scratch: Path, model: str, runs: list[tuple[str, dict]], *, named: bool = True) -> dict:
    """{path in the dataset: bytes} of ``model``'s runs as the tracker pushes them."""
    folder = model.replace("/", "__")
    files = {}
    for stamp, tasks in runs:
        files[f"{folder}/results_{stamp}.json"] = _results(model, tasks)
        files[f"{model}/results_{stamp}.json"] = _results(model, tasks)  # push_results_to_hub
        for task, values in tasks.items():
            data = _samples(scratch / folder, task, values, stamp, named=named)
            files[f"{folder}/samples_{task}_{stamp}.jsonl"] = data
    return files


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> dict:
    """A node whose Hugging Face cache holds the datasets, offline."""
    root = tmp_path_factory.mktemp("hf")
    cache, scratch = root / "hub", root / "scratch"
    card = b"---\nconfigs:\n- config_name: acme__Small-1B__arc_easy\n---\n# Evaluation run\n"
    push = {
        "README.md": card,
        **_push(scratch, BASE, [(FIRST, BASE_FIRST), (LATEST, BASE_LATEST)]),
        **_push(scratch, INSTRUCT, [(OTHER, INSTRUCT_RUN)]),
    }
    write_cached_dataset(cache, PUSH, push)
    write_cached_dataset(cache, OLDER, _push(scratch, OLD_MODEL, [(LATEST, OLD_RUN)], named=False))
    write_cached_dataset(cache, MIXED, _push(scratch, OLD_MODEL, [(LATEST, MIXED_RUN)]))
    bare = _push(scratch, OLD_MODEL, [(OTHER, BARE_RUN)])
    write_cached_dataset(cache, BARE, {k: v for k, v in bare.items() if "/results_" not in k})
    write_cached_dataset(
        cache,
        NEITHER,
        {
            ".gitattributes": b"*.parquet filter=lfs\n",
            "README.md": b"# a dataset\n",
            "data/train-00000-of-00001.parquet": b"PAR1",
            "data/test-00000-of-00001.parquet": b"PAR1",
        },
    )
    return offline_env(cache, root / "home")


def stored(db: Path) -> dict[tuple[str, str], dict[str, int]]:
    """{(model, benchmark): {sample_id: correct}} of the stored results."""
    from forgetmap.db import open_store

    store = open_store(db)
    try:
        with store.read() as conn:
            rows = conn.execute(
                "SELECT m.name, b.name, r.sample_id, r.correct, r.seed FROM results r "
                "JOIN models m ON m.id = r.model_id JOIN benchmarks b ON b.id = r.benchmark_id"
            ).fetchall()
    finally:
        store.close()
    out: dict[tuple[str, str], dict[str, int]] = {}
    for model, benchmark, sample, correct, seed in rows:
        assert seed == 0
        out.setdefault((model, benchmark), {})[sample] = int(correct)
    return out


def _by_task(records: dict) -> dict:
    """``stored``'s keys with the benchmark as the task its file named (the store may name a
    task its own way: mmlu_abstract_algebra as mmlu:abstract_algebra)."""
    tasks = {task for _, task in EXPECTED}
    out = {}
    for (model, benchmark), values in records.items():
        [task] = [t for t in tasks if benchmark.replace(":", "_") == t.replace(":", "_")]
        out[(model, task)] = values
    return out


def _by_name(records: dict, words: tuple[str, ...]) -> dict:
    """``stored``'s values of one model by the one word of ``words`` each benchmark's stored
    name holds (the store may spell a task its own way)."""
    out = {}
    for (_, benchmark), values in records.items():
        [word] = [w for w in words if w in benchmark]
        out[word] = values
    assert sorted(out) == sorted(words)
    return out


def test_a_push_of_two_models_imports_each_tasks_latest_run(hub, tmp_path):
    db = tmp_path / "fm.duckdb"
    done = forgetmap(db, hub, "import", "hub", PUSH)
    assert done.stdout == (
        f"imported 22 new rows (0 already stored) for {BASE}, {INSTRUCT} on 4 benchmarks\n"
    )
    assert (
        "lm-eval's own push, 6 samples files of 2 model(s), each task's latest run" in done.stderr
    )
    assert f"model {BASE} at revision main (from the dataset's results files)" in done.stderr
    assert "left out, earlier runs of: arc_easy" in done.stderr
    assert "no file in the dataset" not in done.stderr  # the results-only copies are no models
    assert _by_task(stored(db)) == EXPECTED
    again = forgetmap(db, hub, "import", "hub", PUSH)  # nothing fetched, nothing stored twice
    assert again.stdout.startswith("imported 0 new rows (22 already stored)")


@pytest.mark.parametrize("through_app", [False, True], ids=["on the file", "through the app"])
def test_lines_without_their_filter_read_it_from_the_run_beside(hub, tmp_path, through_app):
    """Lines of lm-eval 0.4.5 do not name their filter: a gsm8k file's two lines per document
    are told apart by the run's results file beside it. Through an app each samples file is
    sent with that results file (uploaded alone, they could not be told apart)."""
    db = tmp_path / "fm.duckdb"
    server = Server(db) if through_app else None
    try:
        done = forgetmap(db, hub, "import", "hub", OLDER)
    finally:
        if server is not None:
            server.stop()
    assert (
        done.stdout == f"imported 3 new rows (0 already stored) for {OLD_MODEL} on 1 benchmarks\n"
    )
    [(key, values)] = stored(db).items()
    assert key[0] == OLD_MODEL and values == {"0": 0, "1": 1, "2": 1}  # flexible-extract's


def test_model_names_one_models_files(hub, tmp_path):
    db = tmp_path / "fm.duckdb"
    refused = forgetmap(db, hub, "import", "hub", PUSH, "--model", "mine", ok=False)
    error = refused.stderr.splitlines()[-1]  # after the notices of what was found
    assert refused.returncode == 2 and error.startswith(
        f"error: {PUSH}: its files are 2 models' ({BASE}, {INSTRUCT}) and --model names one"
    )
    assert error.endswith("(nothing was imported)") and stored(db) == {}
    done = forgetmap(
        db, hub, "import", "hub", PUSH, "--include", "acme__Small-1B-Instruct/*", "--model", "mine"
    )
    assert done.stdout == "imported 8 new rows (0 already stored) for mine on 2 benchmarks\n"
    assert _by_task(stored(db)) == {
        ("mine", task): values for (model, task), values in EXPECTED.items() if model == INSTRUCT
    }


def test_through_the_app_that_owns_the_database(hub, tmp_path):
    db = tmp_path / "fm.duckdb"
    server = Server(db)
    try:
        done = forgetmap(db, hub, "import", "hub", PUSH)
        assert done.stdout == (
            f"imported 22 new rows (0 already stored) for {BASE}, {INSTRUCT} on 4 benchmarks\n"
        )
    finally:
        server.stop()
    assert _by_task(stored(db)) == EXPECTED


def test_a_dataset_of_no_known_layout_says_what_it_holds(hub, tmp_path):
    done = forgetmap(tmp_path / "fm.duckdb", hub, "import", "hub", NEITHER, ok=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(
        f"error: {NEITHER}: not a layout the hub import reads: it holds 4 files (2 .parquet, "
        "1 .gitattributes, 1 .md), at its top level .gitattributes, README.md, data/ (2 files); "
        "it reads Open LLM Leaderboard details"
    )
    for accepted in (
        "lm-eval's own push of any tasks",
        "samples_<task>_<timestamp>.jsonl",
        "push_samples_to_hub=True",
        "Every Eval Ever instance files",
    ):
        assert accepted in done.stderr
    assert done.stderr.endswith("(nothing was imported)\n")


def test_a_push_of_leaderboard_tasks_and_others_imports_both(hub, tmp_path):
    db = tmp_path / "fm.duckdb"
    done = forgetmap(db, hub, "import", "hub", MIXED)
    assert done.stdout == (
        f"imported 7 new rows (0 already stored) for {OLD_MODEL} on 2 benchmarks\n"
    )
    assert "Open LLM Leaderboard v2 details (lm-eval), 1 scored tasks" in done.stderr
    assert "lm-eval's own push, 1 samples files of 1 model(s)" in done.stderr
    assert "not scored by the leaderboard" not in done.stderr
    by_task = _by_name(stored(db), ("navigate", "arc"))
    assert by_task["navigate"] == {"0": 0, "1": 0, "2": 1}  # acc_norm, the leaderboard's
    assert by_task["arc"] == {"0": 0, "1": 1, "2": 1, "3": 1}  # acc, the reader's


def test_a_push_without_results_files_needs_the_model_named(hub, tmp_path):
    db = tmp_path / "fm.duckdb"
    refused = forgetmap(db, hub, "import", "hub", BARE, ok=False)
    assert "no results file in the dataset (pushed without them)" in refused.stderr
    error = refused.stderr.splitlines()[-1]
    assert error.startswith(f"error: {BARE}: its results files name no one model: pass --model")
    assert stored(db) == {}
    done = forgetmap(db, hub, "import", "hub", BARE, "--model", "old")
    assert done.stdout == "imported 7 new rows (0 already stored) for old on 2 benchmarks\n"
    by_task = _by_name(stored(db), ("arc", "gsm8k"))
    assert by_task["arc"] == {"0": 1, "1": 1, "2": 0, "3": 0}
    assert by_task["gsm8k"] == {"0": 0, "1": 1, "2": 1}  # its one filter, named in the lines
