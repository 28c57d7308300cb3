"""The ``forgetmap`` command line (public contract: see README.md and DESIGN.md)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from app.config import default_db_path
from app.db import Store, StoreError, open_store
from app.importers import InputError, import_file

err = Console(stderr=True)


class CliError(click.ClickException):
    """A one-line error for the user; exit code 2."""

    exit_code = 2

    def show(self, file=None) -> None:  # noqa: ARG002 - click's signature
        click.echo(f"error: {self.message}", err=True)


def _store(ctx: click.Context) -> Store:
    path = ctx.obj["db"]
    try:
        return open_store(path)
    except StoreError as exc:
        raise CliError(str(exc)) from exc


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


# ------------------------------------------------------------------------------------- import


@main.group("import")
def import_group() -> None:
    """Import per-sample results (one transaction per file: all or nothing)."""


def _run_import(ctx: click.Context, kind: str, path: Path, **options) -> None:
    store = _store(ctx)
    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,} rows"),
        TimeElapsedColumn(),
    ]
    try:
        with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as bar:
            task = bar.add_task(f"importing {path.name}", total=None)

            def progress(stage: str, done: int, total: int) -> None:
                bar.update(task, description=f"{stage} {path.name}", completed=done, total=total)

            summary = import_file(store, kind, path, progress=progress, **options)
    except InputError as exc:
        raise CliError(f"{exc} (nothing was imported)") from exc
    finally:
        store.close()
    models = ", ".join(summary.models)
    click.echo(
        f"imported {summary.rows_added:,} new rows ({summary.rows_unchanged:,} already stored) "
        f"for {models} on {len(summary.benchmarks)} benchmarks"
    )
    for pair_id, counts in summary.unpaired.items():
        if any(counts.values()):
            click.echo(
                f"pair {pair_id}: {counts['only_base']} samples only in base, {counts['only_post']} only "
                f"in post, {counts['mismatched']} with mismatched documents (excluded, not dropped silently)"
            )


@import_group.command("table")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--model", help="Model name for rows without a model column.")
@click.pass_context
def import_table(ctx: click.Context, file: Path, model: str | None) -> None:
    """CSV, JSONL or Parquet with columns model, benchmark, sample_id, correct [, seed, ...]."""
    _run_import(ctx, "table", file, model=model)


@import_group.command("lm-eval")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--model", required=True, help="Name of the evaluated model.")
@click.option(
    "--metric",
    help="Per-sample metric meaning 'correct' (default: acc, exact_match or extractive_match).",
)
@click.option("--filter", "filter_name", help="lm-eval filter to use when a task has several.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.pass_context
def import_lm_eval(
    ctx: click.Context,
    path: Path,
    model: str,
    metric: str | None,
    filter_name: str | None,
    seed: int,
) -> None:
    """lm-evaluation-harness samples_*.jsonl (a file or a directory of them)."""
    _run_import(
        ctx, "lm-eval", path, model=model, metric=metric, filter_name=filter_name, seed=seed
    )


@import_group.command("lighteval")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--model", required=True, help="Name of the evaluated model.")
@click.option(
    "--metric",
    help="Per-sample metric meaning 'correct' (default: acc, exact_match or extractive_match).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.pass_context
def import_lighteval(
    ctx: click.Context, path: Path, model: str, metric: str | None, seed: int
) -> None:
    """lighteval details parquet (v0.10 flat or v0.11+ nested; a file or a directory)."""
    _run_import(ctx, "lighteval", path, model=model, metric=metric, seed=seed)


# --------------------------------------------------------------------------------------- pair


@main.group()
def pair() -> None:
    """Base -> post-trained model pairs."""


@pair.command("add")
@click.argument("base")
@click.argument("post")
@click.option("--label", help="Display label, e.g. 'Qwen2.5-7B -> Instruct'.")
@click.option("--stage", help="Post-training stage: instruct, sft, rl, domain-cpt, merge, other.")
@click.pass_context
def pair_add(
    ctx: click.Context, base: str, post: str, label: str | None, stage: str | None
) -> None:
    """Pair BASE with its post-trained descendant POST and compute their transition counts."""
    from app.db.ingest import add_pair

    store = _store(ctx)
    try:
        with store.transaction() as conn:
            pair_id, created, unpaired = add_pair(conn, base, post, label=label, stage=stage)
    except InputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    click.echo(f"{'added' if created else 'updated'} pair {pair_id}: {base} -> {post}")
    if any(unpaired.values()):
        click.echo(
            f"unpaired samples: {unpaired['only_base']} only in base, {unpaired['only_post']} only in "
            f"post, {unpaired['mismatched']} with mismatched documents (excluded from the counts)"
        )


@pair.command("list")
@click.pass_context
def pair_list(ctx: click.Context) -> None:
    """List pairs with their coverage."""
    from app.db.queries import list_pairs

    store = _store(ctx)
    with store.read() as conn:
        pairs = list_pairs(conn)
    store.close()
    if not pairs:
        click.echo("no pairs yet: import results, then `forgetmap pair add BASE POST`")
        return
    table = Table("id", "base", "post", "label", "stage", "benchmarks", "seeds", "paired samples")
    for p in pairs:
        table.add_row(
            str(p["id"]),
            p["base"],
            p["post"],
            p["label"] or "",
            p["stage"] or "",
            str(p["benchmarks"]),
            str(p["seeds"]),
            f"{p['paired_samples']:,}",
        )
    Console().print(table)


@main.group()
def recover() -> None:
    """Recoverability analyses (run them from a pair's page or POST /api/jobs with kind recover)."""


@recover.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option("--correction", type=click.Choice(["bias", "temp", "bias_temp", "closed_bias"]),
              default="bias_temp", show_default=True)  # fmt: skip
@click.pass_context
def recover_list(ctx: click.Context, fmt: str, correction: str) -> None:
    """The newest analysis of each pair: its symmetric share beside the noise control's."""
    from app.db import recoveries
    from app.db.queries import list_pairs
    from app.recovery import headline

    store = _store(ctx)
    with store.read() as conn:
        rows = [headline(r, correction) for r in recoveries.latest_recoveries(conn)]
        names = {p["id"]: p["label"] or f"{p['base']} → {p['post']}" for p in list_pairs(conn)}
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

    table = Table("id", "pair", "corpus", "gap (nats/token)", f"symmetric share, {correction} %",
                  "noise control %")  # fmt: skip
    for row in rows:
        gap = "–" if row["gap"] is None else f"{row['gap']:.4f}"
        table.add_row(str(row["recovery_id"]), row["pair"], row["corpus"], gap,
                      share(row, "symmetric"), share(row, "control_symmetric"))  # fmt: skip
    Console().print(table)


@recover.command("export")
@click.argument("recovery_id", type=int)
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def recover_export(ctx: click.Context, recovery_id: int, out: Path) -> None:
    """Write an analysis' per-document loss sums to OUT (.csv or .parquet)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from app.db import recoveries

    if out.suffix not in (".csv", ".parquet"):
        raise CliError(f"{out}: the output must end in .csv or .parquet")
    store = _store(ctx)
    with store.read() as conn:
        table = recoveries.documents_table(conn, recovery_id)
    store.close()
    if not table:
        raise CliError(
            f"recovery analysis {recovery_id} does not exist (see `forgetmap recover list`)"
        )
    arrow = pa.table(table)
    (pacsv.write_csv if out.suffix == ".csv" else pq.write_table)(arrow, out)
    click.echo(f"{out}: {arrow.num_rows} documents, {arrow.num_columns - 3} loss columns")


@main.group()
def token() -> None:
    """API tokens for workers and scripts (write endpoints need one)."""


@token.command("create")
@click.argument("name")
@click.option(
    "--role",
    type=click.Choice(["read", "submit", "worker", "admin"]),
    default="submit",
    show_default=True,
    help="read: reads (FORGETMAP_PRIVATE=1); submit: pairs and jobs, cancel/retry its own jobs; "
    "worker: the shard protocol and results uploads; admin: everything",
)
@click.pass_context
def token_create(ctx: click.Context, name: str, role: str) -> None:
    """Create a token and print it once (only its hash is stored)."""
    from app.auth import create_token

    store = _store(ctx)
    try:
        with store.transaction() as conn:
            secret = create_token(conn, name, role)
    except InputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    click.echo(secret)


@token.command("revoke")
@click.argument("name")
@click.pass_context
def token_revoke(ctx: click.Context, name: str) -> None:
    """Delete a token: requests carrying it are refused from now on."""
    from app.auth import revoke_token

    store = _store(ctx)
    try:
        with store.transaction() as conn:
            revoke_token(conn, name)
    except InputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    click.echo(f"revoked token {name}")


@token.command("list")
@click.pass_context
def token_list(ctx: click.Context) -> None:
    """Token names, roles and creation times (never the secrets)."""
    from app.auth import list_tokens

    store = _store(ctx)
    with store.read() as conn:
        for t in list_tokens(conn):
            click.echo(f"{t['name']}\t{t['role']}\t{t['created_at']}")
    store.close()


@main.group()
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

    store = _store(ctx)
    try:
        with store.transaction() as conn:
            set_model_meta(conn, name, family=family, size_params=int(size) if size else None)
    except InputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    click.echo(f"updated model {name}")


# ---------------------------------------------------------------------------------------- map


def _fmt(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4f}"
    return str(value)


@main.command("map")
@click.option(
    "--level", type=click.Choice(["benchmark", "category"]), default="category", show_default=True
)
@click.option(
    "--aggregate", type=click.Choice(["macro", "micro"]), default="macro", show_default=True
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "csv", "table"]),
    default="table",
    show_default=True,
)
@click.pass_context
def map_command(ctx: click.Context, level: str, aggregate: str, fmt: str) -> None:
    """The forgetting map: chance-adjusted F_true / BT_true per pair and category or benchmark."""
    from app.forgetting_map import (
        BENCHMARK_EXTRA,
        BENCHMARK_FIELDS,
        CATEGORY_EXTRA,
        CATEGORY_FIELDS,
        MapQuery,
        map_records,
    )

    store = _store(ctx)
    try:
        records = map_records(store, MapQuery(level=level, aggregate=aggregate))
    finally:
        store.close()
    fields = (
        (BENCHMARK_FIELDS + BENCHMARK_EXTRA)
        if level == "benchmark"
        else (CATEGORY_FIELDS + CATEGORY_EXTRA)
    )
    if fmt == "json":
        click.echo(json.dumps(records, indent=1))
    elif fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n")
        writer.writeheader()
        for r in records:
            writer.writerow({k: "" if r[k] is None else r[k] for k in fields})
        click.echo(buf.getvalue(), nl=False)
    else:
        if not records:
            click.echo(
                "the map is empty: import results for two models, then `forgetmap pair add BASE POST`"
            )
            return
        _print_table(records, level)


def _print_table(records: list[dict], level: str) -> None:
    console = Console()
    if not console.is_terminal:
        console = Console(width=200)
    if level == "category":
        table = Table(title="F_true / BT_true (mean ± std across seeds)")
        for col in (
            "pair",
            "category",
            "bench",
            "seeds",
            "F_true",
            "BT_true",
            "F",
            "BT",
            "F_max",
            "noise",
        ):
            table.add_column(col, justify="left" if col in ("pair", "category") else "right")
        for r in records:
            table.add_row(
                f"{r['base']} -> {r['post']}",
                r["category"],
                str(r["n_benchmarks"]),
                str(r["seeds"]),
                _pm(r["f_true"], r["f_true_std"]),
                _pm(r["bt_true"], r["bt_true_std"]),
                _fmt(r["f"]),
                _fmt(r["bt"]),
                _fmt(r["f_max"]),
                _fmt(r["noise_floor"]),
                end_section=r["category"] == "Total",
            )
    else:
        table = Table(title="per benchmark and seed")
        for col in (
            "pair",
            "benchmark",
            "seed",
            "n",
            "k",
            "acc_pre",
            "acc_post",
            "F",
            "BT",
            "F_true",
            "BT_true",
            "p",
        ):
            table.add_column(col, justify="left" if col in ("pair", "benchmark") else "right")
        for r in records:
            table.add_row(
                f"{r['base']} -> {r['post']}",
                r["benchmark"],
                str(r["seed"]),
                str(r["n"]),
                str(r["num_choices"] or ("mixed" if r["k_mix"] else "gen")),
                _fmt(r["acc_pre"]),
                _fmt(r["acc_post"]),
                _fmt(r["f"]),
                _fmt(r["bt"]),
                _fmt(r["f_true"]),
                _fmt(r["bt_true"]),
                f"{r['mcnemar_p']:.3g}",
            )
    console.print(table)


def _pm(mean: float, std: float | None) -> str:
    return f"{mean:.4f}" if std is None else f"{mean:.4f} ± {std:.4f}"


# ------------------------------------------------------------------------------ not yet built


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.pass_context
def serve(ctx: click.Context, host: str, port: int) -> None:
    """Serve the JSON API (the HTML dashboard comes with the dashboard issue)."""
    import uvicorn

    from app.web import create_app

    os.environ.setdefault("FORGETMAP_DB", str(ctx.obj["db"]))
    uvicorn.run(create_app(ctx.obj["db"]), host=host, port=port, log_level="info")


@main.command()
@click.option("--loglevel", default="INFO", show_default=True)
def worker(loglevel: str) -> None:
    """Evaluation worker: runs shards from the queue with vLLM or transformers.

    Configured by the environment: FORGETMAP_APP_URL, FORGETMAP_API_TOKEN, FORGETMAP_BROKER_URL
    (none: the embedded queue under FORGETMAP_DATA_DIR), FORGETMAP_MODEL_ROOTS,
    FORGETMAP_BENCHMARK_DIRS, FORGETMAP_TRUST_REMOTE_CODE (off by default).
    """
    from worker.settings import WorkerSettings
    from worker.tasks import run_worker

    run_worker(WorkerSettings.from_env(), loglevel=loglevel)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.pass_context
def up(ctx: click.Context, host: str, port: int) -> None:
    """The app plus a local worker on the embedded queue (no Redis needed). Ctrl-C stops both."""
    from app.up import run_up

    run_up(ctx.obj["db"], host, port)


@main.command()
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
@click.pass_context
def demo(ctx: click.Context, host: str, port: int, zoo_dir: Path) -> None:
    """A tiny model zoo with real forgetting, trained on this CPU, evaluated by a local worker, served."""
    from app.demo.run import run_demo

    # the demo keeps its own database unless one is named, so it never mixes with real results
    db = ctx.obj["db"] if ctx.obj["db_given"] else zoo_dir / "demo.duckdb"
    run_demo(db, host, port, zoo_dir)


if __name__ == "__main__":
    main()
