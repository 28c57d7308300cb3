"""`forgetmap suite fetch|check`: the paper's benchmarks on this machine."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click
from forgetmap.cli.common import (
    CliError,
    Console,
    Table,
)
from forgetmap.core.errors import InputError


def _names(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _suite_selection(benchmarks: str | None, categories: str | None, paper: bool) -> list[str]:
    from forgetmap.services.suite import select_benchmarks

    try:
        return select_benchmarks(_names(benchmarks), _names(categories), paper)
    except InputError as exc:
        raise CliError(str(exc)) from exc


def _suite_progress(what: str):
    """A progress context (bar on a terminal, plain lines in logs) over benchmarks."""
    from forgetmap.runtime.progress import progress_reporter

    # one bar per benchmark here; datasets' own bars (read when it is imported) would interleave
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    return progress_reporter(what)


_SELECTION = [
    click.option("--benchmarks", help="Comma-separated benchmark names (mmlu:anatomy,piqa)."),
    click.option("--categories", help="Comma-separated categories (Logic,Culture)."),
    click.option("--paper", is_flag=True, help="The paper's 94 scored benchmarks (the default)."),
]


def _selection_options(command):
    for option in reversed(_SELECTION):
        command = option(command)
    return command


@click.group()
def suite() -> None:
    """The paper's benchmarks on this machine: local copies (fetch) and a load check (check)."""


@suite.command("fetch")
@_selection_options
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for <name>.jsonl copies and manifest.json.",
)
@click.option(
    "--hub-dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Read the hub's Parquet exports from this folder (<owner>/<name>/<config>/"
    "<split>/*.parquet) instead of the hub.",
)
@click.option("--force", is_flag=True, help="Rewrite copies that are current.")
def suite_fetch(
    benchmarks: str | None,
    categories: str | None,
    paper: bool,
    out: Path,
    hub_dir: Path | None,
    force: bool,
) -> None:
    """Write local copies of benchmarks (run it where the hub is reachable; copy OUT to workers)."""
    from forgetmap.services.suite import fetch_suite

    names = _suite_selection(benchmarks, categories, paper)
    try:
        with _suite_progress("fetching") as progress:
            results = fetch_suite(names, out, hub_dir=hub_dir, force=force, progress=progress)
    except InputError as exc:
        raise CliError(str(exc)) from exc
    counts = {s: sum(r.status == s for r in results) for s in ("fetched", "current", "failed")}
    for r in results:
        if r.status == "failed":
            click.echo(f"failed {r.name}: {r.error}", err=True)
    click.echo(
        f"{counts['fetched']} fetched, {counts['current']} already current, "
        f"{counts['failed']} failed; copies in {out}"
    )
    if counts["failed"]:
        raise SystemExit(1)


@suite.command("check")
@_selection_options
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def suite_check(benchmarks: str | None, categories: str | None, paper: bool, fmt: str) -> None:
    """Load every benchmark as a worker here would (copies in FORGETMAP_BENCHMARK_DIRS first, else
    the hub); exit 0 only when all load."""
    from dataclasses import asdict

    from forgetmap.services.suite import check_suite
    from forgetmap.worker.settings import WorkerSettings

    names = _suite_selection(benchmarks, categories, paper)
    with _suite_progress("loading") as progress:
        records = check_suite(names, WorkerSettings.from_env().benchmark_dirs, progress=progress)
    if fmt == "json":
        click.echo(json.dumps([asdict(r) for r in records], indent=2))
    else:
        table = Table(box=None)
        for col in ("benchmark", "source", "n", "k", "gold", "problems"):
            table.add_column(col, overflow="fold")
        for r in records:
            hist = lambda h: " ".join(f"{k}:{v}" for k, v in h.items())  # noqa: E731
            problems = r.error if r.error else "; ".join(r.problems)
            table.add_row(
                r.name, r.source, str(r.n), hist(r.k_histogram), hist(r.gold_histogram), problems
            )
        Console(width=200).print(table)
    failed = [r.name for r in records if not r.ok]
    if failed:
        click.echo(
            f"{len(failed)} of {len(records)} benchmarks do not load: {', '.join(failed)}", err=True
        )
        raise SystemExit(1)
