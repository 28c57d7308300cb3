"""`forgetmap export eee MODEL OUT_DIR`: a model's stored results in other tools' formats
(app/services/eee_export.py; docs/formats.md)."""

from __future__ import annotations

from pathlib import Path

import click
from forgetmap.cli.common import ClientPath, CliError, store_of
from forgetmap.core.errors import InputError


@click.group("export")
def export_group() -> None:
    """Write a model's stored per-sample results in another tool's format."""


@export_group.command("eee")
@click.argument("model")
@click.argument("out_dir", type=ClientPath(file_okay=False, path_type=Path))
@click.pass_context
def export_eee(ctx: click.Context, model: str, out_dir: Path) -> None:
    """Every Eval Ever files of MODEL in the new folder OUT_DIR: per benchmark and seed, an
    aggregate <uuid>.json and its instance file <uuid>_samples.jsonl, in the datastore's layout
    (data/<benchmark>/<developer>/<model>/)."""
    from forgetmap.services.eee_export import export_model

    store = store_of(ctx)
    try:
        done = export_model(store, model, out_dir)
    except (InputError, OSError) as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    click.echo(
        f"exported {done.rows:,} rows of {done.model} ({done.benchmarks} benchmarks, {done.runs} "
        f"runs: an aggregate and an instance file each) to {done.folder}"
    )
