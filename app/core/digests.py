"""Hex digests of many strings at once, computed by DuckDB (vectorized, on every core).

Hashing 564,000 question keys one by one with hashlib took about 1 s of a 2,000-question paper
import (bench/harness_import.py); DuckDB's ``md5`` gives the same digest (of the UTF-8 bytes, in
lower-case hex) in about a third of the time. The same in-memory database (one per process, a
connection per thread) also keys whole rows (``ascii_joined_md5_prefixes``) and hashes them for
duplicate checks (``distinct_within_groups``): nothing here touches the store.
"""

from __future__ import annotations

import threading

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from forgetmap.core.columns import one_array

_local = threading.local()
_opening = threading.Lock()
_database: list[duckdb.DuckDBPyConnection] = []  # the process's one in-memory database, once made


def _connection() -> duckdb.DuckDBPyConnection:
    """This thread's connection to the process's in-memory database. A new database costs about
    20 ms, a connection to it (a cursor) well under 1 ms, a query 0.3 ms: the lighteval reader's
    threads, new for every import, each take a connection, not a database."""
    con = getattr(_local, "con", None)
    if con is None:
        with _opening:
            if not _database:
                _database.append(duckdb.connect())
        con = _local.con = _database[0].cursor()
    return con


def _check_digits(digits: int) -> None:
    if not 1 <= digits <= 32:
        raise ValueError(f"digits must be in 1..32, got {digits!r}")


def md5_prefixes(texts: pa.Array, *, prefix: str, digits: int) -> pa.Array:
    """``prefix`` + the first ``digits`` hex digits of md5(text) for every string (null stays
    null), equal to ``prefix + hashlib.md5(text.encode()).hexdigest()[:digits]``."""
    _check_digits(digits)
    strings = pa.table({"text": texts.cast(pa.string())})  # noqa: F841 - DuckDB reads it by name
    hashed = (
        _connection()
        .sql(
            "SELECT $prefix || left(md5(text), $digits) AS key FROM strings",
            params={"prefix": prefix, "digits": digits},
        )
        .to_arrow_table()["key"]
    )
    return hashed.combine_chunks().cast(pa.string())


def ascii_joined_md5_prefixes(
    columns: pa.Table, *, separator: str, dropped: str, prefix: str, digits: int
) -> pa.Array:
    """Per row: ``prefix`` + the first ``digits`` hex digits of md5 of the row's string columns
    joined by ``separator`` (a null counts as ""), with each character of ``dropped`` removed and
    ASCII letters lower-cased, for rows whose joined text is pure ASCII; null for the others.

    Arrow joins, lower-cases and tells ASCII rows apart (byte kernels); DuckDB removes the
    characters and hashes, in one statement; Arrow cuts the digits. Each step goes where it is
    cheapest: DuckDB's ``concat_ws``, Unicode ``lower`` and ``length`` check cost more than the
    hashing (a paper import's keys in 33 tasks: 0.73 -> 0.56 CPU-seconds, medians of 7). Each
    distinct row is worked on once (Arrow's ``dictionary_encode`` of the joined parts): a task of
    the lighteval reader holds every seed of its questions, so most rows repeat (a paper import's
    ``identify``: 0.66 -> 0.37 CPU-seconds, medians of 7). Other rows are left to the caller
    because Unicode lower-casing differs between DuckDB and Python; on ASCII both give the same.
    ``dropped`` must be ASCII and not hold ``separator``."""
    _check_digits(digits)
    if not dropped.isascii() or separator in dropped:
        raise ValueError(f"dropped must be ASCII without the separator, got {dropped!r}")
    if not columns.num_rows:
        return pa.array([], pa.string())
    parts = [pc.fill_null(one_array(c).cast(pa.string()), "") for c in columns.itercolumns()]
    # each distinct row once: the seeds of a question repeat its row
    distinct = pc.dictionary_encode(pc.binary_join_element_wise(*parts, separator))
    joined = pc.ascii_lower(distinct.dictionary)
    dropped = _occurring(joined, dropped)
    normalized = "joined"
    for char in dropped:  # nested replace beats regexp_replace and translate here (measured)
        normalized = f"replace({normalized}, chr({ord(char)}), '')"
    rows = pa.table({"joined": joined})  # noqa: F841 - DuckDB reads it by name
    hashed = (
        _connection()
        .sql(f"SELECT md5({normalized}) AS digest FROM rows")
        .to_arrow_table()["digest"]
        .combine_chunks()
        .cast(pa.string())
    )
    keys = pc.binary_join_element_wise(prefix, pc.utf8_slice_codeunits(hashed, 0, digits), "")
    keys = pc.if_else(pc.string_is_ascii(joined), keys, pa.nulls(len(keys), pa.string()))
    return keys.take(distinct.indices)


def _occurring(texts: pa.Array, chars: str) -> str:
    """The characters of ``chars`` (ASCII) that some string of ``texts`` holds: each one costs
    the statement a pass of ``replace`` over every row (about 35 ms at 564,000 rows) and most
    never occur; a byte search of the strings' data finds them (0.03-0.12 s for all of a paper
    import's keys, measured; the replace passes saved about 0.25 s)."""
    offsets, data = texts.buffers()[1:3]
    if data is None or not len(texts):
        return ""
    # the array's own bytes: a slice's data buffer is its parent's whole buffer
    bounds = np.frombuffer(offsets, np.int32, len(texts) + 1, texts.offset * 4)
    start, stop = int(bounds[0]), int(bounds[-1])
    raw = data.slice(start, stop - start).to_pybytes()
    return "".join(c for c in chars if raw.find(c.encode()) >= 0)


def distinct_within_groups(groups: np.ndarray, texts: pa.Array | pa.ChunkedArray) -> bool:
    """True when no two rows share both their group (integer codes, one per row) and their text,
    proved by distinct 64-bit DuckDB hashes of (text, group); False when two hashes are equal
    (usually a real duplicate; two different pairs hash alike with chance 2**-64 each): then the
    caller checks exactly. Hashing and sorting 564,000 sample ids takes about 35 ms; coding them
    by value (the exact check) about 115 ms."""
    if len(groups) != len(texts):
        raise ValueError(f"{len(groups)} groups for {len(texts)} texts")
    if len(groups) < 2:
        return True
    rows = pa.table({"text": texts, "grp": pa.array(np.asarray(groups, np.int64))})  # noqa: F841
    hashed = np.sort(_connection().sql("SELECT hash(text, grp) AS h FROM rows").fetchnumpy()["h"])
    return not bool((hashed[1:] == hashed[:-1]).any())
