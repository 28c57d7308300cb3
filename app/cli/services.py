"""`forgetmap serve|worker|up|demo`: the long-running processes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click
from forgetmap.cli.common import CliError
from forgetmap.core.errors import InputError

if TYPE_CHECKING:
    from forgetmap.demo.manifest import Recipe


def _root_group(ctx: click.Context) -> click.Group:
    """The ``forgetmap`` group this command runs under: the commands the app runs for others."""
    return cast(click.Group, ctx.find_root().command)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.pass_context
def serve(ctx: click.Context, host: str, port: int) -> None:
    """Serve the dashboard and the JSON API. While it serves, the other commands on its database
    run through it (the owner file beside the database; --port 0 picks a free port)."""
    from forgetmap.db import StoreError
    from forgetmap.runtime.config import SettingsError
    from forgetmap.web.up import serve as serve_app

    os.environ.setdefault("FORGETMAP_DB", str(ctx.obj["db"]))
    try:
        serve_app(ctx.obj["db"], host, port, commands=_root_group(ctx))
    except SettingsError as exc:  # read before the app serves: it never starts with a bad one
        raise CliError(f"a setting does not parse: {exc}") from None
    except (InputError, StoreError) as exc:  # the port is taken, or the database
        raise CliError(str(exc)) from None


@click.command()
@click.option("--loglevel", default="INFO", show_default=True)
@click.pass_context
def worker(ctx: click.Context, loglevel: str) -> None:
    """Evaluation worker: runs shards from the queue with vLLM or transformers.

    Configured by the environment: FORGETMAP_APP_URL, FORGETMAP_API_TOKEN, FORGETMAP_BROKER_URL
    (none: the embedded queue under FORGETMAP_DATA_DIR, by default the --db database's folder,
    where `serve` and `up` on that database keep it), FORGETMAP_MODEL_ROOTS,
    FORGETMAP_BENCHMARK_DIRS, FORGETMAP_TRUST_REMOTE_CODE (off by default).
    """
    from forgetmap.runtime.config import SettingsError
    from forgetmap.worker.settings import WorkerSettings
    from forgetmap.worker.tasks import run_worker

    # the embedded queue beside the database, as `serve` and `up` on it keep it
    os.environ.setdefault("FORGETMAP_DATA_DIR", str(Path(ctx.obj["db"]).resolve().parent))
    try:
        settings = WorkerSettings.from_env()
    except SettingsError as exc:
        raise CliError(f"a setting does not parse: {exc}") from None
    run_worker(settings, loglevel=loglevel)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option(
    "--watch",
    "watch_args",
    metavar="'DIR --base B --series S --benchmarks A,B ...'",
    help="Also run `forgetmap watch` with these arguments (one quoted string).",
)
@click.pass_context
def up(ctx: click.Context, host: str, port: int, watch_args: str | None) -> None:
    """The app plus a local worker on the embedded queue (no Redis needed). Ctrl-C stops both."""
    import shlex

    from forgetmap.db import StoreError
    from forgetmap.runtime.config import SettingsError
    from forgetmap.web.up import run_up
    from forgetmap.worker.settings import WorkerSettings

    try:
        WorkerSettings.from_env()  # the local worker's, read here: it would fail on its own
        run_up(
            ctx.obj["db"],
            host,
            port,
            commands=_root_group(ctx),
            watch_args=shlex.split(watch_args) if watch_args else None,
        )
    except SettingsError as exc:
        raise CliError(f"a setting does not parse: {exc}") from None
    except (InputError, StoreError) as exc:
        raise CliError(str(exc)) from None


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option(
    "--zoo",
    "zoo_dir",
    type=click.Path(path_type=Path),
    default=Path("data/demo"),
    show_default=True,
    help="Where the model zoo is built and cached.",
)
@click.option(
    "--scale",
    type=int,
    default=1,
    show_default=True,
    help="Each benchmark N times its size (1-60), the world grown with it; a larger zoo builds "
    "and evaluates for much longer (docs/demo.md).",
)
@click.pass_context
def demo(ctx: click.Context, host: str, port: int, zoo_dir: Path, scale: int) -> None:
    """A tiny model zoo with real forgetting, trained on this CPU, evaluated by a local worker,
    served."""
    recipe = demo_recipe(scale)
    from forgetmap.demo.run import run_demo

    # the demo keeps its own database unless one is named, so it never mixes with real results;
    # one per scale, as a scaled zoo's models carry the same names with other weights and items
    own = "demo.duckdb" if scale == 1 else f"demo-scale{scale}.duckdb"
    db = ctx.obj["db"] if ctx.obj["db_given"] else zoo_dir / own
    run_demo(db, host, port, zoo_dir, recipe)


def demo_recipe(scale: int) -> Recipe:
    """The default recipe at suite scale ``scale``; a one-line error outside what the suite can
    draw (checked before anything is built)."""
    import dataclasses

    from forgetmap.demo.manifest import DEFAULT_RECIPE

    try:
        return dataclasses.replace(DEFAULT_RECIPE, suite_scale=scale)
    except ValueError as exc:
        raise CliError(f"--scale: {exc}") from exc
