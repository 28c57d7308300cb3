"""`forgetmap rescore NAME --extractor E` and `forgetmap scores`: stored answers graded again,
kept as named score sets beside the harness's scores (app/services/rescore.py; docs/cli.md)."""

from __future__ import annotations

import click
from forgetmap.cli.common import CliError, echo_columns, store_of
from forgetmap.core.display import utc_time
from forgetmap.core.errors import InputError


@click.command("rescore")
@click.argument("name")
@click.option(
    "--extractor",
    "extractor",
    required=True,
    help="lenient (multiple choice: a documented cascade of rules), math (generative: "
    "math-verify against the gold) or the name of an entry point in the group "
    "forgetmap.extractors.",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Only this model's answers (repeatable; default: every model).",
)
@click.option(
    "--benchmark",
    "benchmarks",
    multiple=True,
    help="Only this benchmark's answers (repeatable; default: every benchmark).",
)
@click.option("--replace", is_flag=True, help="Write the score set NAME again if it exists.")
@click.pass_context
def rescore_command(
    ctx: click.Context,
    name: str,
    extractor: str,
    models: tuple[str, ...],
    benchmarks: tuple[str, ...],
    replace: bool,
) -> None:
    """Grade the stored answers again with another extractor and keep the result as the score
    set NAME, beside the harness's own scores (never over them). No model runs: only the stored
    responses are read. One transaction: on any error nothing is written."""
    from forgetmap.services.rescore import rescore

    store = store_of(ctx)
    try:
        summary = rescore(
            store, name, extractor, list(models) or None, list(benchmarks) or None, replace=replace
        )
    except InputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    verb = "replaced" if summary.replaced else "wrote"
    click.echo(
        f"{verb} score set {summary.name} ({summary.extractor}): {summary.scored} answers graded, "
        f"{summary.changed} changed against the harness ({summary.became_correct} now right, "
        f"{summary.became_wrong} now wrong), {summary.no_answer} with no answer"
    )
    if summary.rules:
        rules = ", ".join(f"{rule} {n}" for rule, n in sorted(summary.rules.items()))
        click.echo(f"rules: {rules}")
    if summary.skipped:
        skipped = ", ".join(f"{why} {n}" for why, n in sorted(summary.skipped.items()))
        click.echo(f"skipped: {skipped}")


@click.command("scores")
@click.pass_context
def scores_command(ctx: click.Context) -> None:
    """List the score sets `forgetmap rescore` wrote."""
    from forgetmap.services.rescore import score_sets

    store = store_of(ctx)
    try:
        sets = score_sets(store)
    finally:
        store.close()
    if not sets:
        click.echo("no score sets yet: `forgetmap rescore NAME --extractor lenient` writes one")
        return
    echo_columns(
        ("name", "extractor", "rows", "created"),
        [(s["name"], s["extractor"], f"{s['rows']:,}", utc_time(s["created_at"])) for s in sets],
        right=frozenset({2}),
    )
