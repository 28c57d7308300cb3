"""`forgetmap import table|lm-eval|lighteval|inspect|eee`: per-sample results into the store."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import TYPE_CHECKING

import click
from forgetmap.cli.common import (
    ClientPath,
    CliError,
    store_of,
    unblock_imports,
)
from forgetmap.cli.through_app import REMOTE_APP, AppConnection
from forgetmap.core.errors import InputError

if TYPE_CHECKING:
    from forgetmap.contract.imports import ImportOptions


@click.group("import")
def import_group() -> None:
    """Import per-sample results (one transaction per file: all or nothing)."""


def print_notice(message: str) -> None:
    """What a reader says of its files (a filter or scorer it chose, what a file lacks): on
    stderr, so that the output stays the import's summary."""
    click.echo(message, err=True)


def _run_import(
    ctx: click.Context, kind: str, path: Path, *, on_filter=None, notice=None, **options
) -> None:
    from forgetmap.contract.imports import import_options, summary_lines, summary_of
    from forgetmap.importers import import_file
    from forgetmap.runtime.progress import progress_reporter

    if ctx.obj.get("quick_exit"):
        # a command's own process: the modules just loaded live to its end, so the collector
        # need not walk them again and again while Arrow's wrappers churn (an import 0.17 CPU-s
        # and 0.02 s less, medians of 10 alternating runs)
        gc.freeze()
    try:
        checked = import_options(kind, **options)  # the same checks as the upload route's
    except InputError as exc:
        raise CliError(f"{exc} (nothing was imported)") from exc
    remote = ctx.obj.get(REMOTE_APP)
    if remote is not None:
        if not path.exists():  # said in the reader's own words, as on the file
            _refuse_missing(kind, path, checked)
        upload_to_app(remote, path, checked)
        return
    store = store_of(ctx)
    try:
        with progress_reporter(f"importing {path.name}") as progress:
            summary = import_file(
                store,
                kind,
                path,
                progress=progress,
                on_filter=on_filter,
                notice=notice,
                **checked.importer_kwargs(),
            )
    except InputError as exc:
        raise CliError(f"{exc} (nothing was imported)") from exc
    finally:
        store.close()
    for line in summary_lines(summary_of(summary)):
        click.echo(line)


def _refuse_missing(kind: str, path: Path, options: ImportOptions) -> None:
    """The one-line error the import on the file gives for a path that is not there: the
    reader's, which it raises before it reads anything."""
    from forgetmap.importers import iter_source

    try:
        next(iter(iter_source(kind, path, **options.importer_kwargs())))
    except InputError as exc:
        raise CliError(f"{exc} (nothing was imported)") from exc


def upload_to_app(app: AppConnection, path: Path, options: ImportOptions) -> None:
    """The import into a remote app: ``path`` uploaded (``POST /api/imports``) and its job
    followed to its end, reported as the import on the file tells it: progress on stderr as it
    goes, then the readers' notices, then the summary on stdout; a failure is the one line the
    app gives (``ImportFailed``: nothing was imported)."""
    import httpx
    from forgetmap.runtime.progress import progress_reporter
    from forgetmap.services.import_upload import ImportFailed, upload_import

    try:
        with progress_reporter(f"importing {path.name}") as progress:
            job = upload_import(app.url, app.credential, path, options, on_progress=progress)
    except ImportFailed as exc:
        raise CliError(str(exc)) from exc
    except httpx.TransportError as exc:
        raise CliError(f"cannot reach the app at {app.url}: {exc}") from None
    for notice in job["request"].get("notices", []):
        click.echo(notice, err=True)
    for line in job["request"]["lines"]:
        click.echo(line)


@import_group.command("table")
@click.argument("file", type=ClientPath(path_type=Path))
@click.option("--model", help="Model name for rows without a model column.")
@click.pass_context
def import_table(ctx: click.Context, file: Path, model: str | None) -> None:
    """CSV, JSONL or Parquet with columns model, benchmark, sample_id, correct [, seed, ...]."""
    _run_import(ctx, "table", file, model=model)


@import_group.command("lm-eval")
@click.argument("path", type=ClientPath(path_type=Path))
@click.option("--model", required=True, help="Name of the evaluated model.")
@click.option(
    "--metric",
    help="Per-sample metric meaning 'correct' (default: acc, exact_match or extractive_match).",
)
@click.option(
    "--filter",
    "filter_name",
    multiple=True,
    help="Filter for tasks scored with several: NAME (every task that has it) or TASK=NAME; "
    "repeatable. Default: flexible-extract, get-answer, strict-match, none (first present).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.pass_context
def import_lm_eval(
    ctx: click.Context,
    path: Path,
    model: str,
    metric: str | None,
    filter_name: tuple[str, ...],
    seed: int,
) -> None:
    """lm-evaluation-harness samples_*.jsonl (a file or a directory of them); lm-eval
    0.4.0-0.4.2's <model_args>_<task>.jsonl files beside their results.json."""

    from forgetmap.contract.imports import filter_notice

    def print_filter_choice(task: str, taken: str, filters: list[str], why: str) -> None:
        print_notice(filter_notice(task, taken, filters, why))

    _run_import(
        ctx,
        "lm-eval",
        path,
        model=model,
        metric=metric,
        filters=filter_name,
        seed=seed,
        on_filter=print_filter_choice,
    )


@import_group.command("lighteval")
@click.argument("path", type=ClientPath(path_type=Path))
@click.option(
    "--model",
    help="Name of the evaluated model (default: each model's own, <org>/<model>, from the "
    "output tree: an output folder of several models imports them all).",
)
@click.option(
    "--metric",
    help="Per-sample metric meaning 'correct' (default: acc, exact_match or extractive_match).",
)
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of every run imported (default: each run's seed from its results_<ts>.json).",
)
@click.option(
    "--latest",
    is_flag=True,
    help="When two runs hold one task with the same seed, keep the later run.",
)
@click.pass_context
def import_lighteval(
    ctx: click.Context,
    path: Path,
    model: str | None,
    metric: str | None,
    seed: int | None,
    latest: bool,
) -> None:
    """lighteval details parquet (v0.10 flat or v0.11+ nested): a file, a run folder, a model's
    details folder with many runs, or a whole lighteval output folder."""

    _run_import(
        ctx,
        "lighteval",
        path,
        model=model,
        metric=metric,
        seed=seed,
        latest=latest,
        notice=print_notice,
    )


@import_group.command("inspect")
@click.argument("path", type=ClientPath(path_type=Path))
@click.option(
    "--model",
    help="Name of the evaluated model (default: each log's own, eval.model, e.g. openai/gpt-4o).",
)
@click.option(
    "--scorer",
    help="Scorer whose value means 'correct', for logs scored by several: NAME, or NAME:KEY for "
    "a scorer with several values per sample (default: the log's only scorer).",
)
@click.pass_context
def import_inspect(ctx: click.Context, path: Path, model: str | None, scorer: str | None) -> None:
    """inspect_ai eval logs: a .eval or .json log, or a folder of them; each epoch is a seed
    (epoch 1 is seed 0)."""

    unblock_imports()  # inspect_ai needs dateutil, which a lean import keeps out
    _run_import(ctx, "inspect", path, model=model, scorer=scorer, notice=print_notice)


@import_group.command("eee")
@click.argument("path", type=ClientPath(path_type=Path))
@click.option("--model", help="Store every line under this name (default: each line's model_id).")
@click.option(
    "--evaluation-result-id",
    "evaluation_result_id",
    help="For files with one line per sample and metric: import the lines of this "
    "evaluation_result_id (of every evaluation that has several).",
)
@click.pass_context
def import_eee(
    ctx: click.Context, path: Path, model: str | None, evaluation_result_id: str | None
) -> None:
    """Every Eval Ever instance files: <uuid>_samples.jsonl (its aggregate <uuid>.json beside it
    is checked when present), the aggregate itself, or a folder of them."""

    _run_import(
        ctx,
        "eee",
        path,
        model=model,
        evaluation_result_id=evaluation_result_id,
        notice=print_notice,
    )


@import_group.command("hub")
@click.argument("repo_id")
@click.option("--revision", help="The dataset's branch, tag or commit (default: main).")
@click.option(
    "--include",
    multiple=True,
    metavar="PATTERN",
    help="Fetch and import only the dataset's files whose path matches this glob (repeatable; "
    "e.g. '*hendrycksTest*'). Default: each scored task's file of its latest run; for Every "
    "Eval Ever files, all of them.",
)
@click.option(
    "--model",
    help="Store the rows under this name (default: the model the dataset's results files name; "
    "for Every Eval Ever files, each line's own). A push of several models needs --include "
    "'FOLDER/*' with it.",
)
@click.pass_context
def import_hub(
    ctx: click.Context,
    repo_id: str,
    revision: str | None,
    include: tuple[str, ...],
    model: str | None,
) -> None:
    """A details dataset on the Hugging Face hub, fetched on this machine (huggingface_hub, with
    its HF_TOKEN, HF_ENDPOINT, cache and HF_HUB_OFFLINE): an Open LLM Leaderboard's
    (open-llm-leaderboard-old/details_ORG__MODEL, open-llm-leaderboard/ORG__MODEL-details),
    lm-eval's own push of any task (--hf_hub_log_args push_samples_to_hub=True), or Every Eval
    Ever instance files. Through a running app, the files are uploaded to it."""
    import tempfile

    import httpx
    from forgetmap.contract.imports import summary_lines
    from forgetmap.importers.hub import fetch_plan
    from forgetmap.runtime.progress import progress_reporter
    from forgetmap.services import hub_import

    remote_app = ctx.obj.get(REMOTE_APP)
    with tempfile.TemporaryDirectory(prefix="forgetmap-hub-") as staging:
        try:
            plan = fetch_plan(repo_id, revision=revision, include=include, staging=Path(staging))
        except InputError as exc:
            raise CliError(f"{exc} (nothing was imported)") from exc
        for line in plan.notices:
            print_notice(line)
        store = store_of(ctx) if remote_app is None else None
        try:
            with progress_reporter(f"importing {repo_id}") as progress:
                if store is not None:
                    summary = hub_import.import_hub(
                        store, plan, model=model, progress=progress, notice=print_notice
                    )
                else:
                    summary = hub_import.upload_hub(
                        remote_app.url,
                        remote_app.credential,
                        plan,
                        model=model,
                        progress=progress,
                        notice=print_notice,
                    )
        except InputError as exc:
            raise CliError(str(exc)) from exc
        except httpx.TransportError as exc:
            raise CliError(f"cannot reach the app at {remote_app.url}: {exc}") from None
        finally:
            if store is not None:
                store.close()
    for line in summary_lines(summary):
        click.echo(line)
