"""`forgetmap model set|sizes`: model metadata."""

from __future__ import annotations

import click
from forgetmap.cli.common import (
    CliError,
    echo_columns,
    store_of,
)
from forgetmap.core.errors import InputError


@click.group()
def model() -> None:
    """Model metadata (family and size are guessed from the name on import)."""


@model.command("set")
@click.argument("name")
@click.option("--family", help="Model family, e.g. Qwen2.5.")
@click.option("--size", "size", type=float, help="Parameter count, e.g. 7e9.")
@click.pass_context
def model_set(ctx: click.Context, name: str, family: str | None, size: float | None) -> None:
    """Set a model's family and size (used by the map's filters and the size scatter)."""
    from forgetmap.db.ingest import set_model_meta

    store = store_of(ctx)
    try:
        with store.transaction() as conn:
            set_model_meta(conn, name, family=family, size_params=int(size) if size else None)
    except InputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    click.echo(f"updated model {name}")


@model.command("sizes")
@click.option(
    "--from-hub",
    is_flag=True,
    help="Set the unknown sizes from the local Hugging Face cache (nothing is fetched).",
)
@click.pass_context
def model_sizes(ctx: click.Context, from_hub: bool) -> None:
    """List every model's size and, for the unknown ones (no size in the name, none set), what
    the local Hugging Face cache says; with --from-hub, set those. Names come first and
    `model set --size` wins over both."""
    from forgetmap.runtime.owner import APP_STORE_KEY
    from forgetmap.services.model_sizes import fill_sizes_from_hub, hub_cache_folder, model_sizes

    store = store_of(ctx)
    try:
        models = fill_sizes_from_hub(store) if from_hub else model_sizes(store)
    finally:
        store.close()
    folder = hub_cache_folder()
    if folder is not None and any(m.hub is not None for m in models):
        # through the app, huggingface_hub runs in the app's process: its cache, its HF_HUB_CACHE
        whose = " (the app's, which owns the database)" if APP_STORE_KEY in ctx.obj else ""
        click.echo(f"read the Hugging Face cache at {folder}{whose}")
    if from_hub:
        for m in models:
            assert m.hub is not None  # fill_sizes_from_hub answers unknown sizes, looked up
            if m.hub.params is not None:
                click.echo(
                    f"set {m.name}: from the hub cache: {m.hub.params:,} parameters ({m.hub.how})"
                )
            else:
                click.echo(f"left {m.name} unknown: {m.hub.how}")
        if not models:
            click.echo("every model has a size (from its name, or `forgetmap model set`)")
        return
    if not models:
        click.echo("no models yet: import results first")
        return
    echo_columns(
        ("model", "size", "from the hub cache"),
        [
            (m.name, f"{m.size_params:,}" if m.size_params is not None else "unknown", _hub_cell(m))
            for m in models
        ],
        right=frozenset({1}),
    )
    if any(m.hub is not None and m.hub.params is not None for m in models):
        click.echo("set these with `forgetmap model sizes --from-hub`")


def _hub_cell(m) -> str:
    """What the hub cache says of an unknown size (nothing for a known one)."""
    if m.hub is None:
        return ""
    if m.hub.params is None:
        return f"none: {m.hub.how}"
    return f"{m.hub.params:,} parameters ({m.hub.how})"
