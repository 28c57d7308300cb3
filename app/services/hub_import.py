"""`forgetmap import hub`: a fetched dataset's units (``forgetmap.importers.hub``) imported into the
store, or sent to the app that owns it, and told as one import.

The command fetches on the machine it runs on, with the user's Hugging Face token and cache,
whether the database is opened here or owned by an app (the app may run on another machine, or
as another user, with neither): the readers then run here in one transaction per unit
(``import_hub``), or each staged file is uploaded to the app (``POST /api/imports``) and
imported there as a job (``upload_hub``). A unit is one reader with one metric, so a dataset is
a few transactions; an import stores nothing twice, so a run cut short is finished by running
it again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from forgetmap.contract.imports import ImportOptions, import_options, summary_of
from forgetmap.core.errors import InputError
from forgetmap.db.store import Store
from forgetmap.importers import import_file
from forgetmap.importers.hub import HubPlan, HubUnit
from forgetmap.importers.hub.leaderboards import LM_EVAL_NAMES, file_task
from forgetmap.services.import_upload import ImportFailed, upload_import

Progress = Callable[[str, int, int], None]


def unit_options(plan: HubPlan, unit: HubUnit, model: str | None) -> ImportOptions:
    """The options of a unit's import: the model (``model``, else the results files': the
    unit's own in an lm-eval push of several models), the metric the leaderboard scored its
    tasks by (None: the reader's own), seed 0 (the leaderboards ran each model once)."""
    model = model or unit.model or plan.model
    if unit.kind == "eee":
        return import_options("eee", model=model)
    if model is None:
        raise InputError(f"{plan.repo_id}: its results files name no one model: pass --model NAME")
    return import_options(unit.kind, model=model, metric=unit.metric, seed=0)


def merged(summaries: list[dict]) -> dict:
    """Several imports' summaries (``summary_of``'s) as one: rows and unpaired samples added up,
    models, benchmarks and category changes in the order they came."""
    out: dict[str, Any]
    out = {
        "rows_added": 0,
        "rows_unchanged": 0,
        "models": [],
        "benchmarks": [],
        "unpaired": {},
        "category_changes": [],
    }
    for summary in summaries:
        out["category_changes"] += summary.get("category_changes", [])
        out["rows_added"] += summary["rows_added"]
        out["rows_unchanged"] += summary["rows_unchanged"]
        for key in ("models", "benchmarks"):
            out[key] += [name for name in summary[key] if name not in out[key]]
        for pair, counts in summary["unpaired"].items():
            total = out["unpaired"].setdefault(pair, dict.fromkeys(counts, 0))
            for name, count in counts.items():
                total[name] = total.get(name, 0) + count
    return out


def _failed(exc: InputError, done: int, total: int, what: str = "parts") -> InputError:
    """A part's (or an uploaded file's) failure, told with what those before it stored."""
    if done == 0:
        return InputError(f"{exc} (nothing was imported)")
    return InputError(
        f"{exc} ({done} of {total} {what} were imported before it: run the import again once "
        "this is solved, it stores nothing twice)"
    )


def _all_options(plan: HubPlan, model: str | None) -> list[ImportOptions]:
    """Every unit's options, all checked before anything is imported or sent. One ``model``
    names one model's files: a dataset of several models' is refused with it."""
    sources = sorted({unit.source for unit in plan.units if unit.source is not None})
    try:
        if model is not None and len(sources) > 1:
            raise InputError(
                f"{plan.repo_id}: its files are {len(sources)} models' ({', '.join(sources)}) "
                "and --model names one: choose its files with --include 'FOLDER/*'"
            )
        return [unit_options(plan, unit, model) for unit in plan.units]
    except InputError as exc:
        raise _failed(exc, 0, len(plan.units)) from exc


def import_hub(
    store: Store,
    plan: HubPlan,
    *,
    model: str | None = None,
    progress: Progress | None = None,
    notice: Callable[[str], None] | None = None,
) -> dict:
    """Import every unit of ``plan`` into ``store``, one transaction each; the merged summary.
    InputError when one fails (the parts before it stay imported; the message says so)."""
    options = _all_options(plan, model)
    summaries: list[dict] = []
    for unit, checked in zip(plan.units, options, strict=True):
        try:
            imported = import_file(
                store,
                unit.kind,
                unit.folder,
                progress=progress,
                notice=notice,
                **checked.importer_kwargs(),
            )
        except InputError as exc:
            raise _failed(exc, len(summaries), len(plan.units)) from exc
        summaries.append(summary_of(imported))
    return merged(summaries)


def _results_beside(unit: HubUnit, path: Path) -> list[Path]:
    """The results file of the run that wrote lm-eval samples file ``path``, where the unit
    staged it: sent with the samples, since lines of lm-eval 0.4.3-0.4.6 do not name their
    filter and the reader reads a multi-filter task's filters from their run's results."""
    named = file_task(LM_EVAL_NAMES, path.name) if unit.kind == "lm-eval" else None
    results = unit.folder / f"results_{named[1]}.json" if named else None
    return [results] if results is not None and results.is_file() else []


def upload_hub(
    url: str,
    credential: str,
    plan: HubPlan,
    *,
    model: str | None = None,
    progress: Progress | None = None,
    notice: Callable[[str], None] | None = None,
) -> dict:
    """Send every staged file of ``plan`` to the app at ``url`` (``POST /api/imports``, one job
    each, followed to its end); the merged summary. InputError with the app's line when one is
    refused (the files sent before it stay imported; the message says so)."""
    options = _all_options(plan, model)
    files = [
        (path, unit, checked)
        for unit, checked in zip(plan.units, options, strict=True)
        for path in unit.files
    ]
    summaries: list[dict] = []
    for path, unit, checked in files:
        try:
            job = upload_import(
                url,
                credential,
                path,
                checked,
                beside=_results_beside(unit, path),
                on_progress=progress,
            )
        except ImportFailed as exc:  # its line says this file's import stored nothing
            if not summaries:
                raise
            raise _failed(exc, len(summaries), len(files), "files") from exc
        for line in job["request"].get("notices", []):
            if notice is not None:
                notice(line)
        summaries.append(job["request"]["result"])
    return merged(summaries)
