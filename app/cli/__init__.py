"""The ``forgetmap`` command line (public contract: see README.md and DESIGN.md).

One module per command group (``app/cli/<group>.py``); this one holds the root group and adds the
others to it. Heavy modules are imported inside the commands, so ``forgetmap --help`` stays fast.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from app.cli import (
    common,
    imports,
    jobs,
    maps,
    models,
    pairs,
    recoverability,
    series,
    services,
    suite,
    tokens,
)
from app.paths import default_db_path


@click.group()
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="DuckDB file (default: $FORGETMAP_DB or data/forgetmap.duckdb).",
)
@click.pass_context
def main(ctx: click.Context, db: Path | None) -> None:
    """forgetmap: what did post-training make a model forget?"""
    ctx.ensure_object(dict)
    ctx.obj["db"] = db or default_db_path()
    ctx.obj["db_given"] = db is not None or bool(os.environ.get("FORGETMAP_DB"))
    if ctx.obj.get("own_process") and ctx.invoked_subcommand in PANDAS_FREE_COMMANDS:
        common.keep_pandas_out()


PANDAS_FREE_COMMANDS = ("import", "pair", "map")
"""Commands that run without pandas in their own process (``common.keep_pandas_out``)."""


def run() -> None:
    """The ``forgetmap`` executable: ``main`` in a process of its own."""
    main(obj={"own_process": True})


main.add_command(imports.import_group)
main.add_command(jobs.job)
main.add_command(maps.map_command)
main.add_command(models.model)
main.add_command(pairs.pair)
main.add_command(recoverability.recover)
main.add_command(series.series)
main.add_command(series.watch_command)
main.add_command(services.demo)
main.add_command(services.serve)
main.add_command(services.up)
main.add_command(services.worker)
main.add_command(suite.suite)
main.add_command(tokens.token)
