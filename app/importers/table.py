"""The generic table importer: CSV, JSONL or Parquet with the columns of the public contract.

Required: ``benchmark, sample_id, correct`` and ``model`` (or ``--model NAME``). Optional: ``seed``
(default 0), ``category``, ``num_choices`` (empty = generative), ``prompt``, ``response``,
``prediction``, ``gold``, ``choices`` (a JSON list), ``doc_hash``. Other columns are ignored.
``correct`` is 0/1 or true/false; anything else is refused. Rows are numbered from 1 (the first
data row) in error messages.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from app.importers.common import NORMALIZED_SCHEMA, InputError, build_table

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


def read_table(path: Path, *, model: str | None = None) -> pa.Table:
    """Read a generic results table into the normalized schema (not yet validated for keys)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"{path}: unknown file type {path.suffix!r}; use .csv, .jsonl or .parquet")
    if path.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty; no rows to import")
    raw = {"csv": _read_csv, "jsonl": _read_jsonl, "parquet": _read_parquet}[fmt](path)
    return _normalize(raw, path.name, model)


def _read_csv(path: Path) -> pa.Table:
    with path.open("rb") as fh:
        first = fh.readline()
    try:
        header_line = first.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path.name}: not UTF-8 text (byte {exc.start} of the header); save it as UTF-8"
        ) from exc
    header = next(csv.reader(io.StringIO(header_line)), [])
    names = [h.strip() for h in header]
    if not any(names):
        raise InputError(
            f"{path.name}: the file has no header row; the first line must name the columns"
        )
    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=1, use_threads=True),
            # prompts and responses span lines inside quotes
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.string() for n in names},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:
        message = str(exc)
        if "UTF8" in message or "utf8" in message.lower():
            raise InputError(f"{path.name}: not UTF-8 text; save the file as UTF-8") from exc
        raise InputError(f"{path.name}: malformed CSV: {message.splitlines()[0]}") from exc
    return table


def _read_jsonl(path: Path) -> pa.Table:
    rows: list[dict] = []
    with path.open("rb") as fh:
        for number, line in enumerate(fh, start=1):
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{path.name}: line {number} is not UTF-8; save the file as UTF-8"
                ) from exc
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"{path.name}: line {number} is not valid JSON ({exc.msg})"
                ) from exc
            if not isinstance(record, dict):
                raise InputError(f"{path.name}: line {number} is not a JSON object")
            rows.append(record)
    if not rows:
        raise InputError(f"{path.name}: no rows to import (the file has only blank lines)")
    names = list(dict.fromkeys(key for row in rows for key in row))
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


def _read_parquet(path: Path) -> pa.Table:
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(
            f"{path.name}: not a readable Parquet file ({str(exc).splitlines()[0]})"
        ) from exc
    return table.rename_columns([c.strip() for c in table.column_names])


def _as_string(col: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_floating(col.type):
        # 3.0 -> "3", so integer-valued floats read like the integers they are
        as_int = pc.cast(col, pa.int64(), safe=False)
        exact = pc.equal(pc.cast(as_int, col.type), col)
        return pc.if_else(exact, pc.cast(as_int, pa.string()), pc.cast(col, pa.string()))
    if pa.types.is_boolean(col.type):
        return pc.if_else(col, "true", "false")
    return pc.cast(col, pa.string())


def _first_bad(mask: pa.ChunkedArray, values: pa.ChunkedArray) -> tuple[int, object]:
    row = pc.index(mask, True).as_py()
    return row + 1, values[row].as_py()


def _parse_correct(col: pa.ChunkedArray, source: str) -> pa.ChunkedArray:
    if pa.types.is_boolean(col.type):
        parsed = col
    else:
        text = pc.utf8_lower(pc.utf8_trim_whitespace(_as_string(col)))
        is_true = pc.is_in(text, pa.array(_TRUE))
        is_false = pc.is_in(text, pa.array(_FALSE))
        bad = pc.invert(pc.or_(is_true, is_false))
        if pc.any(bad).as_py():
            row, value = _first_bad(bad, col)
            raise InputError(
                f"{source}: row {row}: correct must be 0/1 or true/false, got {value!r}; "
                "non-binary scores cannot be counted as flips"
            )
        parsed = is_true
    if parsed.null_count:
        row, _ = _first_bad(pc.is_null(parsed), parsed)
        raise InputError(f"{source}: row {row}: correct is empty; it must be 0/1 or true/false")
    return parsed


def _parse_int(col: pa.ChunkedArray, name: str, source: str, *, nullable: bool) -> pa.ChunkedArray:
    if pa.types.is_integer(col.type):
        if not nullable and col.null_count:
            row, _ = _first_bad(pc.is_null(col), col)
            raise InputError(f"{source}: row {row}: {name} is empty; it must be an integer")
        return pc.cast(col, pa.int64())
    text = pc.utf8_trim_whitespace(_as_string(col))
    text = pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text)
    if not nullable and text.null_count:
        row, _ = _first_bad(pc.is_null(text), text)
        raise InputError(f"{source}: row {row}: {name} is empty; it must be an integer")
    ok = pc.match_substring_regex(text, r"^[+-]?\d+$")
    bad = pc.fill_null(pc.invert(ok), False)
    if pc.any(bad).as_py():
        row, value = _first_bad(bad, col)
        kind = "an integer (or empty for a generative item)" if nullable else "an integer"
        raise InputError(f"{source}: row {row}: {name} must be {kind}, got {value!r}")
    return pc.cast(text, pa.int64())


def _normalize(raw: pa.Table, source: str, model: str | None) -> pa.Table:
    present = set(raw.column_names)
    required = REQUIRED if model else ("model", *REQUIRED)
    missing = [c for c in required if c not in present]
    if missing:
        hint = " (or pass --model NAME)" if missing == ["model"] else ""
        raise InputError(
            f"{source}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}{hint}; "
            f"found: {', '.join(raw.column_names) or 'none'}"
        )
    n = raw.num_rows
    if n == 0:
        raise InputError(f"{source}: no rows to import (the file has only a header)")
    columns: dict[str, pa.ChunkedArray | pa.Array] = {}
    if "model" in present:
        names = pc.utf8_trim_whitespace(_as_string(raw["model"]))
        if model:
            others = [v for v in pc.unique(names).to_pylist() if v not in (None, "", model)]
            if others:
                raise InputError(
                    f"{source}: --model {model!r} given but the model column also names "
                    f"{', '.join(map(repr, others[:3]))}; drop --model or the column"
                )
            names = pc.fill_null(pc.if_else(pc.equal(names, ""), model, names), model)
        columns["model"] = names
    else:
        columns["model"] = pa.array([model] * n, type=pa.string())
    columns["benchmark"] = pc.utf8_trim_whitespace(_as_string(raw["benchmark"]))
    columns["sample_id"] = pc.utf8_trim_whitespace(_as_string(raw["sample_id"]))
    columns["correct"] = _parse_correct(raw["correct"], source)
    if "seed" in present:
        columns["seed"] = _parse_int(raw["seed"], "seed", source, nullable=False)
    else:
        columns["seed"] = pa.array([0] * n, type=pa.int32())
    if "num_choices" in present:
        columns["num_choices"] = _parse_int(
            raw["num_choices"], "num_choices", source, nullable=True
        )
    for name in TEXT_COLUMNS:
        if name in present:
            text = _as_string(raw[name])
            if name in ("category", "doc_hash"):
                text = pc.if_else(pc.equal(text, ""), pa.scalar(None, pa.string()), text)
            columns[name] = text
    table = build_table(columns)
    assert table.schema.names == NORMALIZED_SCHEMA.names
    return table
