"""Per-sample details datasets on the Hugging Face hub (`forgetmap import hub REPO_ID`): fetched,
then read by the readers of their harnesses.

``fetch_plan`` fetches a dataset in two steps (``fetch.download``): its results files, which tell
the layout, the model (and its revision) and each run's tasks; then the files to import. It
knows (from the files themselves, not the repo's name):

- the Open LLM Leaderboards' details (``leaderboards``): each scored task's file of its latest
  run, read by the lighteval reader (v1) or the lm-eval one (v2), grouped by the metric the
  leaderboard scored them by, under the model the results files name;
- Every Eval Ever instance files (``*_samples.jsonl`` beside their aggregates): read by the EEE
  reader, each line under its own model.

What each reader reads is staged in a folder of its own: links to the cached files (nothing is
copied), named as the reader expects them (a v2 samples file of June 2024's ``.json`` as
``.jsonl``), and v1's TruthfulQA rewritten as the mc1 task it scores (``truthfulqa``). The
caller owns the staging folder and removes it when the import is done.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from forgetmap.core.errors import InputError
from forgetmap.importers.eee.format import SAMPLES_SUFFIX
from forgetmap.importers.hub.fetch import INSTALL, download
from forgetmap.importers.hub.leaderboards import (
    RESULTS_PATTERNS,
    Leaderboard,
    Run,
    TaskFile,
    allowed,
    latest_files,
    latest_runs,
    leaderboard_of,
    read_runs,
)
from forgetmap.importers.hub.truthfulqa import MC1_TASK, MC_TASK, mc1_details

__all__ = ["INSTALL", "HubPlan", "HubUnit", "fetch_plan"]

EEE_PATTERNS = ("*.json", f"*{SAMPLES_SUFFIX}")
"""What an Every Eval Ever dataset's import fetches unless ``--include`` narrows it: aggregates
and instance files (a whole datastore is large: name a part of it)."""


@dataclass(frozen=True)
class HubUnit:
    """Files one reader reads with one set of options: the import ``kind``, the ``metric`` that
    means correct (None: the reader's own), the staged ``folder`` and the ``files`` in it that
    are imported one by one through a running app (an upload is a file)."""

    kind: str
    metric: str | None
    folder: Path
    files: tuple[Path, ...]


@dataclass(frozen=True)
class HubPlan:
    """What a dataset's import reads: its units, the model its results files name (None: the
    files' lines name theirs), and the lines that tell what was found and left out."""

    repo_id: str
    commit: str
    model: str | None
    units: tuple[HubUnit, ...]
    notices: tuple[str, ...]


def fetch_plan(
    repo_id: str, *, revision: str | None, include: tuple[str, ...], staging: Path
) -> HubPlan:
    """Fetch dataset ``repo_id`` (only what ``include``'s glob patterns name, when given) and
    stage its files in ``staging``; InputError where it holds nothing to import."""
    snapshot = download(repo_id, revision=revision, patterns=list(RESULTS_PATTERNS))
    runs = read_runs(snapshot)
    board = leaderboard_of(runs)
    if board is None:
        return _eee_plan(repo_id, snapshot, list(include or EEE_PATTERNS), staging)
    chosen, others = latest_runs(board, runs)
    if not chosen:
        raise InputError(f"{repo_id}: its results files name none of the tasks the "
                         f"{board.title} scored")  # fmt: skip
    patterns = list(include) or [p for task, run in chosen.items()
                                 for p in board.patterns(task, run.key)]  # fmt: skip
    # the commit the results came from, also for the second step: the dataset may change between
    snapshot = download(repo_id, revision=snapshot.name, patterns=patterns)
    files = latest_files(snapshot, board, patterns)
    notices = [f"{repo_id} ({snapshot.name[:12]}): {board.title}, {len(files)} scored tasks, the "
               "latest run of each"]  # fmt: skip
    if others:
        notices.append(f"left out, not scored by the leaderboard: {_listed(others)}")
    missing = sorted(set(chosen) - set(files)) if not include else []
    if missing:
        notices.append(
            f"no file in the dataset for {_listed(missing)} (not uploaded; offline, not in the "
            "cache): left out"
        )
    if not files:
        raise InputError(f"{repo_id}: no details file of a scored task"
                         + (f" matches --include {' '.join(include)}" if include else ""))  # fmt: skip
    model = _model(repo_id, [_run_of(runs, f) for f in files.values()], notices)
    units = _stage_leaderboard(board, files, runs, staging, notices)
    return HubPlan(repo_id, snapshot.name, model, units, tuple(notices))


def _listed(names: list[str], most: int = 8) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _run_of(runs: list[Run], file: TaskFile) -> Run | None:
    """The results file of the run that wrote ``file``."""
    return next((run for run in reversed(runs) if run.key == file.run), None)


def _model(repo_id: str, runs: list[Run | None], notices: list[str]) -> str | None:
    """The model the imported runs' results files name, its revision(s) told; None where they
    name none, or several (told): the import then needs --model."""
    models = sorted({run.model for run in runs if run is not None and run.model})
    if len(models) > 1:
        notices.append(f"{repo_id}: its results files name {len(models)} models "
                       f"({', '.join(models)}); --include PATTERN chooses one's files")  # fmt: skip
        return None
    revisions = sorted({run.revision for run in runs if run is not None and run.revision})
    if models:
        said = f" at revision {', '.join(revisions)}" if revisions else ""
        notices.append(f"model {models[0]}{said} (from the dataset's results files)")
    return models[0] if models else None


def _link(source: Path, target: Path) -> Path:
    """A link at ``target`` to the file ``source`` is (a cache's snapshot file is itself a link
    to its blob)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(source.resolve(), target)
    return target


def _staged(board: Leaderboard, file: TaskFile, folder: Path) -> Path:
    """``file`` in ``folder`` under the name its reader reads (the first of ``board.names``):
    a link, or v1's TruthfulQA written as its mc1 task (InputError where it cannot be)."""

    def named(task: str) -> Path:
        return folder / board.names[0].replace("{task}", task).replace("{run}", file.run)

    if file.task == MC_TASK:
        mc1_details(file.path, named(MC1_TASK))
        return named(MC1_TASK)
    return _link(file.path, named(file.task))


def _stage_leaderboard(
    board: Leaderboard,
    files: dict[str, TaskFile],
    runs: list[Run],
    staging: Path,
    notices: list[str],
) -> tuple[HubUnit, ...]:
    """A unit per metric: a folder of the files of the tasks scored by it (and, for lm-eval's
    reader, each run's results file beside its samples, where it looks for their filters)."""
    by_metric: dict[str, list[TaskFile]] = {}
    for file in files.values():
        by_metric.setdefault(board.metric_of(file.task) or "", []).append(file)
    units = []
    for number, (metric, group) in enumerate(sorted(by_metric.items())):
        folder = staging / f"{number}-{metric}"
        folder.mkdir(parents=True)
        staged = []
        for file in group:
            try:
                staged.append(_staged(board, file, folder))
            except InputError as exc:
                notices.append(f"{file.task} left out: {exc}")
                continue
            run = _run_of(runs, file)
            beside = folder / f"results_{file.run}.json"
            if board.kind == "lm-eval" and run is not None and not beside.exists():
                _link(run.results, beside)
        if staged:
            units.append(HubUnit(board.kind, metric, folder, tuple(staged)))
    return tuple(units)


def _eee_plan(repo_id: str, snapshot: Path, patterns: list[str], staging: Path) -> HubPlan:
    """Every Eval Ever instance files (and their aggregates) of the dataset, fetched by
    ``patterns``, staged with their paths in the repo."""
    snapshot = download(repo_id, revision=snapshot.name, patterns=patterns)
    folder = staging / "eee"
    staged = []
    for path in sorted(snapshot.rglob("*")):
        relative = path.relative_to(snapshot).as_posix()
        if not path.is_file() or not path.name.endswith((".json", SAMPLES_SUFFIX)):
            continue
        if allowed(relative, patterns):
            link = _link(path, folder / relative)
            if path.name.endswith(SAMPLES_SUFFIX):
                staged.append(link)
    if not staged:
        raise InputError(
            f"{repo_id}: neither Open LLM Leaderboard details (results_<timestamp>.json naming "
            f"harness| or leaderboard_ tasks) nor Every Eval Ever instance files (*{SAMPLES_SUFFIX}"
            f"{', matching ' + ' '.join(patterns) if patterns != list(EEE_PATTERNS) else ''})"
        )
    notices = (f"{repo_id} ({snapshot.name[:12]}): Every Eval Ever instance files, "
               f"{len(staged)} of them",)  # fmt: skip
    return HubPlan(repo_id, snapshot.name, None, (HubUnit("eee", None, folder, tuple(staged)),),
                   notices)  # fmt: skip
