"""Reading one model's stored results for an export (``forgetmap export``, app/services/
eee_export.py): its units (benchmark, seed) with their counts and runs, then each unit's rows a
page at a time, with the whole prompt and the whole answer (long answers read from their files,
app/db/texts.py), all from one snapshot of the database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from forgetmap.db.prompts import full_prompt
from forgetmap.db.store import Connection, Store
from forgetmap.db.texts import read_texts

PAGE_ROWS = 1_000
"""Rows of a unit read at a time: what an export holds in memory (a reasoning model's answers
run to tens of kilobytes each)."""


@contextmanager
def snapshot(store: Store) -> Iterator[Connection]:
    """A connection whose every read sees the database as of one moment (imports and workers
    may write meanwhile); it writes nothing."""
    with store.read() as conn:
        conn.begin()
        try:
            yield conn
        finally:
            conn.rollback()


def model_row(conn: Connection, name: str) -> dict[str, Any] | None:
    """The model's id, name, family and size; None for a name not stored."""
    found = conn.execute(
        "SELECT id, name, family, size_params FROM models WHERE name = ?", [name]
    ).fetchall()
    if not found:
        return None
    return dict(zip(("id", "name", "family", "size_params"), found[0], strict=True))


def model_names(conn: Connection) -> list[str]:
    return [n for (n,) in conn.execute("SELECT name FROM models ORDER BY name").fetchall()]


@dataclass(frozen=True)
class ExportUnit:
    """One (benchmark, seed) of a model: what its aggregate says."""

    benchmark_id: int
    benchmark: str
    category: str
    seed: int
    rows: int
    correct: int
    first_run_at: datetime
    sources: tuple[str, ...]  # the runs' ``source`` (import:<kind>, worker), sorted


def model_units(conn: Connection, model_id: int) -> list[ExportUnit]:
    """The model's units, by benchmark name then seed."""
    found = conn.execute(
        """
        SELECT r.benchmark_id, b.name, b.category, r.seed, count(*), sum(r.correct::INT),
               min(ru.created_at), list(DISTINCT ru.config)
        FROM results r
        JOIN benchmarks b ON b.id = r.benchmark_id
        JOIN runs ru ON ru.id = r.run_id
        WHERE r.model_id = ?
        GROUP BY r.benchmark_id, b.name, b.category, r.seed
        ORDER BY b.name, r.seed
        """,
        [model_id],
    ).fetchall()
    units = []
    for benchmark_id, name, category, seed, rows, correct, first_run_at, configs in found:
        sources = sorted({str(json.loads(c).get("source", "unknown")) for c in configs})
        units.append(
            ExportUnit(
                benchmark_id, name, category, seed, rows, int(correct), first_run_at, tuple(sources)
            )
        )
    return units


def unit_rows(
    conn: Connection, model_id: int, unit: ExportUnit, *, page_rows: int = PAGE_ROWS
) -> Iterator[list[dict[str, Any]]]:
    """The unit's rows, by sample id, ``page_rows`` at a time: every stored field of a result
    (the whole prompt, the whole answer), one query read as it goes. Long answers are read from
    their files through a connection of their own (the query's holds its result; an answer file is
    never rewritten once an import committed it)."""
    result = conn.sql(
        f"""
        SELECT r.sample_id, r.correct, r.num_choices, {full_prompt("r")} AS prompt, r.question,
               r.response, r.prediction, r.gold, r.choices, r.doc_hash, r.prompt_tokens,
               r.completion_tokens, r.answer_status, r.response_ref
        FROM results r
        WHERE r.model_id = ? AND r.benchmark_id = ? AND r.seed = ?
        ORDER BY r.sample_id
        """,
        params=[model_id, unit.benchmark_id, unit.seed],
    ).to_arrow_reader(page_rows)
    answers = conn.cursor()
    try:
        for batch in result:
            page = batch.to_pylist()
            refs = [row.pop("response_ref") for row in page]
            texts = read_texts(answers, refs)
            for row, ref in zip(page, refs, strict=True):
                if ref is not None:
                    row["response"] = texts[ref]
            yield page
    finally:
        answers.close()
