"""The Open LLM Leaderboards' details datasets: their runs, the tasks each leaderboard scored and
by which metric, and which file of each task to import.

Read from the datasets' own layouts (their READMEs' ``configs`` name every file) and the writers'
source (lighteval's details and results files for v1, lm-eval's ``EvaluationTracker`` for v2):

- v1, ``open-llm-leaderboard-old/details_<org>__<model>`` (2023 to June 2024): the details its
  fork of lm-eval's harness wrote (a column per metric: ``forgetmap.importers.lighteval.files``,
  whose reader takes them), ``<run>/details_<task>_<run>.parquet`` with tasks
  ``harness|<task>|<shots>`` (``harness|arc:challenge|25``, ``harness|hendrycksTest-anatomy|5``),
  and ``results_<run>.json`` (``config_general.model_name`` and ``model_sha``; ``results`` keyed by
  task, plus ``all``).
- v2, ``open-llm-leaderboard/<org>__<model>-details`` (June 2024 on): lm-eval's ``--log_samples``
  output in a folder per model, ``<org>__<model>/samples_leaderboard_<task>_<run>.jsonl`` beside
  ``results_<run>.json`` (``model_name``; the revision in ``config.model_args``; ``configs`` keyed
  by every task that has samples). lm-eval named the samples files ``.json`` until 13 June 2024
  (commit 3850e21): the same JSON lines under another suffix.

A run is a timestamp, ``datetime.isoformat()`` with the time's colons as dashes, except in v1's
first runs (summer 2023), whose files and folders keep the colons (``2023-08-19T16:35:46.942696``):
``run_key`` spells both one way. A model evaluated again has several runs in its dataset, and a
run may hold tasks the leaderboard did not score (``harness|gsm8k|0`` beside the scored 5-shot
one, ``harness|drop|3``): each scored task's latest run is imported, as the datasets' ``latest``
split reads it, and the others are left out and told.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fnmatch import fnmatch, fnmatchcase
from pathlib import Path
from typing import Any

from forgetmap.core.errors import InputError

TIMESTAMP = r"\d{4}-\d{2}-\d{2}T\d{2}[-:]\d{2}[-:]\d{2}(?:\.\d+)?"
_RESULTS_NAME = re.compile(rf"^results_(?P<run>{TIMESTAMP})\.json$")
RESULTS_PATTERNS = ("results_*.json", "*/results_*.json")
"""Where a leaderboard dataset keeps its results files: at its root (v1), in the model's folder
(v2)."""
RESULTS_MAX_BYTES = 64 << 20


def run_key(timestamp: str) -> str:
    """A run's timestamp with dashes in its time, as the later runs write it: one spelling per
    run, which sorts in time order."""
    return timestamp.replace(":", "-")


def _literal(text: str) -> str:
    """``text`` as an fnmatch pattern that matches it alone."""
    return re.sub(r"([*?\[\]])", r"[\1]", text)


@dataclass(frozen=True)
class ScoredTask:
    """A task the leaderboard scored: its name as the files spell it (an fnmatch pattern), and
    the per-sample metric it was scored by (one that is 0 or 1 for every sample)."""

    task: str
    metric: str


@dataclass(frozen=True)
class Leaderboard:
    """One generation of the leaderboard: the taxonomy suite it is, the import kind whose reader
    reads its files, how its per-task files are named, and the tasks it scored."""

    suite: str
    title: str
    kind: str
    prefix: str  # every task of its results files starts so
    # a task's file name in a run, "{task}" and "{run}" filled in; the first is its reader's
    names: tuple[str, ...]
    scored: tuple[ScoredTask, ...]

    def metric_of(self, task: str) -> str | None:
        """The metric the leaderboard scored ``task`` by; None for a task it did not score."""
        return next((s.metric for s in self.scored if fnmatchcase(task, s.task)), None)

    def file_task(self, name: str) -> tuple[str, str] | None:
        """(task, run key) of a per-task file's name; None for any other file."""
        return file_task(self.names, name)

    def patterns(self, task: str, run: str) -> list[str]:
        """Glob patterns (huggingface_hub's ``allow_patterns``) of ``task``'s file of ``run``,
        in whatever folder, its time written with dashes or colons."""
        return file_patterns(self.names, task, run)


def file_task(names: tuple[str, ...], name: str) -> tuple[str, str] | None:
    """(task, run key) of a file named by one of ``names`` (templates with "{task}_{run}");
    None for any other file."""
    for template in names:
        head, _, tail = template.partition("{task}_{run}")
        match = re.fullmatch(
            rf"{re.escape(head)}(?P<task>.+)_(?P<run>{TIMESTAMP}){re.escape(tail)}", name
        )
        if match:
            return match["task"], run_key(match["run"])
    return None


def file_patterns(names: tuple[str, ...], task: str, run: str) -> list[str]:
    """Glob patterns of ``task``'s file of ``run`` under each of ``names``, in whatever folder,
    its time written with dashes or colons."""
    date, _, time = run.partition("T")
    moment = f"{date}T{time.replace('-', '?')}"
    return ["*" + name.replace("{task}", _literal(task)).replace("{run}", moment) for name in names]


LM_EVAL_NAMES = ("samples_{task}_{run}.jsonl", "samples_{task}_{run}.json")
"""lm-eval's samples files (``EvaluationTracker.save_results_samples``, the v2 leaderboard's and
any other push of them): ``.jsonl``, ``.json`` until 13 June 2024 (the same lines). The first is
its reader's."""


V1 = Leaderboard(
    suite="open_llm_leaderboard_v1",
    title="Open LLM Leaderboard v1 details (lighteval)",
    kind="lighteval",
    prefix="harness|",
    names=("details_{task}_{run}.parquet",),
    # the leaderboard's own metrics (its About page), except TruthfulQA's: it ranked models by
    # mc2, a probability mass, not 0 or 1; mc1 (is the true answer the most likely) is
    scored=(
        ScoredTask("harness|arc:challenge|25", "acc_norm"),
        ScoredTask("harness|hellaswag|10", "acc_norm"),
        ScoredTask("harness|hendrycksTest-*|5", "acc"),
        ScoredTask("harness|truthfulqa:mc|0", "mc1"),
        ScoredTask("harness|winogrande|5", "acc"),
        ScoredTask("harness|gsm8k|5", "acc"),
    ),
)
V2 = Leaderboard(
    suite="open_llm_leaderboard_v2",
    title="Open LLM Leaderboard v2 details (lm-eval)",
    kind="lm-eval",
    prefix="leaderboard_",
    names=LM_EVAL_NAMES,
    # each task's metric_list in lm-eval's lm_eval/tasks/leaderboard/ (IFEval: the strict
    # prompt-level accuracy, its first)
    scored=(
        ScoredTask("leaderboard_bbh_*", "acc_norm"),
        ScoredTask("leaderboard_gpqa_*", "acc_norm"),
        ScoredTask("leaderboard_musr_*", "acc_norm"),
        ScoredTask("leaderboard_mmlu_pro", "acc"),
        ScoredTask("leaderboard_math_*_hard", "exact_match"),
        ScoredTask("leaderboard_ifeval", "prompt_level_strict_acc"),
    ),
)
LEADERBOARDS = (V1, V2)


# ---------------------------------------------------------------------------------------------
# runs


@dataclass(frozen=True)
class Run:
    """One ``results_<run>.json``: the run, the model it evaluated, and its tasks."""

    key: str
    results: Path
    model: str | None
    revision: str | None
    tasks: frozenset[str]
    lm_eval: bool  # written by lm-eval (its results file has ``configs``), not by lighteval


def read_runs(snapshot: Path) -> list[Run]:
    """The runs of the results files in a dataset's snapshot, oldest first. A JSON file named
    like one that holds no ``results`` object is not a harness's and is passed over."""
    runs = []
    for path in sorted(snapshot.rglob("results_*.json")):
        match = _RESULTS_NAME.match(path.name)
        if not match or not path.is_file():
            continue
        data = _json_object(path)
        if not isinstance(data.get("results"), dict):
            continue
        lm_eval = isinstance(data.get("configs"), dict)
        runs.append(
            Run(run_key(match["run"]), path, _model(data), _revision(data), _tasks(data), lm_eval)
        )
    return sorted(runs, key=lambda r: (r.key, str(r.results)))


def _json_object(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > RESULTS_MAX_BYTES:
            return {}
        data = json.loads(path.read_bytes().decode("utf-8-sig"))
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a results file ({exc})") from None
    return data if isinstance(data, dict) else {}


def _tasks(data: dict[str, Any]) -> frozenset[str]:
    """A run's tasks: lm-eval's ``configs`` (every task with samples, not the groups
    ``results`` also holds), else lighteval's ``results`` less its ``all``."""
    configs = data.get("configs")
    tasks = configs if isinstance(configs, dict) else data["results"]
    return frozenset(str(t) for t in tasks if t != "all")


def _configs(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Where the harnesses keep a run's model: lighteval's ``config_general`` (``config`` in
    some of 2023's files), lm-eval's top level and its ``config``."""
    found = [data.get("config_general"), data.get("config"), data]
    return [c for c in found if isinstance(c, dict)]


def _model_args(data: dict[str, Any]) -> dict[str, str]:
    """lm-eval's ``config.model_args`` (``pretrained=org/model,revision=abc,...``) as a dict."""
    config = data.get("config")
    args = config.get("model_args") if isinstance(config, dict) else None
    if not isinstance(args, str):
        return {}
    pairs = (part.partition("=") for part in args.split(","))
    return {key.strip(): value.strip() for key, sep, value in pairs if sep}


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _model(data: dict[str, Any]) -> str | None:
    for config in _configs(data):
        if name := _text(config.get("model_name")):
            return name
    return _text(_model_args(data).get("pretrained"))


def _revision(data: dict[str, Any]) -> str | None:
    for config in _configs(data):
        for key in ("model_sha", "model_revision"):
            if revision := _text(config.get(key)):
                return revision
    return _text(_model_args(data).get("revision"))


def leaderboard_of(runs: list[Run]) -> Leaderboard | None:
    """The leaderboard whose runs these are (by their tasks' names); None for neither's."""
    found = [
        board
        for board in LEADERBOARDS
        if any(task.startswith(board.prefix) for run in runs for task in run.tasks)
    ]
    if len(found) > 1:
        named = ", ".join(str(run.results.name) for run in runs)
        raise InputError(
            f"the results files ({named}) hold the tasks of both leaderboards' generations: "
            "import each with --include PATTERN naming its files"
        )
    return found[0] if found else None


def latest_runs(board: Leaderboard, runs: list[Run]) -> tuple[dict[str, Run], list[str]]:
    """({scored task: the latest run holding it}, the other tasks of the runs, sorted)."""
    chosen: dict[str, Run] = {}
    others: set[str] = set()
    for run in runs:  # oldest first: a later run replaces an earlier one
        for task in run.tasks:
            if board.metric_of(task) is not None:
                chosen[task] = run
            else:
                others.add(task)
    return dict(sorted(chosen.items())), sorted(others)


# ---------------------------------------------------------------------------------------------
# files


def allowed(relative: str, patterns: list[str]) -> bool:
    """Whether a path in the repo matches one of ``patterns`` as huggingface_hub's
    ``allow_patterns`` match it (fnmatch; a pattern ending in "/" takes the folder's files)."""
    return any(fnmatch(relative, p + "*" if p.endswith("/") else p) for p in patterns)


@dataclass(frozen=True)
class TaskFile:
    task: str
    run: str
    path: Path  # in the snapshot


def latest_files(snapshot: Path, board: Leaderboard, patterns: list[str]) -> dict[str, TaskFile]:
    """{scored task: its file of its latest run} among the snapshot's files that ``patterns``
    allow. A snapshot holds what any earlier download fetched: what this one asked for is
    chosen again here. Two files of one task and run (in two folders) are refused."""
    found: dict[str, TaskFile] = {}
    for path in sorted(snapshot.rglob("*")):
        named = board.file_task(path.name)
        if named is None or board.metric_of(named[0]) is None or not path.is_file():
            continue
        if not allowed(path.relative_to(snapshot).as_posix(), patterns):
            continue
        task, run = named
        before = found.get(task)
        if before is not None and before.run == run:
            raise InputError(
                f"task {task!r} of run {run} has two files ({before.path.relative_to(snapshot)} "
                f"and {path.relative_to(snapshot)}): import one with --include PATTERN"
            )
        if before is None or run > before.run:
            found[task] = TaskFile(task, run, path)
    return dict(sorted(found.items()))
