"""`forgetmap backup PATH` and `forgetmap restore PATH`: a database and its answer files, to a
folder and back (app/db/backup.py; docs/backups.md)."""

from __future__ import annotations

from pathlib import Path

import click
from forgetmap.cli.common import ClientPath, CliError, store_of


def _size(folder: Path) -> str:
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return f"{total / 1e6:.1f} MB"


@click.command("backup")
@click.argument("path", type=ClientPath(file_okay=False, path_type=Path))
@click.pass_context
def backup_command(ctx: click.Context, path: Path) -> None:
    """Write a consistent snapshot of the database to the new folder PATH: every table as of one
    moment (imports and workers may go on writing), the answer files, a manifest."""
    from forgetmap.db.backup import BackupError, take_backup

    store = store_of(ctx)
    try:
        manifest = take_backup(store, path)
    except (BackupError, OSError) as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    rows = sum(manifest["tables"].values())
    click.echo(
        f"backed up {rows} rows of {len(manifest['tables'])} tables and "
        f"{len(manifest['answer_files'])} answer files (schema {manifest['schema_revision']}, "
        f"{_size(path)}) to {path}"
    )
    for name in manifest["missing_answer_files"]:
        click.echo(f"warning: answer file {name} was already missing; not in the backup", err=True)


@click.command("restore")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--without-tokens",
    is_flag=True,
    help="Restore no API tokens (create new ones after); login sessions are never restored.",
)
@click.pass_context
def restore_command(ctx: click.Context, path: Path, without_tokens: bool) -> None:
    """Restore the backup in folder PATH into the --db file, which must not exist yet or hold no
    rows; an older backup is upgraded to the newest schema. All or nothing: a backup with a link,
    a repeated key or a value the app never writes (an unknown token role, a negative seed) is
    refused in one line. Prints the tokens it restored."""
    from forgetmap.db.backup import BackupError, restore_backup
    from forgetmap.services.tokens import Role

    database = ctx.obj["db"]
    try:
        restored = restore_backup(
            path, database, roles=[r.value for r in Role], tokens=not without_tokens
        )
    except (BackupError, OSError) as exc:
        raise CliError(str(exc)) from exc
    manifest = restored.manifest
    click.echo(
        f"restored {restored.rows} rows and {len(manifest['answer_files'])} answer files "
        f"(backup of {manifest['created_at']}, schema {manifest['schema_revision']}) "
        f"into {database}"
    )
    if without_tokens:
        click.echo("restored no tokens (--without-tokens)")
    else:
        shown = ", ".join(f"{name} ({role})" for name, role in restored.tokens) or "none"
        click.echo(f"restored tokens: {shown}")
