"""`forgetmap model set`: model metadata."""

from __future__ import annotations

import click

from app.cli.common import (
    CliError,
    store_of,
)
from app.core.errors import InputError


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
    from app.db.ingest import set_model_meta

    store = store_of(ctx)
    try:
        with store.transaction() as conn:
            set_model_meta(conn, name, family=family, size_params=int(size) if size else None)
    except InputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    click.echo(f"updated model {name}")
