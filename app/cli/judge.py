"""``forgetmap judge``: a local judge model reads a pair's unread answers (the rows whose answer
had no option the harness could find), through a running app's API (``POST /api/jobs`` with
``"kind": "judge"``); its readings become the score set ``judge:<model>``, which ``forgetmap map
--scores`` draws the map with. ``judge show`` prints a pair's judge runs with their audit."""

from __future__ import annotations

import json

import click
from forgetmap.cli.jobs import APP_OPTION, TOKEN_OPTION, call_app, model_value


@click.group()
def judge() -> None:
    """A judge model reads a pair's unread answers (through a running app)."""


@judge.command("submit")
@click.option("--base", required=True, metavar="NAME", help="The pair's base model (stored).")
@click.option("--post", required=True, metavar="NAME", help="The pair's post model (stored).")
@click.option("--judge", "judge_model", required=True, metavar="NAME=PATH", help="The judge.")
@click.option(
    "--benchmark",
    "benchmarks",
    multiple=True,
    help="A stored benchmark to judge (repeatable; default: every multiple-choice one).",
)
@click.option("--max-rows", type=int, default=5000, show_default=True)
@click.option(
    "--audit",
    type=int,
    default=200,
    show_default=True,
    help="Rows the harness read an option from, for the judge's agreement with it.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--score-set", help="The score set's name (default: judge:<judge's name>).")
@click.option(
    "--engine", type=click.Choice(["vllm", "transformers"]), default="vllm", show_default=True
)
@click.option("--dry-run", is_flag=True, help="Print the request's body, send nothing.")
@APP_OPTION
@TOKEN_OPTION
def judge_submit(
    app_url: str,
    token: str | None,
    base: str,
    post: str,
    judge_model: str,
    benchmarks: tuple[str, ...],
    max_rows: int,
    audit: int,
    seed: int,
    score_set: str | None,
    engine: str,
    dry_run: bool,
) -> None:
    """Judge a stored pair's unread answers, both models alike (POST /api/jobs, kind judge);
    prints the job's id as JSON."""
    options: dict = {"max_rows": max_rows, "audit": audit, "seed": seed, "engine": engine}
    if benchmarks:
        options["benchmarks"] = list(benchmarks)
    if score_set:
        options["score_set"] = score_set
    body = {
        "kind": "judge",
        "base": base,
        "post": post,
        "judge": model_value(judge_model, "base"),
        "options": options,
    }
    if dry_run:
        click.echo(json.dumps(body, indent=2))
        return
    click.echo(json.dumps(call_app(app_url, token, "/api/jobs", body)))


@judge.command("show")
@click.argument("pair_id", type=int)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@APP_OPTION
@TOKEN_OPTION
def judge_show(pair_id: int, fmt: str, app_url: str, token: str | None) -> None:
    """A pair's judge runs: each score set, its judge, and its audit (JSON: every run)."""
    runs = call_app(app_url, token, f"/api/pairs/{pair_id}/judges")
    if fmt == "json":
        click.echo(json.dumps(runs, indent=2))
        return
    if not runs:
        click.echo(f"pair {pair_id} has no judge run yet: `forgetmap judge submit`")
        return
    for run in runs:
        audit = run["audit"]
        agreement = audit["agreement"]
        click.echo(
            f"{run['score_set']}: judge {run['config']['judge']['name']}, "
            f"{audit['rows_graded']} unread answers graded; agrees with the harness on "
            + (
                f"{audit['agreed']} of {audit['audited']} read answers ({100 * agreement:.1f}%)"
                if agreement is not None
                else "no audited rows"
            )
        )
        for reading, n in audit["readings"].items():
            click.echo(f"  {reading}: {n}")
