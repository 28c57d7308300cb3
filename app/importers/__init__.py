"""Importers: each format's reader produces normalized tables; ``import_file`` stores them.

One import is one transaction: on any error nothing is written. Readers yield their rows batch
by batch and the store writes them as they come (``forgetmap.db.ingest.Ingest``), so that an
import's memory does not grow with its rows.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pyarrow as pa
from forgetmap.core.columns import use_jemalloc_pool
from forgetmap.db.ingest import Ingest, IngestSummary, Progress
from forgetmap.db.store import Store
from forgetmap.db.texts import TextWriter, folder_of
from forgetmap.importers.common import InputError, holds_whole_units, prepare
from forgetmap.importers.eee.reader import iter_eee
from forgetmap.importers.inspect_logs.reader import iter_inspect
from forgetmap.importers.lighteval.reader import iter_lighteval
from forgetmap.importers.lm_eval.reader import iter_lm_eval
from forgetmap.importers.table import iter_table

KINDS = ("table", "lm-eval", "lighteval", "inspect", "eee")


def iter_source(
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
    notice=None,
    evaluation_result_id: str | None = None,
    scorer: str | None = None,
) -> Iterator[pa.Table]:
    """Parse a file (or a tree) of the given kind into normalized tables, batch by batch (no
    validation of keys yet): a lighteval task of files, an lm-eval task, a table file."""
    use_jemalloc_pool()  # imports make many large temporaries (see its docstring)
    if kind == "table":
        return iter_table(path, model=model)
    if kind == "lighteval":  # the tree names its models (OUT/details/<org>/<model>/)
        return iter_lighteval(
            path,
            model=model,
            metric=metric,
            seed=seed,
            latest=latest,
            progress=progress,
            notice=notice,
        )
    if kind == "eee":  # each line names its model
        return iter_eee(path, model=model, result_id=evaluation_result_id, notice=notice)
    if kind == "inspect":  # each log's header names its model
        return iter_inspect(path, model=model, scorer=scorer, progress=progress, notice=notice)
    if model is None:
        raise InputError(f"import {kind} needs --model NAME (the files do not name the model)")
    if kind == "lm-eval":
        return iter_lm_eval(
            path,
            model=model,
            metric=metric,
            filter_name=filter_name,
            seed=seed or 0,
            on_filter=on_filter,
        )
    raise InputError(f"unknown import kind {kind!r}; use one of {', '.join(KINDS)}")


JOIN_BYTES = 32 << 20
"""A reader's consecutive batches that share a schema are joined up to this many bytes before
the store takes them: the store's work per batch (a dozen statements) then comes once for many
small files, not once each (an lm-eval push of MMLU's 57 subjects: 61 batches a model, 2.3 s of
a 5.3 s import, docs/performance.md). A batch larger than this goes alone, as it came."""


def joined(
    batches: Iterator[pa.Table], limit: int | None = None
) -> Generator[pa.Table, None, None]:
    """``batches`` in order, consecutive ones of one schema (its metadata too: ``whole_units``)
    joined while their bytes stay within ``limit`` (default ``JOIN_BYTES``). Closing this closes
    ``batches``."""
    limit = JOIN_BYTES if limit is None else limit
    held: list[pa.Table] = []
    size = 0
    try:
        for batch in batches:
            alike = held and batch.schema.equals(held[0].schema, check_metadata=True)
            if held and (not alike or size + batch.nbytes > limit):
                yield _concatenated(held)
                held, size = [], 0
            held.append(batch)
            size += batch.nbytes
            if size >= limit:  # full: on its way at once, not held for the next batch
                yield _concatenated(held)
                held, size = [], 0
        if held:
            yield _concatenated(held)
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()  # a reader's threads stop at once when a batch is refused


def _concatenated(tables: list[pa.Table]) -> pa.Table:
    # each reader's batch has its own dictionaries: one per column again, as the store reads them
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables).unify_dictionaries()


def read_source(kind: str, path: Path, **options) -> pa.Table:
    """``iter_source``'s batches as one table (tests and small tools; imports stream)."""
    return pa.concat_tables(iter_source(kind, path, **options)).unify_dictionaries()


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
    notice=None,
    evaluation_result_id: str | None = None,
    scorer: str | None = None,
) -> IngestSummary:
    """Read, validate and store one file (or a tree of result files) in one transaction, batch
    by batch: memory holds one batch of rows, and a bad batch (the last file's too) leaves
    nothing written."""
    path = Path(path)
    batches = joined(
        iter_source(
            kind,
            path,
            model=model,
            metric=metric,
            filter_name=filter_name,
            seed=seed,
            latest=latest,
            progress=progress,
            on_filter=on_filter,
            notice=notice,
            evaluation_result_id=evaluation_result_id,
            scorer=scorer,
        )
    )
    config = {"source": f"import:{kind}"}
    if metric:
        config["metric"] = metric
    if filter_name:
        config["filter"] = filter_name if isinstance(filter_name, str) else sorted(filter_name)
    if evaluation_result_id:
        config["evaluation_result_id"] = evaluation_result_id
    if scorer:
        config["scorer"] = scorer
    texts = TextWriter(folder_of(store.path))
    try:
        with store.limited_memory(), store.transaction() as conn:
            writer = Ingest(
                conn,
                config=config,
                progress=progress,
                texts=texts,
            )
            first_row = 1
            for raw in batches:
                whole = holds_whole_units(raw)  # the lighteval reader's tasks of whole files
                table, benchmarks = prepare(raw, source=path.name, first_row=first_row)
                first_row += raw.num_rows
                # the lighteval reader puts the rows of one sample side by side (iter_lighteval)
                writer.add(
                    table, benchmarks, grouped_by_sample=kind == "lighteval", whole_units=whole
                )
                del raw, table
            summary = writer.finish()
    except BaseException:
        texts.discard()
        raise
    finally:
        batches.close()  # and the reader's: its threads stop at once when a batch is refused
    texts.commit()
    return summary


__all__ = ["KINDS", "InputError", "import_file", "iter_source", "read_source"]
