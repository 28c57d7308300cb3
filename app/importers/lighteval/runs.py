"""Where a lighteval import's files are: the runs of a details tree and the seed of each.

lighteval writes ``OUT/details/<org>/<model>/<ts>/details_<task>_<ts>.parquet`` and
``OUT/results/<org>/<model>/results_<ts>.json``. ``find_runs`` groups the details files of a file,
a run folder, a model's folder or an output folder by run, and names each run's model from its
place in the tree (``<org>/<model>``); ``plan_files`` gives each (model, task, seed) one file, the
seed read from the run's results file (or given), refusing a run without one and two runs of one
model's task with one seed unless the latest is asked for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from forgetmap.core.errors import InputError
from forgetmap.importers.common import files_at

_DATE_ID = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
_DETAILS_NAME = re.compile(rf"^details_(?P<task>.+)_(?P<date>{_DATE_ID})\.parquet$")
_EXPECTED = (
    "details_<task>_<timestamp>.parquet "
    "(written by lighteval --save-details under OUTPUT_DIR/details/MODEL/TIMESTAMP/)"
)


def task_from_filename(name: str) -> str | None:
    """The raw task string of a ``details_<task>_<timestamp>.parquet`` name; None if not one."""
    match = _DETAILS_NAME.match(name)
    if match:
        return match.group("task")
    if name.startswith("details_") and name.endswith(".parquet"):
        task = name[len("details_") : name.rfind("_")]
        return task or None
    return None


def find_details_files(path: Path) -> list[Path]:
    """The details files at ``path``: the file itself, or ``details_*.parquet`` below a folder."""
    return files_at(
        path,
        pattern="details_*.parquet",
        kind="lighteval details files",
        one="a lighteval details file name",
        expected=_EXPECTED,
        is_one=lambda file: task_from_filename(file.name) is not None,
    )


# ---------------------------------------------------------------------------------------------
# a tree of runs: which files, which seed


@dataclass(frozen=True)
class DetailsRun:
    """One lighteval run: its details files (by task), the results file that holds its seed, and
    the model it evaluated as the tree names it (``<org>/<model>``; None outside ``details/``)."""

    timestamp: str
    folder: Path
    files: dict[str, Path]
    results: Path | None
    seed: int | None
    model: str | None


def _place_in_output(folder: Path) -> tuple[Path, tuple[str, ...]] | None:
    """(OUT, the folders between ``details`` and the run's: ``(<org>, <model>)``) of a run folder
    ``OUT/details/<org>/<model>/<ts>/`` (the last ``details`` on its path), or None when the run
    lies in no ``details`` folder."""
    parts = folder.resolve().parts
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] == "details":
            return Path(*parts[:i]), parts[i + 1 : -1]
    return None


def _model_of(folder: Path) -> str | None:
    """``<org>/<model>`` of a run folder (``_place_in_output``), or None outside ``details``."""
    place = _place_in_output(folder)
    if place is None or not place[1]:
        return None
    return "/".join(place[1])


def _timestamp_of(name: str) -> str | None:
    match = _DETAILS_NAME.match(name)
    return match.group("date") if match else None


def _seed_in(results: Path) -> int | None:
    """The run's seed from ``results_<ts>.json``: the general config's generation parameters.

    lighteval 0.10 keeps them at ``config_general.generation_parameters``; later versions nest them
    under ``config_general.model_config``. A seed that is not an integer is an error.
    """
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{results}: not a readable lighteval results file ({exc})") from None
    general = data.get("config_general") if isinstance(data, dict) else None
    if not isinstance(general, dict):
        return None
    for holder in (general, general.get("model_config")):
        params = holder.get("generation_parameters") if isinstance(holder, dict) else None
        if isinstance(params, dict) and params.get("seed") is not None:
            seed = params["seed"]
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise InputError(f"{results}: the run's seed {seed!r} is not an integer")
            return seed
    return None


def _results_candidates(folder: Path, timestamp: str, root: Path) -> list[Path]:
    """Where lighteval puts a run's results file, given the run's details folder.

    ``OUT/details/<org>/<model>/<ts>/`` -> ``OUT/results/<org>/<model>/results_<ts>.json``; also
    the run folder itself and anything below the imported path.
    """
    name = f"results_{timestamp}.json"
    out = [folder / name, folder.parent / name]
    place = _place_in_output(folder)
    if place is not None:
        root, model = place
        out.append(root.joinpath("results", *model, name))
    if root.is_dir():
        out.extend(root.rglob(name))
    return out


def find_runs(path: Path) -> list[DetailsRun]:
    """The runs under ``path`` (a details file, a run folder, a model's folder, an output
    folder)."""
    files = find_details_files(Path(path))
    root = Path(path) if Path(path).is_dir() else Path(path).parent
    by_run: dict[tuple[Path, str], dict[str, Path]] = {}
    for file in files:
        task = task_from_filename(file.name)
        if task is None:
            raise InputError(
                f"{file}: cannot read the task from the file name; expected {_EXPECTED}"
            )
        timestamp = _timestamp_of(file.name) or file.parent.name
        run = by_run.setdefault((file.parent, timestamp), {})
        if task in run:
            raise InputError(f"{file.parent}: task {task!r} has two details files in one run")
        run[task] = file
    runs = []
    for (folder, timestamp), tasks in sorted(by_run.items(), key=lambda kv: kv[0][1]):
        results = next(
            (p for p in _results_candidates(folder, timestamp, root) if p.is_file()), None
        )
        seed = _seed_in(results) if results is not None else None
        runs.append(DetailsRun(timestamp, folder, tasks, results, seed, _model_of(folder)))
    return runs


def plan_files(
    runs: list[DetailsRun],
    *,
    seed: int | None,
    latest: bool,
    notice: Callable[[str], None] | None = None,
) -> list[tuple[str | None, str, int, Path]]:
    """(model, task, seed, file) to import: each run's seed (or ``seed`` for all), one file per
    (model, task, seed).

    A run without a seed (lighteval's greedy runs write ``"seed": null``; a details folder may
    come without its results file) is imported as seed 0, and ``notice`` is told so in one line;
    several runs without a seed holding one model's task are an error naming them. Two runs of
    one model's task with one seed are an error naming both, unless ``latest`` (the later
    timestamp wins).
    """
    unseeded: dict[tuple[str | None, str], list[DetailsRun]] = {}
    if seed is None:
        for run in runs:
            if run.seed is None:
                for task in run.files:
                    unseeded.setdefault((run.model, task), []).append(run)
    chosen: dict[tuple[str | None, str, int], tuple[DetailsRun, Path]] = {}
    for run in runs:
        run_seed = seed if seed is not None else run.seed
        if run_seed is None:
            _refuse_unseeded_twins(run, unseeded, latest)
            run_seed = UNSEEDED
            if notice is not None:
                notice(
                    f"run {run.timestamp} ({run.folder}): no seed ({_why_unseeded(run)}); "
                    f"imported as seed {UNSEEDED} (--seed N sets another)"
                )
        for task, file in run.files.items():
            key = (run.model, task, run_seed)
            if key in chosen:
                other_run, other_file = chosen[key]
                if not latest:
                    raise InputError(
                        f"task {task!r} seed {run_seed} comes from two runs ({other_file} and "
                        f"{file}); pass --latest to keep the later run, or import one of them"
                    )
                # runs are in timestamp order: the later one replaces the earlier
            chosen[key] = (run, file)
    return [(m, task, s, file) for (m, task, s), (_, file) in chosen.items()]


UNSEEDED = 0
"""The seed of a run that names none (a greedy run: every seed alike)."""


def _why_unseeded(run: DetailsRun) -> str:
    if run.results is None:
        return (
            f"no results_{run.timestamp}.json was found (lighteval writes it to "
            "OUT/results/<org>/<model>/)"
        )
    return f"{run.results.name} has no seed in config_general's generation_parameters"


def _refuse_unseeded_twins(
    run: DetailsRun, unseeded: dict[tuple[str | None, str], list[DetailsRun]], latest: bool
) -> None:
    """Several runs without a seed holding one task cannot all be seed 0: an error naming them
    (``latest`` keeps the later one instead)."""
    if latest:
        return
    for task in run.files:
        twins = unseeded.get((run.model, task), [])
        if len(twins) > 1:
            named = ", ".join(f"{r.timestamp} ({r.folder})" for r in twins)
            raise InputError(
                f"task {task!r} has {len(twins)} runs without a seed: {named}; import each "
                "run's folder with its own --seed N (e.g. --seed 0, then --seed 1), or pass "
                "--latest to keep the later run"
            )


def model_names(path: Path, runs: list[DetailsRun], model: str | None) -> dict[str | None, str]:
    """The name each run's model (as the tree names it) is stored under: ``model`` when given
    (the tree then must hold one model's runs), else the tree's own ``<org>/<model>``."""
    in_tree = sorted({run.model for run in runs}, key=lambda m: (m is None, m or ""))
    if model is not None:
        if len(in_tree) > 1:
            named = ", ".join(m or "(outside details/)" for m in in_tree)
            raise InputError(
                f"{path}: holds the runs of {len(in_tree)} models ({named}); import each model's "
                "folder (OUT/details/<org>/<model>) with its own --model, or leave --model out "
                "to store each under the name lighteval gave it"
            )
        return {m: model for m in in_tree}
    unnamed = next((run for run in runs if run.model is None), None)
    if unnamed is not None:
        raise InputError(
            f"{unnamed.folder}: cannot tell which model run {unnamed.timestamp} evaluated "
            "(lighteval writes OUT/details/<org>/<model>/<timestamp>/); pass --model NAME"
        )
    return {m: cast(str, m) for m in in_tree}  # every run named (checked above)
