"""The ``forgetmap`` command line (public contract: docs/cli.md and docs/design.md).

One module per command group (``app/cli/<group>.py``); this one holds the root group and adds the
others to it. Heavy modules are imported inside the commands, so ``forgetmap --help`` stays fast.
"""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path

import click
from forgetmap.cli import (
    backup,
    common,
    export,
    imports,
    jobs,
    judge,
    maps,
    merge,
    models,
    pairs,
    probe,
    recoverability,
    rescore,
    series,
    services,
    suite,
    through_app,
    tokens,
)
from forgetmap.runtime.paths import default_db_path


class ForgetmapGroup(click.Group):
    """The root group. It keeps the command line from the subcommand on, which a command sent
    to the app that owns the database carries (``through_app.run_through_app``)."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        ctx.meta[through_app.COMMAND_LINE] = list(args)
        return super().resolve_command(ctx, args)


@click.group(cls=ForgetmapGroup)
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="DuckDB file (default: $FORGETMAP_DB or data/forgetmap.duckdb).",
)
@click.option(
    "--url",
    envvar="FORGETMAP_URL",
    help="Run the command through the forgetmap app at this URL ($FORGETMAP_URL; never "
    "$FORGETMAP_APP_URL, which names the app for workers, `job` and `watch`), with "
    "--token. Default: through the app serving --db on this machine if one runs, else on the "
    "file itself.",
)
@click.option(
    "--token",
    envvar="FORGETMAP_API_TOKEN",
    help="A token for --url ($FORGETMAP_API_TOKEN) with the role the command needs: read for "
    "reads, submit for imports, pairs, series and models, admin for tokens and the rest.",
)
@click.pass_context
def main(ctx: click.Context, db: Path | None, url: str | None, token: str | None) -> None:
    """forgetmap: what did post-training make a model forget?"""
    ctx.ensure_object(dict)
    ctx.obj["db"] = db or default_db_path()
    ctx.obj["db_given"] = db is not None or bool(os.environ.get("FORGETMAP_DB"))
    through_app.run_through_app(ctx, url, token)
    if ctx.obj.get("own_process") and ctx.invoked_subcommand in LEAN_COMMANDS:
        common.block_unused_imports()
        common.lean_native_settings()
        ctx.obj["quick_exit"] = True


LEAN_COMMANDS = ("import", "pair", "map")
"""Commands that, in their own process (``run``), load neither pandas nor cloudpickle
(``common.block_unused_imports``), set up Arrow's and OpenBLAS's native pools for one short job
(``common.lean_native_settings``) and end without tearing their heap down (``quick_exit``): what a
pipeline runs once per model."""


def run() -> None:
    """The ``forgetmap`` executable: ``main`` in a process of its own."""
    obj: dict = {"own_process": True}
    try:
        main(obj=obj)
    except SystemExit as done:
        if obj.get("quick_exit"):
            quick_exit(done.code)
        raise


def quick_exit(code: int | str | None) -> None:
    """End the process as ``sys.exit(code)`` would, without the interpreter's teardown.

    The atexit handlers run and the output is flushed; what is skipped is the final garbage
    collection, the modules' and the native libraries' teardown (DuckDB, Arrow and their
    allocators hand back their memory page by page), which the system frees at once: on the
    paper's layout 0.15-0.25 s of an ``import`` process (0.06 s this way), about 0.05 s of
    ``pair`` and ``map`` (bench/harness_import.py, docs/performance.md).
    Only for commands that leave no thread running and close their database (``LEAN_COMMANDS``).
    """
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to say
            pass
    os._exit(code or 0)


main.add_command(backup.backup_command)
main.add_command(backup.restore_command)
main.add_command(export.export_group)
main.add_command(imports.import_group)
main.add_command(jobs.job)
main.add_command(judge.judge)
main.add_command(maps.map_command)
main.add_command(merge.merge)
main.add_command(models.model)
main.add_command(pairs.pair)
main.add_command(probe.probe)
main.add_command(recoverability.recover)
main.add_command(rescore.rescore_command)
main.add_command(rescore.scores_command)
main.add_command(series.series)
main.add_command(series.watch_command)
main.add_command(services.demo)
main.add_command(services.serve)
main.add_command(services.up)
main.add_command(services.worker)
main.add_command(suite.suite)
main.add_command(tokens.token)
