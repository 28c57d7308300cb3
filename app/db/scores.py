"""Named score sets (``score_sets``, ``rescored``): every read and write of them, and the stored
answers a rescoring reads (``forgetmap.services.rescore``; migration 0014 says why they are kept
beside ``results``, never in it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from forgetmap.db.store import Connection, one_row

if TYPE_CHECKING:
    import pyarrow as pa

RESCORED_COLUMNS = (
    "model_id",
    "benchmark_id",
    "seed",
    "sample_id",
    "prediction",
    "correct",
    "answer_status",
    "rule",
)
"""What a batch of graded rows holds (``insert_rescored``), besides its set's id."""

ANSWER_COLUMNS = (
    "model_id",
    "benchmark_id",
    "seed",
    "sample_id",
    "correct",
    "num_choices",
    "response",
    "response_ref",
    "gold",
    "choices",
    "answer_status",
)
"""What ``answer_batches`` reads of each stored result."""


def model_id(conn: Connection, name: str) -> int | None:
    row = conn.execute("SELECT id FROM models WHERE name = ?", [name]).fetchone()
    return None if row is None else row[0]


def benchmark_id(conn: Connection, name: str) -> int | None:
    row = conn.execute("SELECT id FROM benchmarks WHERE name = ?", [name]).fetchone()
    return None if row is None else row[0]


def score_set(conn: Connection, name: str) -> tuple[int, str] | None:
    """(id, extractor) of the score set called ``name``, or None."""
    return conn.execute("SELECT id, extractor FROM score_sets WHERE name = ?", [name]).fetchone()


def create_score_set(conn: Connection, name: str, extractor: str) -> int:
    """A new, empty score set; its id."""
    return int(
        one_row(
            conn.execute(
                "INSERT INTO score_sets (name, extractor) VALUES (?, ?) RETURNING id",
                [name, extractor],
            ).fetchone()
        )[0]
    )


def clear_score_set(conn: Connection, set_id: int, extractor: str) -> None:
    """Empty a score set, to be written again by ``extractor`` (its id and name kept: a row
    deleted and inserted again with the same unique name in one transaction is refused)."""
    conn.execute("DELETE FROM rescored WHERE score_set_id = ?", [set_id])
    conn.execute(
        "UPDATE score_sets SET extractor = ?, created_at = now(), rows = 0 WHERE id = ?",
        [extractor, set_id],
    )


def insert_rescored(conn: Connection, set_id: int, rows: pa.Table) -> None:
    """One batch of graded rows (``RESCORED_COLUMNS``) into the set, through a relation (as
    ``forgetmap.db.ingest`` writes results)."""
    columns = ", ".join(RESCORED_COLUMNS)
    conn.from_arrow(rows.select(list(RESCORED_COLUMNS))).query(
        "graded", f"INSERT INTO rescored SELECT {int(set_id)}, {columns} FROM graded"
    )


def finish_score_set(conn: Connection, set_id: int) -> int:
    """Record how many rows the set holds; that count."""
    (count,) = one_row(
        conn.execute("SELECT count(*) FROM rescored WHERE score_set_id = ?", [set_id]).fetchone()
    )
    conn.execute("UPDATE score_sets SET rows = ? WHERE id = ?", [count, set_id])
    return int(count)


def score_sets(conn: Connection) -> list[tuple[Any, ...]]:
    """(name, extractor, rows, created_at) of every score set, by name."""
    return conn.execute(
        "SELECT name, extractor, rows, created_at FROM score_sets ORDER BY name"
    ).fetchall()


def rescored_rows(conn: Connection, name: str) -> list[tuple[Any, ...]]:
    """(model, benchmark, seed, sample_id, prediction, correct, answer_status, rule) of every row
    of the set called ``name``, in key order."""
    return conn.execute(
        """
        SELECT m.name, b.name, r.seed, r.sample_id, r.prediction, r.correct, r.answer_status,
               r.rule
        FROM rescored r JOIN score_sets s ON s.id = r.score_set_id
        JOIN models m ON m.id = r.model_id JOIN benchmarks b ON b.id = r.benchmark_id
        WHERE s.name = ? ORDER BY 1, 2, 3, 4
        """,
        [name],
    ).fetchall()


def answer_batches(
    conn: Connection,
    *,
    model_ids: list[int] | None,
    benchmark_ids: list[int] | None,
    batch_rows: int,
) -> Iterator[pa.RecordBatch]:
    """The stored results (``ANSWER_COLUMNS``) of the given models and benchmarks (every one for
    None), streamed ``batch_rows`` at a time in storage order: memory holds one batch."""
    where, params = [], []
    if model_ids is not None:
        where.append("model_id IN (SELECT unnest(?::INTEGER[]))")
        params.append(model_ids)
    if benchmark_ids is not None:
        where.append("benchmark_id IN (SELECT unnest(?::INTEGER[]))")
        params.append(benchmark_ids)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    yield from conn.sql(
        f"SELECT {', '.join(ANSWER_COLUMNS)} FROM results{clause}", params=params
    ).to_arrow_reader(batch_rows)
