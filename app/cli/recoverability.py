"""`forgetmap recover list|export`: recoverability analyses."""

from __future__ import annotations

import json
from pathlib import Path

import click
from forgetmap.cli.common import (
    ClientPath,
    CliError,
    Console,
    Table,
    store_of,
)


@click.group()
def recover() -> None:
    """Recoverability analyses (run them from a pair's page or POST /api/jobs with kind recover)."""


@recover.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option(
    "--correction",
    type=click.Choice(["bias", "temp", "bias_temp", "closed_bias"]),
    default="bias_temp",
    show_default=True,
)
@click.pass_context
def recover_list(ctx: click.Context, fmt: str, correction: str) -> None:
    """The newest analysis of each pair: its symmetric share beside the noise control's."""
    from forgetmap.core.naming import pair_label
    from forgetmap.db import recoverability as recoveries
    from forgetmap.db.queries import list_pairs
    from forgetmap.services.recovery import headline

    store = store_of(ctx)
    with store.read() as conn:
        rows = [headline(r, correction) for r in recoveries.latest_recoveries(conn)]
        names = {p["id"]: pair_label(p) for p in list_pairs(conn)}
    store.close()
    for row in rows:
        row["pair"] = names.get(row["pair_id"], str(row["pair_id"]))
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(
            "no recoverability analyses yet: start one from a pair's page (/pairs/ID/recover)"
        )
        return

    def share(row, key):
        if row[key] is None:
            return "–"
        return f"{100 * row[key]:.1f} [{100 * row[key + '_lo']:.1f}, {100 * row[key + '_hi']:.1f}]"

    table = Table(
        "id",
        "pair",
        "corpus",
        "gap (nats/token)",
        f"symmetric share, {correction} %",
        "noise control %",
    )
    for row in rows:
        gap = "–" if row["gap"] is None else f"{row['gap']:.4f}"
        table.add_row(
            str(row["recovery_id"]),
            row["pair"],
            row["corpus"],
            gap,
            share(row, "symmetric"),
            share(row, "control_symmetric"),
        )
    Console().print(table)


@recover.command("export")
@click.argument("recovery_id", type=int)
@click.argument("out", type=ClientPath(dir_okay=False, path_type=Path))
@click.pass_context
def recover_export(ctx: click.Context, recovery_id: int, out: Path) -> None:
    """Write an analysis' per-document loss sums to OUT (.csv or .parquet)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
    from forgetmap.core.spreadsheet_cells import inert_table
    from forgetmap.db import recoverability as recoveries

    if out.suffix not in (".csv", ".parquet"):
        raise CliError(f"{out}: the output must end in .csv or .parquet")
    store = store_of(ctx)
    with store.read() as conn:
        table = recoveries.documents_table(conn, recovery_id)
    store.close()
    if not table:
        raise CliError(
            f"recovery analysis {recovery_id} does not exist (see `forgetmap recover list`)"
        )
    arrow = pa.table(table)
    if out.suffix == ".csv":  # text a spreadsheet would run as a formula gets a leading '
        pacsv.write_csv(inert_table(arrow), out)
    else:
        pq.write_table(arrow, out)
    click.echo(f"{out}: {arrow.num_rows} documents, {arrow.num_columns - 3} loss columns")
