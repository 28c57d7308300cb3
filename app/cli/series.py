"""`forgetmap series add|list|show|export` and `forgetmap watch`: checkpoints along a training
run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from forgetmap.cli.common import (
    ClientPath,
    CliError,
    Console,
    Table,
    echo_records,
    format_value,
    plus_minus,
    store_of,
)
from forgetmap.cli.pairs import stage_option
from forgetmap.cli.through_app import APP_CONNECTION
from forgetmap.core.errors import InputError
from forgetmap.core.stages import Stage
from forgetmap.core.vocabularies import AGGREGATES


@click.group()
def series() -> None:
    """Checkpoint series: a base model and its checkpoints in training order."""


@series.command("add")
@click.argument("name")
@click.option(
    "--base", required=True, help="The base model (by name) every checkpoint is compared with."
)
@click.option(
    "--checkpoint",
    "checkpoints",
    multiple=True,
    required=True,
    metavar="MODEL@STEP",
    help="A checkpoint model (by name) and its training step; repeat for more.",
)
@stage_option("The run's post-training stage, its pairs' (a map filtered by stage keeps it)")
@click.pass_context
def series_add(
    ctx: click.Context, name: str, base: str, checkpoints: tuple[str, ...], stage: Stage | None
) -> None:
    """Create series NAME (or extend it) with checkpoints; pairs (BASE, checkpoint) are added."""
    from forgetmap.db import series as series_db
    from forgetmap.services.series import parse_checkpoint

    store = store_of(ctx)
    try:
        parsed = [parse_checkpoint(c) for c in checkpoints]
        with store.transaction() as conn:
            series_id, created, added = series_db.add_checkpoints(
                conn, name, base, parsed, stage=stage
            )
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
    from forgetmap.db import series as series_db

    store = store_of(ctx)
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
        table.add_row(
            str(r["id"]),
            r["name"],
            r["base"],
            str(len(r["steps"])),
            ", ".join(map(str, r["steps"])),
        )
    Console(width=200).print(table)


@series.command("show")
@click.argument("name")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
)
@click.option("--aggregate", type=click.Choice(AGGREGATES), default="macro", show_default=True)
@click.pass_context
def series_show(ctx: click.Context, name: str, fmt: str, aggregate: str) -> None:
    """F_true / BT_true of each checkpoint per category (and Total), in step order."""
    from forgetmap.services.map_cache import MapCache
    from forgetmap.services.series import (
        SERIES_EXTRA,
        SERIES_FIELDS,
        SERIES_MARGINS,
        find_series,
        series_records,
    )

    store = store_of(ctx)
    try:
        found = find_series(store, name=name)
        if found is None:
            raise CliError(f"no series named {name!r} (see `forgetmap series list`)")
        records = series_records(MapCache(store), found, aggregate)
    finally:
        store.close()
    fields = SERIES_FIELDS + SERIES_EXTRA + SERIES_MARGINS
    if fmt in ("json", "csv"):
        echo_records(records, fields, fmt)
    elif not records:
        click.echo(f"series {name!r} has no scored checkpoints yet (evaluate or import them)")
    else:
        table = Table(title=f"{name}: F_true / BT_true along the run (mean ± std across seeds)")
        for col in ("step", "post", "category", "bench", "F_true", "BT_true", "noise", "clears"):
            table.add_column(col, justify="left" if col in ("post", "category") else "right")
        for r in records:
            table.add_row(
                str(r["step"]),
                r["post"],
                r["category"],
                str(r["n_benchmarks"]),
                plus_minus(r["f_true"], r["f_true_std"]),
                plus_minus(r["bt_true"], r["bt_true_std"]),
                format_value(r["noise_floor"]),
                {True: "yes", False: "no", None: ""}[r["clears_noise"]],
                end_section=r["category"] == "Total",
            )
        Console(width=200).print(table)


@series.command("export")
@click.argument("name")
@click.option(
    "--to",
    "target",
    type=click.Choice(["wandb", "mlflow", "tensorboard"]),
    required=True,
    help="The tracker to write into.",
)
@click.option("--project", help="W&B project, or MLflow experiment (default: forgetmap).")
@click.option("--entity", help="W&B entity (user or team; default: your W&B default).")
@click.option(
    "--run-id",
    help="An existing W&B or MLflow run to write into (W&B resumes it); default: a new run.",
)
@click.option("--run-name", help="The name of the new run.")
@click.option("--tracking-uri", help="MLflow's tracking URI (default: $MLFLOW_TRACKING_URI).")
@click.option(
    "--logdir",
    type=ClientPath(file_okay=False, path_type=Path),
    help="TensorBoard's log folder (required); for W&B, where it keeps its files.",
)
@click.option("--aggregate", type=click.Choice(AGGREGATES), default="macro", show_default=True)
@click.option(
    "--max-flips",
    type=click.IntRange(min=0),
    help="Flipped samples written per step, forgotten ones first (default: 1000).",
)
@click.pass_context
def series_export_command(
    ctx: click.Context,
    name: str,
    target: str,
    project: str | None,
    entity: str | None,
    run_id: str | None,
    run_name: str | None,
    tracking_uri: str | None,
    logdir: Path | None,
    aggregate: str,
    max_flips: int | None,
) -> None:
    """Write series NAME into a tracker run: per step (the checkpoint's training step) and category,
    F_true and BT_true with their 95% margins and the counts of forgotten and learned samples, plus
    a table of the flipped samples (W&B, MLflow). It writes from this machine, with your tracker
    login and files, also while an app owns the database (it reads the series from the app)."""
    from forgetmap.integrations.trackers import writer_for
    from forgetmap.services.series_export import fetch_series_export, series_export

    app = ctx.obj.get(APP_CONNECTION)
    # the contract's own default unless given (forgetmap.contract.series is not loaded for --help)
    options: dict[str, Any] = {
        "aggregate": aggregate,
        **({} if max_flips is None else {"max_flips": max_flips}),
    }
    try:
        if app is not None:
            export = fetch_series_export(app.url, app.credential, name, **options)
        else:
            store = store_of(ctx)
            try:
                export = series_export(store, name, **options)
            finally:
                store.close()
        if not export.steps:
            raise CliError(
                f"series {name!r} has no scored checkpoints yet (evaluate or import "
                "them); nothing was written"
            )
        writer = writer_for(
            target,
            project=project,
            entity=entity,
            run_id=run_id,
            run_name=run_name,
            tracking_uri=tracking_uri,
            logdir=logdir,
        )
        try:
            written = writer.write(export)
        finally:
            writer.close()
    except InputError as exc:
        raise CliError(str(exc)) from exc
    cut = f", at most {export.max_flips} per step" if export.flips_truncated else ""
    click.echo(
        f"wrote {len(written)} steps of series {name} to {writer.target} "
        f"({len(export.results)} results, {len(export.flips)} flipped samples{cut})"
    )


@click.command("watch")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--base", required=True, help="The base model's name.")
@click.option("--series", "series_name", required=True, help="The series the checkpoints join.")
@click.option(
    "--every",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    help="Seconds between scans.",
)
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
@click.option(
    "--app",
    "app_url",
    envvar="FORGETMAP_APP_URL",
    default="http://127.0.0.1:8000",
    show_default=True,
    help="The forgetmap app ($FORGETMAP_APP_URL).",
)
@click.option("--token", envvar="FORGETMAP_API_TOKEN", help="A token ($FORGETMAP_API_TOKEN).")
@click.option("--once", is_flag=True, help="Scan once and exit.")
@stage_option("The run's post-training stage, its pairs' (a map filtered by stage keeps it)")
def watch_command(
    directory: Path,
    base: str,
    series_name: str,
    every: float,
    benchmarks: str,
    seeds: str,
    base_path: str | None,
    marker: str | None,
    engine: str,
    mode: str,
    max_tokens: int,
    limit: int | None,
    app_url: str,
    token: str | None,
    once: bool,
    stage: Stage | None,
) -> None:
    """Submit each complete checkpoint-<step> folder under DIRECTORY as training writes it."""
    import logging

    from forgetmap.services.watch import WatchSettings, watch

    if not token:
        raise CliError(
            "watch needs a token: --token or $FORGETMAP_API_TOKEN (`forgetmap token create NAME`)"
        )
    try:
        seed_list = [int(s) for s in seeds.split(",") if s.strip()]
    except ValueError:
        raise CliError(f"--seeds must be integers separated by commas, got {seeds!r}") from None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    settings = WatchSettings(
        root=directory.resolve(),
        series=series_name,
        base=base,
        app_url=app_url,
        token=token,
        benchmarks=[b.strip() for b in benchmarks.split(",") if b.strip()],
        seeds=seed_list,
        config={"engine": engine, "mode": mode, "max_tokens": max_tokens, "limit": limit},
        base_path=base_path,
        marker=marker,
        every=every,
        stage=stage,
    )
    try:
        watch(settings, once=once)
    except KeyboardInterrupt:
        pass
