"""Per-sample details datasets on the Hugging Face hub (`forgetmap import hub REPO_ID`): fetched,
then read by the readers of their harnesses.

``fetch_plan`` fetches a dataset in two steps (``fetch.download``): its results files, which tell
the layout, the model (and its revision) and each run's tasks; then the files to import. It
knows (from the files themselves, not the repo's name):

- the Open LLM Leaderboards' details (``leaderboards``): each scored task's file of its latest
  run, read by the lighteval reader (v1) or the lm-eval one (v2), grouped by the metric the
  leaderboard scored them by, under the model the results files name;
- lm-eval's own push of any tasks (``lm_eval --log_samples --hf_hub_log_args
  push_samples_to_hub=True``; the v2 leaderboard is one such push, told by its tasks): its
  ``EvaluationTracker`` uploads the folder it wrote, ``<org>__<model>/`` with the samples files
  ``samples_<task>_<run>.jsonl`` beside the run's ``results_<run>.json`` (and, pushing results,
  ``<org>/<model>/results_<run>.json``), one folder per model evaluated into the dataset. Each
  model's tasks, each from its latest run, are read by the lm-eval reader as ``forgetmap import
  lm-eval`` reads them (its metric, its filter), under the model its results file names;
- Every Eval Ever instance files (``*_samples.jsonl`` beside their aggregates): read by the EEE
  reader, each line under its own model.

A dataset of none of these is refused in one line that says what it holds.

What each reader reads is staged in a folder of its own: links to the cached files (nothing is
copied), named as the reader expects them (a v2 samples file of June 2024's ``.json`` as
``.jsonl``), and v1's TruthfulQA rewritten as the mc1 task it scores (``truthfulqa``). The
caller owns the staging folder and removes it when the import is done.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from forgetmap.core.errors import InputError
from forgetmap.importers.eee.format import SAMPLES_SUFFIX
from forgetmap.importers.hub.fetch import INSTALL, cached_listing, download, listed_files
from forgetmap.importers.hub.leaderboards import (
    LM_EVAL_NAMES,
    RESULTS_PATTERNS,
    Leaderboard,
    Run,
    TaskFile,
    allowed,
    file_patterns,
    file_task,
    latest_files,
    latest_runs,
    leaderboard_of,
    read_runs,
)
from forgetmap.importers.hub.truthfulqa import MC1_TASK, MC_TASK, mc1_details

__all__ = ["INSTALL", "HubPlan", "HubUnit", "fetch_plan"]

SAMPLES_PATTERNS = ("samples_*.json", "*/samples_*.json", "samples_*.jsonl", "*/samples_*.jsonl")
"""Every lm-eval samples file of a push without results files (at the root, or in a model's
folder)."""

EEE_PATTERNS = ("*.json", f"*{SAMPLES_SUFFIX}")
"""What an Every Eval Ever dataset's import fetches unless ``--include`` narrows it: aggregates
and instance files (a whole datastore is large: name a part of it)."""


@dataclass(frozen=True)
class HubUnit:
    """Files one reader reads with one set of options: the import ``kind``, the ``metric`` that
    means correct (None: the reader's own), the staged ``folder`` and the ``files`` in it that
    are imported one by one through a running app (an upload is a file). An lm-eval push's unit
    is one model's: ``model`` (None: unknown) and ``source``, the model (or, unknown, the folder
    of the dataset) its files are of; None for a unit of the whole dataset's one model."""

    kind: str
    metric: str | None
    folder: Path
    files: tuple[Path, ...]
    model: str | None = None
    source: str | None = None


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
        pushed = [run for run in runs if run.lm_eval]
        if pushed or (not runs and _holds_samples(repo_id, snapshot)):
            return _pushed_plan(repo_id, snapshot, pushed, include, staging)
        return _eee_plan(repo_id, snapshot, list(include or EEE_PATTERNS), staging)
    chosen, others = latest_runs(board, runs)
    # a push of the v2 leaderboard's tasks and others: the others are read as lm-eval's push is
    own = [task for task in others if board.kind == "lm-eval" and not task.startswith(board.prefix)]
    others = [task for task in others if task not in own]
    if not chosen and own:
        return _pushed_plan(repo_id, snapshot, _runs_of(runs, own), include, staging)
    if not chosen:
        raise InputError(
            f"{repo_id}: its results files name none of the tasks the {board.title} scored"
        )
    patterns = list(include) or [
        p for task, run in chosen.items() for p in board.patterns(task, run.key)
    ]
    # the commit the results came from, also for the second step: the dataset may change between
    snapshot = download(repo_id, revision=snapshot.name, patterns=patterns)
    files = latest_files(snapshot, board, patterns)
    notices = [
        f"{repo_id} ({snapshot.name[:12]}): {board.title}, {len(files)} scored tasks, the "
        "latest run of each"
    ]
    if others:
        notices.append(f"left out, not scored by the leaderboard: {_listed(others)}")
    missing = sorted(set(chosen) - set(files)) if not include else []
    if missing:
        notices.append(
            f"no file in the dataset for {_listed(missing)} (not uploaded; offline, not in the "
            "cache): left out"
        )
    if not files:
        raise InputError(
            f"{repo_id}: no details file of a scored task"
            + (f" matches --include {' '.join(include)}" if include else "")
        )
    model = _model(repo_id, [_run_of(runs, f) for f in files.values()], notices)
    units = _stage_leaderboard(board, files, runs, staging / "leaderboard", notices)
    if own:
        others_plan = _pushed_plan(
            repo_id, snapshot, _runs_of(runs, own), include, staging / "pushed"
        )
        notices += others_plan.notices
        units += others_plan.units
    return HubPlan(repo_id, snapshot.name, model, units, tuple(notices))


def _runs_of(runs: list[Run], tasks: list[str]) -> list[Run]:
    """The lm-eval runs that hold any of ``tasks``, each narrowed to them."""
    wanted = frozenset(tasks)
    return [
        replace(run, tasks=run.tasks & wanted) for run in runs if run.lm_eval and run.tasks & wanted
    ]


def _holds_samples(repo_id: str, snapshot: Path) -> bool:
    """Whether the dataset holds lm-eval samples files (a push without its results files)."""
    return any(
        file_task(LM_EVAL_NAMES, PurePosixPath(path).name) is not None
        for path in listed_files(repo_id, snapshot)
    )


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
        notices.append(
            f"{repo_id}: its results files name {len(models)} models "
            f"({', '.join(models)}); --include PATTERN chooses one's files"
        )
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
    ``patterns``, staged with their paths in the repo; InputError saying what the dataset
    holds where it has none."""
    listing = cached_listing(repo_id, snapshot.name)  # none in it: nothing to fetch
    if listing is None or any(
        path.endswith(SAMPLES_SUFFIX) and allowed(path, patterns) for path in listing
    ):
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
        narrowed = patterns != list(EEE_PATTERNS)
        raise InputError(
            f"{repo_id}: not a layout the hub import reads: it holds {_found(repo_id, snapshot)}; "
            "it reads Open LLM Leaderboard details (results_<timestamp>.json naming harness| or "
            "leaderboard_ tasks), lm-eval's own push of any tasks (<org>__<model>/"
            "results_<timestamp>.json beside samples_<task>_<timestamp>.jsonl: lm_eval "
            "--log_samples --hf_hub_log_args push_samples_to_hub=True) or Every Eval Ever "
            f"instance files (*{SAMPLES_SUFFIX} beside their <uuid>.json"
            f"{', matching --include ' + ' '.join(patterns) if narrowed else ''})"
        )
    notices = (
        f"{repo_id} ({snapshot.name[:12]}): Every Eval Ever instance files, {len(staged)} of them",
    )
    return HubPlan(
        repo_id, snapshot.name, None, (HubUnit("eee", None, folder, tuple(staged)),), notices
    )


# ---------------------------------------------------------------------------------------------
# lm-eval's own push of any tasks


@dataclass(frozen=True)
class _Pushed:
    """A samples file of an lm-eval push: its task and run key, the ``source`` it is of (the
    model its run's results file names, else its folder in the dataset) and that run (None:
    no results file of its run)."""

    task: str
    run: str
    path: Path
    source: str
    run_of: Run | None


def _pushed_plan(
    repo_id: str, snapshot: Path, runs: list[Run], include: tuple[str, ...], staging: Path
) -> HubPlan:
    """lm-eval's push of any tasks: per model (its folder), each task's file of its latest run
    (by the runs' ``configs``, which name every task with samples), staged with its run's
    results file beside it (where the reader finds the run's filters); a unit per model. No
    ``runs``: a push without results files, whose every samples file is read (each folder's
    model then named by --model)."""
    latest: dict[tuple[str, str], Run] = {}
    rerun: set[str] = set()  # tasks of which an earlier run is left out
    for run in runs:  # oldest first: a later run replaces an earlier one
        for task in run.tasks:
            key = (_source(snapshot, run.results, run), task)
            if key in latest and latest[key].key != run.key:
                rerun.add(task)
            latest[key] = run
    if include:
        patterns = list(include)
    elif runs:
        patterns = sorted(
            {
                pattern
                for (_, task), run in latest.items()
                for pattern in file_patterns(LM_EVAL_NAMES, task, run.key)
            }
        )
    else:  # no results files: every samples file
        patterns = list(SAMPLES_PATTERNS)
    snapshot = download(repo_id, revision=snapshot.name, patterns=patterns)
    tasks = frozenset(task for run in runs for task in run.tasks) if runs else None
    files, older = _pushed_files(snapshot, runs, patterns, tasks)
    older |= rerun if not include else set()
    if not files:
        raise InputError(
            f"{repo_id}: lm-eval results files but no samples file of their tasks"
            + (
                f" matches --include {' '.join(include)}"
                if include
                else " (pushed without push_samples_to_hub=True; offline, not in the cache)"
            )
        )
    by_source: dict[str, list[_Pushed]] = {}
    for (source, _), file in sorted(files.items()):
        by_source.setdefault(source, []).append(file)
    notices = [
        f"{repo_id} ({snapshot.name[:12]}): lm-eval's own push, {len(files)} samples "
        f"files of {len(by_source)} model(s), each task's latest run"
    ]
    if not runs:
        notices.append(
            "no results file in the dataset (pushed without them): the samples are "
            "read without their runs' filters and models"
        )
    if older:
        notices.append(f"left out, earlier runs of: {_listed(sorted(older))}")
    several = len(by_source) > 1
    missing = (
        sorted(
            f"{task} ({source})" if several else task for source, task in set(latest) - set(files)
        )
        if not include
        else []
    )
    if missing:
        notices.append(
            f"no file in the dataset for {_listed(missing)} (not uploaded; offline, not in the "
            "cache): left out"
        )
    units = []
    for number, (source, group) in enumerate(sorted(by_source.items())):
        units.append(_stage_pushed(staging / f"{number}-lm-eval", source, group, several, notices))
    model = units[0].model if len(units) == 1 else None
    return HubPlan(repo_id, snapshot.name, model, tuple(units), tuple(notices))


def _source(snapshot: Path, path: Path, run: Run | None) -> str:
    """The model a file of the push is of: the one its run's results file names, else the folder
    it is in (relative to the dataset, "." at its root)."""
    if run is not None and run.model:
        return run.model
    return path.parent.relative_to(snapshot).as_posix()


def _run_beside(runs: list[Run], path: Path, key: str) -> Run | None:
    """The run that wrote samples file ``path``: its results file in the same folder, else the
    one run of that time in the dataset (pushing results also writes ``<org>/<model>/``)."""
    beside = [run for run in runs if run.key == key and run.results.parent == path.parent]
    if beside:
        return beside[-1]
    same = [run for run in runs if run.key == key]
    return same[-1] if len({run.model for run in same}) == 1 else None


def _pushed_files(
    snapshot: Path, runs: list[Run], patterns: list[str], tasks: frozenset[str] | None
) -> tuple[dict[tuple[str, str], _Pushed], set[str]]:
    """({(source, task): its file of its latest run} among the samples files ``patterns``
    allow, of ``tasks`` (None: any), the tasks of which older runs' files were passed over).
    Two files of one model's task and run (in two folders) are refused."""
    found: dict[tuple[str, str], _Pushed] = {}
    older: set[str] = set()
    for path in sorted(snapshot.rglob("*")):
        named = file_task(LM_EVAL_NAMES, path.name)
        if named is None or not path.is_file():
            continue
        relative = path.relative_to(snapshot).as_posix()
        if not allowed(relative, patterns):
            continue
        task, key = named
        if tasks is not None and task not in tasks:
            continue  # a leaderboard task, read by the leaderboard's plan
        run = _run_beside(runs, path, key)
        source = _source(snapshot, path, run)
        before = found.get((source, task))
        if before is not None and before.run == key:
            raise InputError(
                f"task {task!r} of run {key} has two files ({before.path.relative_to(snapshot)} "
                f"and {relative}): import one with --include PATTERN"
            )
        if before is not None:
            older.add(task)
        if before is None or key > before.run:
            found[(source, task)] = _Pushed(task, key, path, source, run)
    return found, older


def _stage_pushed(
    folder: Path, source: str, group: list[_Pushed], several: bool, notices: list[str]
) -> HubUnit:
    """One model's files in ``folder``, each run's results file beside its samples; its model
    (and revision) told."""
    staged = []
    for file in group:
        name = LM_EVAL_NAMES[0].replace("{task}", file.task).replace("{run}", file.run)
        staged.append(_link(file.path, folder / name))
        beside = folder / f"results_{file.run}.json"
        if file.run_of is not None and not beside.exists():
            _link(file.run_of.results, beside)
    runs = [file.run_of for file in group if file.run_of is not None]
    model = next((run.model for run in runs if run.model), None)
    if model is None:
        where = f" (with --include '{source}/*')" if several else ""
        notices.append(
            f"{source}/: no results file names the model of its samples: pass --model NAME{where}"
        )
    else:
        revisions = sorted({run.revision for run in runs if run.revision})
        said = f" at revision {', '.join(revisions)}" if revisions else ""
        notices.append(f"model {model}{said} (from the dataset's results files)")
    return HubUnit("lm-eval", None, folder, tuple(staged), model=model, source=source)


def _found(repo_id: str, snapshot: Path, most: int = 6) -> str:
    """What a dataset holds, in a few words: how many files of which kinds (their suffixes), and
    the entries at its top level (a folder with its count of files)."""
    paths = listed_files(repo_id, snapshot)
    if not paths:
        return "no files"
    kinds = Counter(PurePosixPath(path).suffix or PurePosixPath(path).name for path in paths)
    shown = ", ".join(f"{count} {kind}" for kind, count in kinds.most_common(most))
    if len(kinds) > most:
        shown += f" and {len(kinds) - most} more kinds"
    top = Counter(path.split("/", 1)[0] + ("/" if "/" in path else "") for path in paths)
    entries = [
        f"{name} ({_files(count)})" if name.endswith("/") else name
        for name, count in sorted(top.items())
    ]
    return f"{_files(len(paths))} ({shown}), at its top level {_listed(entries, most)}"


def _files(count: int) -> str:
    return f"{count} file{'' if count == 1 else 's'}"
