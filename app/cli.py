"""The ``forgetmap`` command line (public contract: see README.md and DESIGN.md)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from app.config import default_db_path
from app.errors import InputError

if TYPE_CHECKING:
    from app.db import Store

# Heavy modules (rich, SQLAlchemy, DuckDB, pyarrow, scipy) are imported by the commands that use
# them, so that `forgetmap --help` and quick commands start fast.


def Console(*args, **kwargs):  # noqa: N802 - stands in for rich's class
    from rich.console import Console as RichConsole

    return RichConsole(*args, **kwargs)


def Table(*args, **kwargs):  # noqa: N802 - stands in for rich's class
    from rich.table import Table as RichTable

    return RichTable(*args, **kwargs)


def _err():
    """A console on stderr (progress, notices)."""
    return Console(stderr=True)


class CliError(click.ClickException):
    """A one-line error for the user; exit code 2."""

    exit_code = 2

    def show(self, file=None) -> None:  # noqa: ARG002 - click's signature
        click.echo(f"error: {self.message}", err=True)


def _store(ctx: click.Context) -> Store:
    from app.db import StoreError, open_store

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
    from app.importers import import_file
    from app.progress import progress_reporter

    store = _store(ctx)
    try:
        with progress_reporter(f"importing {path.name}", _err()) as progress:
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
                f"in post, {counts['ambiguous']} ambiguous, {counts['mismatched']} with mismatched "
                f"documents (excluded, not dropped silently; `forgetmap pair add` shows them per benchmark)"
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
@click.option(
    "--filter",
    "filter_name",
    multiple=True,
    help="Filter for tasks scored with several: NAME (every task that has it) or TASK=NAME; "
    "repeatable. Default: flexible-extract, get-answer, strict-match, none (first present).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.pass_context
def import_lm_eval(
    ctx: click.Context,
    path: Path,
    model: str,
    metric: str | None,
    filter_name: tuple[str, ...],
    seed: int,
) -> None:
    """lm-evaluation-harness samples_*.jsonl (a file or a directory of them)."""

    def told(task: str, taken: str, filters: list[str], why: str) -> None:
        click.echo(f"{task}: filters {', '.join(filters)}; took {taken} ({why})", err=True)

    _run_import(
        ctx,
        "lm-eval",
        path,
        model=model,
        metric=metric,
        filter_name=list(filter_name) or None,
        seed=seed,
        on_filter=told,
    )


@import_group.command("lighteval")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--model", required=True, help="Name of the evaluated model.")
@click.option(
    "--metric",
    help="Per-sample metric meaning 'correct' (default: acc, exact_match or extractive_match).",
)
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed of every run imported (default: each run's seed from its results_<ts>.json).",
)
@click.option(
    "--latest",
    is_flag=True,
    help="When two runs hold one task with the same seed, keep the later run.",
)
@click.pass_context
def import_lighteval(
    ctx: click.Context, path: Path, model: str, metric: str | None, seed: int | None, latest: bool
) -> None:
    """lighteval details parquet (v0.10 flat or v0.11+ nested): a file, a run folder, a model's
    details folder with many runs, or a whole lighteval output folder."""
    _run_import(ctx, "lighteval", path, model=model, metric=metric, seed=seed, latest=latest)


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
    _print_pairing(store, pair_id, unpaired)


def _print_pairing(store: Store, pair_id: int, unpaired: dict) -> None:
    """Per benchmark: what paired and by which rule; a hint when nothing paired."""
    from app.db.queries import pairing_report, pairing_rule

    with store.read() as conn:
        report = pairing_report(conn, pair_id)
    store.close()
    table = Table(
        "benchmark", "seeds", "paired", "only base", "only post", "ambiguous", "mismatched", "rule"
    )
    for row in report:
        table.add_row(
            row["benchmark"],
            str(row["seeds"]),
            f"{row['paired']:,}",
            f"{row['only_base']:,}",
            f"{row['only_post']:,}",
            f"{row['ambiguous']:,}",
            f"{row['mismatched']:,}",
            pairing_rule(row),
        )
    if report:
        Console(width=max(Console().width, 120)).print(table)
    paired = sum(r["paired"] for r in report)
    click.echo(
        f"paired {paired:,} samples on {sum(1 for r in report if r['paired'])} of "
        f"{len(report)} benchmarks; {unpaired['only_base']:,} only in base, "
        f"{unpaired['only_post']:,} only in post, {unpaired.get('ambiguous', 0):,} ambiguous, "
        f"{unpaired['mismatched']:,} with mismatched documents (excluded from the counts)"
    )
    if not paired:
        click.echo(
            "nothing paired: samples pair on (benchmark, sample id, seed). Check that both models "
            "ran the same benchmarks (same task names) with the same seeds "
            "(`forgetmap pair list`, the importer's summary), and that the files give document "
            "ids or the same questions."
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


# ------------------------------------------------------------------------------------- series


@main.group()
def series() -> None:
    """Checkpoint series: a base model and its checkpoints in training order."""


@series.command("add")
@click.argument("name")
@click.option(
    "--base", required=True, help="The base model (by name) every checkpoint is compared with."
)
@click.option("--checkpoint", "checkpoints", multiple=True, required=True, metavar="MODEL@STEP",
              help="A checkpoint model (by name) and its training step; repeat for more.")  # fmt: skip
@click.pass_context
def series_add(ctx: click.Context, name: str, base: str, checkpoints: tuple[str, ...]) -> None:
    """Create series NAME (or extend it) with checkpoints; pairs (BASE, checkpoint) are added."""
    from app.db import series as series_db
    from app.series import parse_checkpoint

    store = _store(ctx)
    try:
        parsed = [parse_checkpoint(c) for c in checkpoints]
        with store.transaction() as conn:
            series_id, created, added = series_db.add_checkpoints(conn, name, base, parsed)
    except InputError as exc:
        raise CliError(str(exc)) from exc
    finally:
        store.close()
    steps = ", ".join(f"{a['post']}@{a['step']} (pair {a['pair_id']})" for a in added) or "none new"
    click.echo(f"{'created' if created else 'extended'} series {series_id} {name}: {steps}")


@series.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def series_list(ctx: click.Context, fmt: str) -> None:
    """Every series with its base and steps."""
    from app.db import series as series_db

    store = _store(ctx)
    with store.read() as conn:
        rows = series_db.list_series(conn)
    store.close()
    if fmt == "json":
        click.echo(json.dumps(rows, indent=1))
        return
    if not rows:
        click.echo("no series yet: `forgetmap series add NAME --base BASE --checkpoint MODEL@STEP`")
        return
    table = Table("id", "name", "base", "checkpoints", "steps")
    for r in rows:
        table.add_row(str(r["id"]), r["name"], r["base"], str(len(r["steps"])),
                      ", ".join(map(str, r["steps"])))  # fmt: skip
    Console(width=200).print(table)


@series.command("show")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
              show_default=True)  # fmt: skip
@click.option("--aggregate", type=click.Choice(["macro", "micro"]), default="macro",
              show_default=True)  # fmt: skip
@click.pass_context
def series_show(ctx: click.Context, name: str, fmt: str, aggregate: str) -> None:
    """F_true / BT_true of each checkpoint per category (and Total), in step order."""
    from app.forgetting_map import MapCache
    from app.series import SERIES_EXTRA, SERIES_FIELDS, find_series, series_records

    store = _store(ctx)
    try:
        found = find_series(store, name=name)
        if found is None:
            raise CliError(f"no series named {name!r} (see `forgetmap series list`)")
        records = series_records(MapCache(store), found, aggregate)
    finally:
        store.close()
    fields = SERIES_FIELDS + SERIES_EXTRA
    if fmt in ("json", "csv"):
        _echo_records(records, fields, fmt)
    elif not records:
        click.echo(f"series {name!r} has no scored checkpoints yet (evaluate or import them)")
    else:
        table = Table(title=f"{name}: F_true / BT_true along the run (mean ± std across seeds)")
        for col in ("step", "post", "category", "bench", "F_true", "BT_true", "noise", "clears"):
            table.add_column(col, justify="left" if col in ("post", "category") else "right")
        for r in records:
            table.add_row(str(r["step"]), r["post"], r["category"], str(r["n_benchmarks"]),
                          _pm(r["f_true"], r["f_true_std"]), _pm(r["bt_true"], r["bt_true_std"]),
                          _fmt(r["noise_floor"]),
                          {True: "yes", False: "no", None: ""}[r["clears_noise"]],
                          end_section=r["category"] == "Total")  # fmt: skip
        Console(width=200).print(table)


@main.command("watch")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--base", required=True, help="The base model's name.")
@click.option("--series", "series_name", required=True, help="The series the checkpoints join.")
@click.option("--every", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Seconds between scans.")  # fmt: skip
@click.option("--benchmarks", required=True, help="Comma-separated benchmarks to evaluate.")
@click.option("--seeds", default="0,1,2", show_default=True)
@click.option("--base-path", help="The base's folder or Hub id (default: the one a job stored).")
@click.option(
    "--marker", help="A file the trainer writes last; a folder counts only once it exists."
)
@click.option(
    "--engine", type=click.Choice(["vllm", "transformers"]), default="vllm", show_default=True
)
@click.option(
    "--mode", type=click.Choice(["generate", "loglik"]), default="generate", show_default=True
)
@click.option("--max-tokens", type=int, default=2048, show_default=True)
@click.option("--limit", type=int, help="Items per benchmark (default: all).")
@click.option("--app", "app_url", envvar="FORGETMAP_APP_URL", default="http://127.0.0.1:8000",
              show_default=True, help="The forgetmap app ($FORGETMAP_APP_URL).")  # fmt: skip
@click.option("--token", envvar="FORGETMAP_API_TOKEN", help="A token ($FORGETMAP_API_TOKEN).")
@click.option("--once", is_flag=True, help="Scan once and exit.")
def watch_command(directory: Path, base: str, series_name: str, every: float, benchmarks: str,
                  seeds: str, base_path: str | None, marker: str | None, engine: str, mode: str,
                  max_tokens: int, limit: int | None, app_url: str, token: str | None,
                  once: bool) -> None:  # fmt: skip
    """Submit each complete checkpoint-<step> folder under DIRECTORY as training writes it."""
    import logging

    from app.watch import WatchSettings, watch

    if not token:
        raise CliError("watch needs a token: --token or $FORGETMAP_API_TOKEN "
                       "(`forgetmap token create NAME`)")  # fmt: skip
    try:
        seed_list = [int(s) for s in seeds.split(",") if s.strip()]
    except ValueError:
        raise CliError(f"--seeds must be integers separated by commas, got {seeds!r}") from None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    settings = WatchSettings(
        root=directory.resolve(), series=series_name, base=base, app_url=app_url, token=token,
        benchmarks=[b.strip() for b in benchmarks.split(",") if b.strip()], seeds=seed_list,
        config={"engine": engine, "mode": mode, "max_tokens": max_tokens, "limit": limit},
        base_path=base_path, marker=marker, every=every,
    )  # fmt: skip
    try:
        watch(settings, once=once)
    except KeyboardInterrupt:
        pass


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
    from app.db import recoverability as recoveries
    from app.db.queries import list_pairs
    from app.recoverability import headline

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

    from app.db import recoverability as recoveries

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
    if fmt in ("json", "csv"):
        _echo_records(records, fields, fmt)
    else:
        if not records:
            click.echo(_empty_map_hint(ctx))
            return
        _print_table(records, level)


def _echo_records(records: list[dict], fields, fmt: str) -> None:
    """Records as a JSON list, or as CSV with the given columns (None as an empty cell)."""
    if fmt == "json":
        click.echo(json.dumps(records, indent=1))
        return
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n")
    writer.writeheader()
    for r in records:
        writer.writerow({k: "" if r[k] is None else r[k] for k in fields})
    click.echo(buf.getvalue(), nl=False)


def _empty_map_hint(ctx: click.Context) -> str:
    """Why the map is empty and what to try."""
    from app.db.queries import list_pairs

    store = _store(ctx)
    try:
        with store.read() as conn:
            pairs = list_pairs(conn)
    finally:
        store.close()
    if not pairs:
        return (
            "the map is empty: import results for two models, then `forgetmap pair add BASE POST`"
        )
    names = ", ".join(f"{p['base']} -> {p['post']}" for p in pairs[:5])
    return (
        f"the map is empty: {len(pairs)} pair(s) ({names}) paired no samples. Samples pair on "
        "(benchmark, sample id, seed): check that both models ran the same benchmarks (same task "
        "names) with the same seeds; `forgetmap pair add BASE POST` prints per benchmark what "
        "each side has"
    )


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
@click.option("--watch", "watch_args", metavar="'DIR --base B --series S --benchmarks A,B ...'",
              help="Also run `forgetmap watch` with these arguments (one quoted string).")  # fmt: skip
@click.pass_context
def up(ctx: click.Context, host: str, port: int, watch_args: str | None) -> None:
    """The app plus a local worker on the embedded queue (no Redis needed). Ctrl-C stops both."""
    import shlex

    from app.up import run_up

    run_up(ctx.obj["db"], host, port, watch_args=shlex.split(watch_args) if watch_args else None)


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


# -------------------------------------------------------------------------------------- suite


def _names(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _suite_selection(benchmarks: str | None, categories: str | None, paper: bool) -> list[str]:
    from app.errors import InputError
    from app.suite import select_benchmarks

    try:
        return select_benchmarks(_names(benchmarks), _names(categories), paper)
    except InputError as exc:
        raise CliError(str(exc)) from exc


def _suite_progress(what: str):
    """A progress context (bar on a terminal, plain lines in logs) over benchmarks."""
    from app.progress import progress_reporter

    # one bar per benchmark here; datasets' own bars (read when it is imported) would interleave
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    return progress_reporter(what, _err())


_SELECTION = [
    click.option("--benchmarks", help="Comma-separated benchmark names (mmlu:anatomy,piqa)."),
    click.option("--categories", help="Comma-separated categories (Logic,Culture)."),
    click.option("--paper", is_flag=True, help="The paper's 94 scored benchmarks (the default)."),
]


def _selection_options(command):
    for option in reversed(_SELECTION):
        command = option(command)
    return command


@main.group()
def suite() -> None:
    """The paper's benchmarks on this machine: local copies (fetch) and a load check (check)."""


@suite.command("fetch")
@_selection_options
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for <name>.jsonl copies and manifest.json.")  # fmt: skip
@click.option("--hub-dir", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Read the hub's Parquet exports from this folder (<owner>/<name>/<config>/"
                   "<split>/*.parquet) instead of the hub.")  # fmt: skip
@click.option("--force", is_flag=True, help="Rewrite copies that are current.")
def suite_fetch(
    benchmarks: str | None,
    categories: str | None,
    paper: bool,
    out: Path,
    hub_dir: Path | None,
    force: bool,
) -> None:
    """Write local copies of benchmarks (run it where the hub is reachable; copy OUT to workers)."""
    from app.errors import InputError
    from app.suite import fetch_suite

    names = _suite_selection(benchmarks, categories, paper)
    try:
        with _suite_progress("fetching") as progress:
            results = fetch_suite(names, out, hub_dir=hub_dir, force=force, progress=progress)
    except InputError as exc:
        raise CliError(str(exc)) from exc
    counts = {s: sum(r.status == s for r in results) for s in ("fetched", "current", "failed")}
    for r in results:
        if r.status == "failed":
            click.echo(f"failed {r.name}: {r.error}", err=True)
    click.echo(f"{counts['fetched']} fetched, {counts['current']} already current, "
               f"{counts['failed']} failed; copies in {out}")  # fmt: skip
    if counts["failed"]:
        raise SystemExit(1)


@suite.command("check")
@_selection_options
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)  # fmt: skip
def suite_check(benchmarks: str | None, categories: str | None, paper: bool, fmt: str) -> None:
    """Load every benchmark as a worker here would (copies in FORGETMAP_BENCHMARK_DIRS first, else
    the hub); exit 0 only when all load."""
    from dataclasses import asdict

    from app.suite import check_suite
    from worker.settings import WorkerSettings

    names = _suite_selection(benchmarks, categories, paper)
    with _suite_progress("loading") as progress:
        records = check_suite(names, WorkerSettings.from_env().benchmark_dirs, progress=progress)
    if fmt == "json":
        click.echo(json.dumps([asdict(r) for r in records], indent=2))
    else:
        table = Table(box=None)
        for col in ("benchmark", "source", "n", "k", "gold", "problems"):
            table.add_column(col, overflow="fold")
        for r in records:
            hist = lambda h: " ".join(f"{k}:{v}" for k, v in h.items())  # noqa: E731
            problems = r.error if r.error else "; ".join(r.problems)
            table.add_row(r.name, r.source, str(r.n), hist(r.k_histogram),
                          hist(r.gold_histogram), problems)  # fmt: skip
        Console(width=200).print(table)
    failed = [r.name for r in records if not r.ok]
    if failed:
        click.echo(f"{len(failed)} of {len(records)} benchmarks do not load: {', '.join(failed)}",
                   err=True)  # fmt: skip
        raise SystemExit(1)


if __name__ == "__main__":
    main()
