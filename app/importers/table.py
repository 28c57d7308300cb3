"""The generic table importer: CSV, JSONL or Parquet with the columns of the public contract.

Required: ``benchmark, sample_id, correct`` and ``model`` (or ``--model NAME``). Optional: ``seed``
(default 0), ``category``, ``num_choices`` (empty = generative), ``prompt``, ``response``,
``prediction``, ``gold``, ``choices`` (a JSON list), ``doc_hash``, ``answer_status`` (one of
``forgetmap.core.answer_status.STATUSES``; empty = not said) and the older ``truncated`` (0/1: 1
is the status ``truncated``). Where neither says, a row with a ``response`` and an empty
``prediction`` is ``no_answer`` (``_answer_status``). Other columns are ignored.
``correct`` is 0/1 or true/false; anything else is refused. Rows are numbered from 1 (the first
data row) in error messages.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from forgetmap.contract.limits import MAX_SEED, MIN_SEED, seed_problem
from forgetmap.core.answer_status import ANSWERED, NO_ANSWER, STATUSES, TRUNCATED
from forgetmap.core.columns import dictionary_codes, map_values
from forgetmap.importers.common import (
    MAX_JSON_DEPTH,
    MAX_LINE_BYTES,
    NORMALIZED_SCHEMA,
    InputError,
    build_table,
    deeper_than,
    json_lines,
)

REQUIRED = ("benchmark", "sample_id", "correct")
TEXT_COLUMNS = ("category", "prompt", "response", "prediction", "gold", "choices", "doc_hash")
FORMATS = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_TRUE = ("1", "1.0", "true")
_FALSE = ("0", "0.0", "false")
# columns with few distinct values (or short repeated ones): Parquet string columns among these are
# read dictionary-encoded, so trimming, parsing and checks run once per distinct value
DICTIONARY_COLUMNS = (
    "model",
    "benchmark",
    "sample_id",
    "category",
    "correct",
    "seed",
    "num_choices",
)


BATCH_ROWS = 200_000
"""Rows of a table file read, checked and stored at a time: an import's memory holds one batch."""
BATCH_BYTES = 64 << 20
"""...or fewer rows, once they hold this many bytes (long answers): a batch stays this small."""
MAX_TABLE_COLUMNS = 1_000
"""Columns a table file may have: forgetmap reads 16, and a wider file is refused before its rows
are read (each column costs memory and time whether it is read or not)."""
MAX_HEADER_BYTES = 1 << 20
"""Bytes a CSV file's header line may have (1 MiB: 1,000 names of 1,000 characters)."""
MAX_PARQUET_FOOTER_BYTES = 16 << 20
"""Bytes a Parquet file's footer (its schema and row-group index) may have: reading it takes
about 15 times as much memory, and 1,000 columns in 100 row groups need about 20 MB less."""
NUM_CHOICES_MAX = (1 << 15) - 1
"""The most options a row may have (``num_choices`` is stored as int16)."""


def iter_table(
    path: Path, *, model: str | None = None, batch_rows: int | None = None
) -> Iterator[pa.Table]:
    """Read a generic results table into the normalized schema (not yet validated for keys),
    ``batch_rows`` rows at a time (``BATCH_ROWS``): Parquet by record batches, CSV by blocks,
    JSON lines by lines. Rows are numbered across batches in messages."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"{path}: unknown file type {path.suffix!r}; use .csv, .jsonl or .parquet")
    if path.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty; no rows to import")
    size = batch_rows or BATCH_ROWS
    reader = {"csv": _csv_batches, "jsonl": _jsonl_batches, "parquet": _parquet_batches}[fmt]
    first_row = 1
    for raw in _rebatched(reader(path, size), size):
        yield _normalize(raw, path.name, model, first_row)
        first_row += raw.num_rows
    if first_row == 1:
        message = {"jsonl": "the file has only blank lines"}.get(fmt, "the file has only a header")
        raise InputError(f"{path.name}: no rows to import ({message})")


def read_table(path: Path, *, model: str | None = None) -> pa.Table:
    """``iter_table``'s batches as one table (tests and small tools; imports stream)."""
    return pa.concat_tables(iter_table(path, model=model)).unify_dictionaries()


def _rebatched(tables: Iterator[pa.Table], size: int) -> Iterator[pa.Table]:
    """The rows of ``tables`` in tables of ``size`` rows (the last one fewer), none empty; fewer
    rows where they hold ``BATCH_BYTES`` before (a table of long answers)."""
    waiting: list[pa.Table] = []
    held = held_bytes = 0
    for table in tables:
        while table.num_rows:
            take = min(size - held, table.num_rows)
            waiting.append(table.slice(0, take))
            held += take
            held_bytes += waiting[-1].nbytes
            table = table.slice(take)
            if held == size or held_bytes >= BATCH_BYTES:
                yield pa.concat_tables(waiting).unify_dictionaries()
                waiting, held, held_bytes = [], 0, 0
    if held:
        yield pa.concat_tables(waiting).unify_dictionaries()


def _too_wide(source: str, count: int, more: bool = False) -> InputError:
    return InputError(
        f"{source}: the file has {'more than ' if more else ''}{count:,} columns; a table may "
        f"have at most {MAX_TABLE_COLUMNS:,} (forgetmap reads model, benchmark, sample_id, "
        "correct, seed and a few more: docs/formats.md); leave the other columns out"
    )


def _csv_header(path: Path) -> list[str]:
    """The names of a CSV file's columns, from a bounded read of its first line."""
    with path.open("rb") as fh:
        first = fh.readline(MAX_HEADER_BYTES + 1)
    whole = len(first) <= MAX_HEADER_BYTES or first[MAX_HEADER_BYTES:] == b"\n"
    if not whole:
        first = first[: first.rfind(b",") + 1]  # the names read in full, to count them
    try:
        header_line = first.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path.name}: not UTF-8 text (byte {exc.start} of the header); save it as UTF-8"
        ) from exc
    names = [h.strip() for h in next(csv.reader(io.StringIO(header_line)), [])]
    if len(names) > MAX_TABLE_COLUMNS:
        raise _too_wide(path.name, len(names) - (not whole), more=not whole)
    if not whole:
        raise InputError(
            f"{path.name}: the header line is longer than {MAX_HEADER_BYTES:,} bytes (1 MiB), "
            "the most it may have; shorten the column names"
        )
    return names


def _csv_batches(path: Path, size: int) -> Iterator[pa.Table]:
    names = _csv_header(path)
    if not any(names):
        raise InputError(
            f"{path.name}: the file has no header row; the first line must name the columns"
        )
    try:
        reader = pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(
                column_names=names, skip_rows=1, use_threads=True, block_size=CSV_BLOCK_BYTES
            ),
            # prompts and responses span lines inside quotes
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.string() for n in names},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
        for batch in reader:
            yield pa.Table.from_batches([batch])
    except pa.ArrowInvalid as exc:
        message = str(exc)
        if "UTF8" in message or "utf8" in message.lower():
            raise InputError(f"{path.name}: not UTF-8 text; save the file as UTF-8") from exc
        # Arrow's message quotes the row, which may be long
        raise InputError(
            f"{path.name}: malformed CSV: {_clipped(message.splitlines()[0])}"
        ) from exc


def _clipped(message: str, most: int = 300) -> str:
    """At most ``most`` characters of a reader's message (Arrow quotes whole rows)."""
    return message if len(message) <= most else message[:most] + "..."


CSV_BLOCK_BYTES = 16 << 20
"""Bytes of a CSV file parsed at a time (a quoted value must fit in one)."""


def _jsonl_batches(path: Path, size: int) -> Iterator[pa.Table]:
    rows: list[dict] = []
    names: dict[str, None] = {}  # every key of the batch's rows, in order
    held = 0
    for _, record, length in json_lines(path, path.name):
        rows.append(record)
        held += length
        if len(record) > MAX_TABLE_COLUMNS:
            raise _too_wide(path.name, len(record))
        names.update(dict.fromkeys(record))
        if len(names) > MAX_TABLE_COLUMNS:
            raise _too_wide(path.name, MAX_TABLE_COLUMNS, more=True)
        if len(rows) == size or held >= BATCH_BYTES:
            yield _json_table(rows, list(names))
            rows, names, held = [], {}, 0
    if rows:
        yield _json_table(rows, list(names))


def _json_table(rows: list[dict], names: list[str]) -> pa.Table:
    return pa.table(
        {n: pa.array([_json_cell(row.get(n)) for row in rows], type=pa.string()) for n in names}
    )


def _json_cell(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _parquet_footer_bytes(path: Path) -> int | None:
    """The length its last 8 bytes give a Parquet file's footer; None if they do not end "PAR1"."""
    with path.open("rb") as fh:
        fh.seek(max(0, path.stat().st_size - 8))
        tail = fh.read(8)
    if len(tail) < 8 or tail[4:] != b"PAR1":
        return None
    return int.from_bytes(tail[:4], "little")


def _parquet_batches(path: Path, size: int) -> Iterator[pa.Table]:
    footer = _parquet_footer_bytes(path)
    if footer is not None and footer > MAX_PARQUET_FOOTER_BYTES:
        raise InputError(
            f"{path.name}: the Parquet footer (its schema and row-group index) has {footer:,} "
            f"bytes, over the {MAX_PARQUET_FOOTER_BYTES:,} (16 MiB) a table's may have; write "
            f"at most {MAX_TABLE_COLUMNS:,} columns, in larger row groups"
        )
    try:
        parquet = pq.ParquetFile(path)
        if parquet.metadata.num_columns > MAX_TABLE_COLUMNS:
            raise _too_wide(path.name, parquet.metadata.num_columns)
        wanted = {c.strip() for c in DICTIONARY_COLUMNS}
        as_dictionary = [
            f.name
            for f in parquet.schema_arrow
            if f.name.strip() in wanted
            and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type))
        ]
        if as_dictionary:
            parquet = pq.ParquetFile(path, read_dictionary=as_dictionary)
        for batch in parquet.iter_batches(batch_size=size):
            table = pa.Table.from_batches([batch])
            yield table.rename_columns([c.strip() for c in table.column_names])
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(
            f"{path.name}: not a readable Parquet file ({_clipped(str(exc).splitlines()[0])})"
        ) from exc


def _as_string(col: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_dictionary(col.type):
        return map_values(col, _as_string)
    if pa.types.is_floating(col.type):
        # 3.0 -> "3", so integer-valued floats read like the integers they are
        as_int = pc.cast(col, pa.int64(), safe=False)
        exact = pc.equal(pc.cast(as_int, col.type), col)
        return pc.if_else(exact, pc.cast(as_int, pa.string()), pc.cast(col, pa.string()))
    if pa.types.is_boolean(col.type):
        return pc.if_else(col, "true", "false")
    return pc.cast(col, pa.string())


def _trimmed(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Whitespace-trimmed strings; a dictionary column trims its values, not every row."""
    return map_values(_as_string(col), pc.utf8_trim_whitespace)


def _first_bad(
    mask: pa.ChunkedArray, values: pa.ChunkedArray, first_row: int
) -> tuple[int, object]:
    """(the number of the first row ``mask`` marks, counting the batch's first as ``first_row``;
    its value)."""
    row = pc.index(mask, True).as_py()
    value = values[row].as_py()
    if isinstance(value, str) and len(value) > 60:  # a 5,000-digit "seed" is not told back whole
        value = value[:60] + "..."
    return row + first_row, value


def _binary_codes(values: pa.Array) -> pa.Array:
    """1 true, 0 false, -1 anything else (a null value too, as before: "got None")."""
    text = pc.utf8_lower(pc.utf8_trim_whitespace(_as_string(values)))
    is_true = pc.is_in(text, pa.array(_TRUE))
    is_false = pc.is_in(text, pa.array(_FALSE))
    return pc.if_else(is_true, 1, pc.if_else(is_false, 0, -1)).cast(pa.int8())


def _parse_correct(col: pa.ChunkedArray, source: str, first_row: int) -> pa.ChunkedArray:
    if pa.types.is_boolean(col.type):
        parsed = col
    else:
        kind = map_values(col, _binary_codes)  # per distinct value when dictionary-encoded
        bad = pc.fill_null(pc.equal(kind, -1), True)
        if pc.any(bad).as_py():
            row, value = _first_bad(bad, col, first_row)
            raise InputError(
                f"{source}: row {row}: correct must be 0/1 or true/false, got {value!r}; "
                "non-binary scores cannot be counted as flips"
            )
        parsed = pc.equal(kind, 1)
    if parsed.null_count:
        row, _ = _first_bad(pc.is_null(parsed), parsed, first_row)
        raise InputError(f"{source}: row {row}: correct is empty; it must be 0/1 or true/false")
    return parsed


def _parse_flag(col: pa.ChunkedArray, name: str, source: str, first_row: int) -> pa.ChunkedArray:
    """An optional 0/1 or true/false column; empty is null (not said)."""
    if pa.types.is_boolean(col.type):
        return col

    def classify(values: pa.Array) -> pa.Array:
        empty = pc.equal(pc.utf8_trim_whitespace(_as_string(values)), "")
        return pc.if_else(empty, pa.scalar(None, pa.int8()), _binary_codes(values))

    kind = map_values(col, classify)
    bad = pc.fill_null(pc.equal(kind, -1), False)
    if pc.any(bad).as_py():
        row, value = _first_bad(bad, col, first_row)
        raise InputError(
            f"{source}: row {row}: {name} must be 0/1 or true/false (or empty), got {value!r}"
        )
    return pc.equal(kind, 1)


# an integer of at most 18 digits (leading zeros aside): it fits int64, so the cast cannot fail;
# a longer one is refused as not an integer
_INTEGER = r"^[+-]?0*\d{1,18}$"


def _check_seeds(seeds: pa.ChunkedArray, source: str, first_row: int) -> None:
    """Seeds in the range every entry point takes (forgetmap.contract.limits.seed_problem): 0 up, an
    INTEGER."""
    bad = pc.or_(pc.less(seeds, MIN_SEED), pc.greater(seeds, MAX_SEED))
    if pc.any(bad).as_py():
        row, value = _first_bad(bad, seeds, first_row)
        raise InputError(f"{source}: row {row}: {seed_problem(cast(int, value))}")  # int column


def _parse_int(
    col: pa.ChunkedArray, name: str, source: str, first_row: int, *, nullable: bool
) -> pa.ChunkedArray:
    if pa.types.is_integer(col.type):
        if not nullable and col.null_count:
            row, _ = _first_bad(pc.is_null(col), col, first_row)
            raise InputError(f"{source}: row {row}: {name} is empty; it must be an integer")
        return pc.cast(col, pa.int64())
    if pa.types.is_dictionary(col.type) and not col.null_count:
        # parse each distinct value once, then check and take per row (same messages)
        parsed = map_values(col, lambda values: _parse_int_values(values))
        if not nullable and parsed.null_count:
            row, _ = _first_bad(pc.is_null(parsed), col, first_row)
            raise InputError(f"{source}: row {row}: {name} is empty; it must be an integer")
        bad = pc.equal(parsed, _BAD_INT)
        if pc.any(bad).as_py():
            row, value = _first_bad(pc.fill_null(bad, False), col, first_row)
            kind = "an integer (or empty for a generative item)" if nullable else "an integer"
            raise InputError(f"{source}: row {row}: {name} must be {kind}, got {value!r}")
        return parsed
    text = pc.utf8_trim_whitespace(_as_string(col))
    text = pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text)
    if not nullable and text.null_count:
        row, _ = _first_bad(pc.is_null(text), text, first_row)
        raise InputError(f"{source}: row {row}: {name} is empty; it must be an integer")
    ok = pc.match_substring_regex(text, _INTEGER)
    bad = pc.fill_null(pc.invert(ok), False)
    if pc.any(bad).as_py():
        row, value = _first_bad(bad, col, first_row)
        kind = "an integer (or empty for a generative item)" if nullable else "an integer"
        raise InputError(f"{source}: row {row}: {name} must be {kind}, got {value!r}")
    return pc.cast(_without_plus(text), pa.int64())


def _without_plus(text):
    """ "+3" -> "3": the pattern accepts a sign, Arrow's integer cast only a minus."""
    if pc.any(pc.starts_with(text, "+")).as_py():
        return pc.replace_substring_regex(text, r"^\+", "")
    return text


# marks a value that is not an integer (int64 min: no seed or option count is that)
_BAD_INT = -(2**63)


def _parse_int_values(values: pa.Array) -> pa.Array:
    """Distinct values -> int64: empty -> null, not an integer -> _BAD_INT."""
    text = pc.utf8_trim_whitespace(_as_string(values))
    text = pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text)
    ok = pc.match_substring_regex(text, _INTEGER)
    good = pc.fill_null(ok, False)
    safe = pc.if_else(good, text, pa.scalar("0", pa.string()))
    number = pc.cast(_without_plus(pc.fill_null(safe, "0")), pa.int64())
    return pc.if_else(
        good, number, pc.if_else(pc.is_null(text), pa.scalar(None, pa.int64()), _BAD_INT)
    )


def _normalize(raw: pa.Table, source: str, model: str | None, first_row: int = 1) -> pa.Table:
    """One batch of a table file in the normalized columns; rows numbered from ``first_row``."""
    present = set(raw.column_names)
    required = REQUIRED if model else ("model", *REQUIRED)
    missing = [c for c in required if c not in present]
    if missing:
        hint = " (or pass --model NAME)" if missing == ["model"] else ""
        raise InputError(
            f"{source}: missing column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)}{hint}; found: {_names(raw.column_names)}"
        )
    n = raw.num_rows
    if n == 0:
        raise InputError(f"{source}: no rows to import (the file has only a header)")
    columns: dict[str, pa.ChunkedArray | pa.Array] = {}
    if "model" in present:
        names = raw["model"]
        if pa.types.is_dictionary(names.type) and names.null_count:
            names = pc.cast(names, names.type.value_type)  # rare: nulls take the plain path
        names = _trimmed(names)
        if model:
            others = [v for v in _distinct(names) if v not in (None, "", model)]
            if others:
                raise InputError(
                    f"{source}: --model {model!r} given but the model column also names "
                    f"{', '.join(map(repr, others[:3]))}; drop --model or the column"
                )
            if pa.types.is_dictionary(names.type):
                names = map_values(
                    names, lambda v: pc.if_else(pc.equal(v, ""), model, v).cast(pa.string())
                )
            else:
                names = pc.fill_null(pc.if_else(pc.equal(names, ""), model, names), model)
        columns["model"] = names
    else:
        columns["model"] = pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(n, np.int32)), pa.array([model], pa.string())
        )
    columns["benchmark"] = _trimmed(raw["benchmark"])
    columns["sample_id"] = _trimmed(raw["sample_id"])
    columns["correct"] = _parse_correct(raw["correct"], source, first_row)
    if "seed" in present:
        columns["seed"] = _parse_int(raw["seed"], "seed", source, first_row, nullable=False)
        _check_seeds(columns["seed"], source, first_row)
    else:
        columns["seed"] = pa.array(np.zeros(n, np.int32))
    if "num_choices" in present:
        columns["num_choices"] = _parse_int(
            raw["num_choices"], "num_choices", source, first_row, nullable=True
        )
        _check_most(columns["num_choices"], "num_choices", NUM_CHOICES_MAX, source, first_row)
    for name in TEXT_COLUMNS:
        if name in present:
            text = _as_string(raw[name])
            if name in ("category", "doc_hash"):
                text = map_values(
                    text, lambda v: pc.if_else(pc.equal(v, ""), pa.scalar(None, pa.string()), v)
                )
            if not pa.types.is_dictionary(text.type):
                _check_most(
                    pc.binary_length(text), name, MAX_LINE_BYTES, source, first_row, unit=" bytes"
                )
            if name == "choices":
                _check_nesting(text, source, first_row)
            columns[name] = text
    columns["answer_status"] = _answer_status(raw, columns, source, first_row)
    table = build_table(columns)
    assert table.schema.names == NORMALIZED_SCHEMA.names
    return table


def _answer_status(
    raw: pa.Table, columns: dict, source: str, first_row: int
) -> pa.ChunkedArray | None:
    """Each row's status: its ``answer_status``; else ``truncated`` where the older
    ``truncated`` column is 1; else, where the file has both a ``response`` and a ``prediction``
    column, ``no_answer`` for a wrong row with a response and no prediction (nothing was
    extracted from its text) and ``answered`` for one with both (or a right one with a
    response); else null. A ``truncated`` that contradicts the ``answer_status`` is refused."""
    present = set(raw.column_names)
    given = cut = None
    if "answer_status" in present:
        given = _parse_status(raw["answer_status"], source, first_row)
    if "truncated" in present:
        cut = _parse_flag(raw["truncated"], "truncated", source, first_row)
    if given is not None and cut is not None:
        says_cut = pc.equal(given, TRUNCATED)
        clash = pc.fill_null(pc.not_equal(says_cut, cut), False)
        if pc.any(clash).as_py():
            row, value = _first_bad(clash, given, first_row)
            raise InputError(
                f"{source}: row {row}: truncated is {int(cut[row - first_row].as_py())} but "
                f"answer_status is {value!r}; leave one of them empty, or make them agree "
                f"(truncated 1 is answer_status {TRUNCATED})"
            )
    status = given
    if cut is not None:
        said = pc.if_else(cut, TRUNCATED, pa.scalar(None, pa.string()))
        status = said if status is None else pc.coalesce(status, said)
    if "response" in columns and "prediction" in columns:
        answered = _non_empty(columns["response"])
        found = pc.or_(_non_empty(columns["prediction"]), columns["correct"])
        nothing = pa.scalar(None, pa.string())
        inferred = pc.if_else(answered, pc.if_else(found, ANSWERED, NO_ANSWER), nothing)
        status = inferred if status is None else pc.coalesce(status, inferred)
    return status


def _parse_status(col: pa.ChunkedArray, source: str, first_row: int) -> pa.ChunkedArray:
    """An ``answer_status`` column: one of ``STATUSES`` (any case, spaces around), empty null."""
    text = pc.utf8_lower(pc.cast(_trimmed(col), pa.string()))
    text = pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text)
    bad = pc.and_(pc.is_valid(text), pc.invert(pc.is_in(text, pa.array(STATUSES))))
    if pc.any(bad).as_py():
        row, value = _first_bad(bad, col, first_row)
        raise InputError(
            f"{source}: row {row}: answer_status must be one of {', '.join(STATUSES)} (or "
            f"empty), got {value!r}"
        )
    return text


def _non_empty(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Per row: whether a text column holds more than spaces (null: no)."""
    text = pc.cast(col, pa.string()) if pa.types.is_dictionary(col.type) else col
    return pc.fill_null(pc.not_equal(pc.utf8_trim_whitespace(text), ""), False)


def _names(names: list[str], most: int = 20) -> str:
    """The first ``most`` column names, for a message ("none" for none)."""
    shown = ", ".join(_clipped(n, 60) for n in names[:most]) or "none"
    return shown + (f" and {len(names) - most:,} more" if len(names) > most else "")


def _check_most(
    values: pa.ChunkedArray, name: str, most: int, source: str, first_row: int, unit: str = ""
) -> None:
    """Refuse the first row whose value (a number, or a text's length) is over ``most``."""
    over = pc.fill_null(pc.greater(values, most), False)
    if pc.any(over).as_py():
        row, value = _first_bad(over, values, first_row)
        raise InputError(
            f"{source}: row {row}: {name} is {value:,}{unit}, over the {most:,}{unit} it may be"
        )


def _check_nesting(choices: pa.ChunkedArray, source: str, first_row: int) -> None:
    """Refuse a ``choices`` text nested deeper than a JSON line may be (the pages parse it); only
    values with that many brackets are parsed here."""
    if pa.types.is_dictionary(choices.type):
        choices = pc.cast(choices, choices.type.value_type)
    brackets = pc.add(pc.count_substring(choices, "["), pc.count_substring(choices, "{"))
    suspect = pc.fill_null(pc.greater(brackets, MAX_JSON_DEPTH), False)
    if not pc.any(suspect).as_py():
        return
    for row in pc.indices_nonzero(suspect).to_pylist():
        try:
            too_deep = deeper_than(json.loads(choices[row].as_py()), MAX_JSON_DEPTH)
        except RecursionError:
            too_deep = True
        except ValueError:  # not JSON: kept as the one option it reads as
            too_deep = False
        if too_deep:
            raise InputError(
                f"{source}: row {row + first_row}: choices nests lists more than "
                f"{MAX_JSON_DEPTH} deep; it must be a JSON list of the options' texts"
            )


def _distinct(col: pa.ChunkedArray) -> list:
    if pa.types.is_dictionary(col.type) and not col.null_count:
        return dictionary_codes(col)[1].to_pylist()
    return pc.unique(col).to_pylist()
