"""Importers: each format's reader produces the normalized table; ``import_file`` stores it.

One import is one transaction: on any error nothing is written.
"""

from __future__ import annotations

from pathlib import Path

from app.columns import use_jemalloc_pool
from app.db.ingest import IngestSummary, Progress, ingest
from app.db.store import Store
from app.importers.common import InputError, prepare
from app.importers.lighteval import read_lighteval
from app.importers.lm_eval import read_lm_eval
from app.importers.table import read_table

KINDS = ("table", "lm-eval", "lighteval")


def read_source(
    kind: str,
    path: Path,
    *,
    model: str | None,
    metric: str | None = None,
    filter_name: str | None = None,
    seed: int | None = None,
    latest: bool = False,
    progress: Progress | None = None,
    on_filter=None,
):
    """Parse a file of the given kind into the normalized table (no validation of keys yet)."""
    use_jemalloc_pool()  # imports make many large temporaries (see its docstring)
    if kind == "table":
        return read_table(path, model=model)
    if kind == "lighteval":  # the tree names its models (OUT/details/<org>/<model>/)
        return read_lighteval(
            path, model=model, metric=metric, seed=seed, latest=latest, progress=progress
        )
    if model is None:
        raise InputError(f"import {kind} needs --model NAME (the files do not name the model)")
    if kind == "lm-eval":
        return read_lm_eval(
            path,
            model=model,
            metric=metric,
            filter_name=filter_name,
            seed=seed or 0,
            on_filter=on_filter,
        )
    raise InputError(f"unknown import kind {kind!r}; use one of {', '.join(KINDS)}")


def import_file(
    store: Store,
    kind: str,
    path: Path,
    *,
    model: str | None = None,
    metric: str | None = None,
    filter_name: str | None = None,
    seed: int | None = None,
    latest: bool = False,
    progress: Progress | None = None,
    on_filter=None,
) -> IngestSummary:
    """Read, validate and store one file (or directory of result files) in one transaction."""
    path = Path(path)
    raw = read_source(
        kind,
        path,
        model=model,
        metric=metric,
        filter_name=filter_name,
        seed=seed,
        latest=latest,
        progress=progress,
        on_filter=on_filter,
    )
    table, benchmarks = prepare(raw, source=path.name)
    config = {"source": f"import:{kind}"}
    if metric:
        config["metric"] = metric
    if filter_name:
        config["filter"] = filter_name if isinstance(filter_name, str) else sorted(filter_name)
    with store.transaction() as conn:
        return ingest(
            conn,
            table,
            benchmarks,
            config=config,
            progress=progress,
            # the lighteval reader puts the rows of one sample side by side (read_lighteval)
            grouped_by_sample=kind == "lighteval",
        )


__all__ = ["KINDS", "InputError", "import_file", "read_source"]
