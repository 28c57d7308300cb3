"""What every importer produces: one normalized Arrow table of per-sample results.

Each reader (generic table, lm-eval-harness, lighteval) parses its own format and returns a
``pyarrow.Table`` with exactly the columns of ``NORMALIZED_SCHEMA``. Validation that does not depend
on the source format (binary ``correct``, duplicate keys, empty input) happens once, in
``validate_normalized``; the store then writes the table in one transaction.

String columns may arrive dictionary-encoded (``dictionary<int32, string>``, e.g. name columns read
from Parquet): they hold the same values, and per-value work (trimming, canonical names, checks)
then runs once per distinct value instead of once per row. ``dictionary_codes`` turns such a column
(or a plain one) into integer codes for the store's key checks.

Problems with the user's input raise ``InputError`` with a one-line message that names the problem
and, where possible, how to fix it. The CLI prints it as ``error: <message>`` and exits 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from forgetmap.core.columns import dictionary_codes, distinct_pairs, map_values, rows_where
from forgetmap.core.errors import InputError
from forgetmap.core.sample_identity import question_from_prompts
from forgetmap.core.taxonomy import (
    NOT_SCORED,
    UNCATEGORIZED,
    BenchmarkMeta,
    canonical_name,
    lookup,
    not_scored_benchmarks,
)

NORMALIZED_SCHEMA = pa.schema(
    [
        pa.field("model", pa.string(), nullable=False),
        pa.field("benchmark", pa.string(), nullable=False),
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("seed", pa.int32(), nullable=False),
        pa.field("correct", pa.bool_(), nullable=False),
        # number of options shown for this sample; null = generative (no options)
        pa.field("num_choices", pa.int16()),
        # category given by the source; the taxonomy wins for benchmarks it knows
        pa.field("category", pa.string()),
        pa.field("prompt", pa.string()),
        pa.field("response", pa.string()),
        pa.field("prediction", pa.string()),
        pa.field("gold", pa.string()),
        # JSON list of the option texts shown, when the source has them
        pa.field("choices", pa.string()),
        # content hash of the source document (lm-eval's doc_hash), to detect mismatched ids
        pa.field("doc_hash", pa.string()),
        # token counts of the prompt and the response, when an engine produced them
        pa.field("prompt_tokens", pa.int32()),
        pa.field("completion_tokens", pa.int32()),
        # the question part of the prompt, without the template (few-shot block, instructions)
        pa.field("question", pa.string()),
        # the prompt's template when the reader settled it (lighteval, per details file): the
        # row's whole prompt is then prompt_prefix + (prompt, or the question where prompt is
        # null) + prompt_suffix, as the store keeps it (app/core/prompt_templates.py); null:
        # ``prompt`` is whole, and the store finds the templates itself
        pa.field("prompt_prefix", pa.string()),
        pa.field("prompt_suffix", pa.string()),
        # why the answer is what it is: one of forgetmap.core.answer_status.STATUSES
        # (answered, no_answer, truncated, refused), or null where the source does not say
        pa.field("answer_status", pa.string()),
    ]
)

KEY_COLUMNS = ("model", "benchmark", "sample_id", "seed")

WHOLE_UNITS = b"forgetmap.whole_units"
"""Schema metadata a reader puts on a batch that holds every row of each of its (model,
benchmark, seed) units (``whole_units``): the store then keeps none of its keys to check
against later batches (``forgetmap.db.ingest.Ingest``). A batch without it is checked."""


def whole_units(table: pa.Table) -> pa.Table:
    """``table`` marked as holding whole units (``WHOLE_UNITS``)."""
    return table.replace_schema_metadata({**(table.schema.metadata or {}), WHOLE_UNITS: b"1"})


def holds_whole_units(table: pa.Table) -> bool:
    """Whether a reader marked ``table`` as holding whole units (``WHOLE_UNITS``)."""
    return (table.schema.metadata or {}).get(WHOLE_UNITS) == b"1"


def files_at(
    path: Path,
    *,
    pattern: str,
    kind: str,
    one: str,
    expected: str,
    is_one: Callable[[Path], bool],
    below: Callable[[Path], bool] = lambda _: True,
) -> list[Path]:
    """The files an import reads at ``path``: the file itself when ``is_one`` takes it, or the
    files below a folder that match ``pattern`` and ``below``, sorted. Otherwise one line that
    says what was there and what was ``expected`` (``kind``: what the files are, plural; ``one``:
    what the given file is not)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory (expected {expected})")
    if path.is_dir():
        files = sorted(p for p in path.rglob(pattern) if p.is_file() and below(p))
        if not files:
            raise InputError(f"{path}: no {kind} found; expected {expected}")
        return files
    if not is_one(path):
        raise InputError(f"{path}: not {one}; expected {expected}")
    return [path]


def build_table(columns: Mapping[str, Sequence | pa.Array]) -> pa.Table:
    """Assemble a normalized table from python lists or arrays; missing columns become null.

    A dictionary-encoded string array stays dictionary-encoded (see the module docstring).
    """
    n = None
    for values in columns.values():
        n = len(values)
        break
    if n is None:
        raise InputError("no rows to import")
    arrays = []
    fields = []
    for field in NORMALIZED_SCHEMA:
        values = columns.get(field.name)
        if values is None:
            arrays.append(pa.nulls(n, field.type))
        elif isinstance(values, (pa.Array, pa.ChunkedArray)):
            arrays.append(values.cast(_target_type(field, values.type)))
        else:
            arrays.append(pa.array(values, type=field.type))
        fields.append(pa.field(field.name, arrays[-1].type, field.nullable))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


DICTIONARY_STRING = pa.dictionary(pa.int32(), pa.string())


def _target_type(field: pa.Field, current: pa.DataType) -> pa.DataType:
    """The field's type, except that a dictionary-encoded string column stays encoded and a
    ``large_string`` one stays large (more text than a ``string`` array holds:
    ``forgetmap.core.columns.one_array``)."""
    if pa.types.is_string(field.type) and pa.types.is_large_string(current):
        return current
    if (
        pa.types.is_string(field.type)
        and pa.types.is_dictionary(current)
        and pa.types.is_string(current.value_type)
    ):
        return DICTIONARY_STRING
    return field.type


def normalized_schema_for(table: pa.Table) -> pa.Schema:
    """NORMALIZED_SCHEMA with the table's dictionary-encoded string columns kept encoded."""
    present = table.schema
    fields = []
    for field in NORMALIZED_SCHEMA:
        current = present.field(field.name).type
        fields.append(pa.field(field.name, _target_type(field, current), field.nullable))
    return pa.schema(fields)


MAX_LINE_BYTES = 16 << 20
"""Bytes a line of a JSON-lines file may have (16 MiB; a reasoning model's chain of thought of
100,000 tokens is about 0.4 MB): a longer line is refused before it is parsed, since parsing
holds it several times over. Also the most a text value of a table may hold (a CSV value must
fit in one 16 MiB block anyway)."""
MAX_JSON_DEPTH = 64
"""Levels of lists and objects a JSON line may nest (an lm-eval or EEE line needs about 6)."""


def json_objects(path: Path, label: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSON-lines file (a leading byte-order
    mark is skipped). A line that is not UTF-8, not JSON, not an object, longer than
    ``MAX_LINE_BYTES``, nested deeper than ``MAX_JSON_DEPTH`` or with a number too long to read
    raises InputError naming ``label`` and the line."""
    for number, record, _ in json_lines(path, label):
        yield number, record


def json_lines(path: Path, label: str) -> Iterator[tuple[int, dict[str, Any], int]]:
    """``json_objects`` with each line's size in bytes: (line number, object, bytes)."""
    with path.open("rb") as fh:
        number = 0
        while raw := fh.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES and raw[MAX_LINE_BYTES:] != b"\n":
                raise InputError(
                    f"{label}: line {number} is longer than {MAX_LINE_BYTES:,} bytes (16 MiB), "
                    "the most a line may have; split its text or leave the long columns out"
                )
            record = _json_object(raw, number, label)
            if record is not None:
                yield number, record, len(raw)


def _json_object(raw: bytes, number: int, label: str) -> dict[str, Any] | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{label}: line {number} is not UTF-8 ({exc.reason} at byte {exc.start}); "
            "save the file as UTF-8"
        ) from None
    if number == 1:
        text = text.lstrip("\ufeff")
    if not text.strip():
        return None
    too_deep = InputError(
        f"{label}: line {number} nests lists and objects more than {MAX_JSON_DEPTH} deep, "
        "the most a line may; a results line needs a few levels"
    )
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{label}: line {number} is not valid JSON ({exc.msg} at column {exc.colno}); "
            "each line must be one JSON object"
        ) from None
    except RecursionError:  # deeper than the parser's own stack allows
        raise too_deep from None
    except ValueError:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise InputError(
            f"{label}: line {number} holds a number of more than "
            f"{sys.get_int_max_str_digits():,} digits; no column takes a number that long"
        ) from None
    if not isinstance(record, dict):
        raise InputError(
            f"{label}: line {number} is not a JSON object (got {type(record).__name__})"
        )
    # a line with few brackets cannot nest deeply: only the others are walked
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and deeper_than(record, MAX_JSON_DEPTH):
        raise too_deep
    return record


def deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and dicts more than ``limit`` levels (itself level 1)."""
    waiting = [(value, 1)]
    while waiting:
        item, depth = waiting.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        waiting.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def json_text(value: Any) -> str | None:
    """A value as stored text: a string as it is, anything else as JSON (None stays None)."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def choices_json(choices: Iterable | None) -> str | None:
    """Options as a JSON list of strings (the stored form), or None."""
    if choices is None:
        return None
    return json.dumps([str(c) for c in choices], ensure_ascii=False)


def choices_json_column(joined: pa.Array) -> pa.Array:
    """Stored JSON of each row's options, from the options joined by \\x1f (``choices_json`` once
    per distinct list: a benchmark's rows mostly share their options)."""
    encoded = pc.dictionary_encode(joined)
    as_json = [
        None if v is None else json.dumps(v.split("\x1f") if v else [], ensure_ascii=False)
        for v in encoded.dictionary.to_pylist()
    ]
    return pc.take(pa.array(as_json, pa.string()), encoded.indices)


def logprob_lists_json(values: pa.Array, lengths: np.ndarray) -> pa.Array:
    """Per row, its log-likelihoods (``lengths[i]`` consecutive ``values``) as the JSON list a
    log-likelihood row stores as its response, e.g. ``[-1.25,-3,-0.00001]``.

    Numbers are in Arrow's shortest round-trip form, infinities and NaN as Python's json writes
    them (``-Infinity``, ``NaN``), so ``json.loads`` gives the values back exactly. The lighteval
    reader's vectorized path and its row-by-row path both write through here: the same file gives
    the same text either way."""
    values = pc.cast(values, pa.float64())
    text = pc.cast(values, pa.string())
    if pc.any(pc.invert(pc.is_finite(values))).as_py():
        text = pc.if_else(pc.is_nan(values), "NaN", text)
        text = pc.if_else(pc.equal(values, float("inf")), "Infinity", text)
        text = pc.if_else(pc.equal(values, float("-inf")), "-Infinity", text)
    offsets = np.zeros(len(lengths) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    lists = pa.ListArray.from_arrays(pa.array(offsets), text)
    return pc.binary_join_element_wise("[", pc.binary_join(lists, ","), "]", "")


def parse_binary(value: object, *, where: str) -> bool:
    """Read one correctness value: 0/1, 0.0/1.0, true/false (any case). Anything else is refused."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "1.0", "true"):
            return True
        if text in ("0", "0.0", "false"):
            return False
    raise InputError(
        f"{where}: correct must be 0/1 or true/false, got {value!r}; "
        "fix the value (non-binary scores cannot be counted as flips)"
    )


def binary_column(values: pa.Array) -> pa.Array | None:
    """A metric column as ``correct`` where every row holds 0/1 (numbers or booleans, read as
    ``parse_binary`` reads them); None for anything else (a null, text, another value), which
    the row readers then read or refuse with the row's own message."""
    if values.null_count:
        return None
    if pa.types.is_boolean(values.type):
        return values
    if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        return None
    values = values.cast(pa.float64())
    if not pc.all(pc.is_in(values, pa.array([0.0, 1.0]))).as_py():
        return None
    return pc.equal(values, 1.0)


def binary_metric(
    values: Mapping[str, Any],
    *,
    metric: str | None,
    defaults: Sequence[str],
    present: Sequence[str],
    where: str,
) -> bool:
    """A sample's 0/1 ``correct``: the value of ``metric``, or of the first of ``defaults`` in
    ``values``. ``present`` names the sample's metrics in the messages. A missing metric or a
    non-binary value raises InputError saying which metrics there are."""
    shown = ", ".join(present) if present else "none"
    name: str | None
    if metric is not None:
        if metric not in values:
            raise InputError(
                f"{where}: metric {metric!r} is not in this sample; metrics present: {shown}; "
                "pass one of them with --metric"
            )
        name = metric
    else:
        name = next((m for m in defaults if m in values), None)
        if name is None:
            raise InputError(
                f"{where}: none of the default metrics ({', '.join(defaults)}) is present; "
                f"metrics present: {shown}; choose a binary one with --metric NAME"
            )
    value = values[name]
    try:
        return parse_binary(value, where=where)
    except InputError:
        others = [m for m in present if m != name]
        hint = f" (present: {', '.join(others)})" if others else ""
        raise InputError(
            f"{where}: metric {name!r} has the non-binary value {value!r}; forgetmap counts "
            f"per-sample 0/1 flips, choose a binary metric with --metric{hint}"
        ) from None


def validate_normalized(table: pa.Table, *, source: str, first_row: int = 1) -> pa.Table:
    """Checks shared by every importer. Returns the table cast to NORMALIZED_SCHEMA.

    Refuses: no rows; empty keys (readers strip whitespace first); num_choices < 2. Duplicate
    (model, benchmark, sample_id, seed) keys are refused by the store's ingest, which finds them in
    the same pass that writes. Dictionary-encoded string columns stay encoded and are checked per
    distinct value. Rows are numbered from ``first_row`` (a batch of a larger import) in messages.
    """
    if table.num_rows == 0:
        raise InputError(f"{source}: no rows to import (the file is empty or has only a header)")
    table = table.select([f.name for f in NORMALIZED_SCHEMA])
    table = table.cast(normalized_schema_for(table))
    for name in ("model", "benchmark", "sample_id"):
        col = table[name]
        if col.null_count:
            row = pc.index(pc.is_null(col), True).as_py()
        else:
            empty = rows_where(col, lambda values: pc.equal(values, ""))
            row = pc.index(empty, True).as_py() if pc.any(empty).as_py() else -1
        if row >= 0:
            hint = " (or pass --model NAME)" if name == "model" else ""
            raise InputError(f"{source}: row {row + first_row} has an empty {name}{hint}")
    if pc.any(pc.is_null(table["correct"])).as_py():
        row = pc.index(pc.is_null(table["correct"]), True).as_py()
        raise InputError(
            f"{source}: row {row + first_row} has no value for correct (need 0/1 or true/false)"
        )
    k = table["num_choices"]
    bad_k = pc.fill_null(pc.less(k, 2), False)
    if pc.any(bad_k).as_py():
        row = pc.index(bad_k, True).as_py()
        raise InputError(
            f"{source}: row {row + first_row} has num_choices {k[row].as_py()}; it must be >= 2, "
            "or empty for a generative item"
        )
    return table


def prepare(table: pa.Table, *, source: str, first_row: int = 1) -> tuple[pa.Table, dict]:
    """Canonicalize benchmark names, settle each benchmark's category and usual k, validate.

    The taxonomy's category and k win for benchmarks it knows; others keep the category the source
    gives (one per benchmark, else an error) or become "Uncategorized". Returns the validated table
    and {benchmark: BenchmarkMeta}.
    """

    def canonical(values: pa.Array) -> pa.Array:
        names = values.to_pylist()
        return pa.array([None if n is None else canonical_name(n) for n in names], pa.string())

    col = table["benchmark"]
    if pa.types.is_dictionary(col.type):
        # the dictionary holds each distinct name (once per row group): canonicalize only those
        table = table.set_column(
            table.schema.get_field_index("benchmark"), "benchmark", map_values(col, canonical)
        )
    else:
        raw_names = col.unique()
        canon = canonical(raw_names)
        if not raw_names.equals(canon):
            table = table.set_column(
                table.schema.get_field_index("benchmark"),
                "benchmark",
                pc.take(canon, pc.index_in(col, raw_names)),
            )
    table = validate_normalized(table, source=source, first_row=first_row)
    question = table["question"]
    if question.null_count and table["prompt"].null_count < table.num_rows:
        # lists show the question, not the template: derive it from the prompts where not given
        rows = table.select(["model", "benchmark", "seed", "prompt", "question"])
        table = table.set_column(
            table.schema.get_field_index("question"), "question", question_from_prompts(rows)
        )

    # per benchmark: the distinct categories given and option counts seen, from integer codes
    bench_codes, bench_names = dictionary_codes(table["benchmark"])
    nb = len(bench_names)
    given: dict[int, set[str]] = {i: set() for i in range(nb)}
    category = table["category"]
    if category.null_count < len(category):
        if category.null_count:
            category = pc.fill_null(category.cast(pa.string()), "")
        cat_codes, cat_names = dictionary_codes(category)
        b_of, c_of = distinct_pairs(bench_codes, nb, cat_codes, len(cat_names))
        cat_list = [(c or "").strip() for c in cat_names.to_pylist()]
        for b, c in zip(b_of.tolist(), c_of.tolist(), strict=True):
            if cat_list[c]:
                given[b].add(cat_list[c])
    k = table["num_choices"]
    k_np = pc.fill_null(k, 0).to_numpy().astype(np.int32) if len(k) else np.zeros(0, np.int32)
    # k is >= 2 or null (0 here); int16, so the offset range is at most 65,536 wide
    k_min = int(k_np.min()) if len(k_np) else 0
    k_span = int(k_np.max()) - k_min + 1 if len(k_np) else 1
    b_of, k_of = distinct_pairs(bench_codes, nb, k_np - k_min, k_span)
    seen_k: dict[int, set[int | None]] = {i: set() for i in range(nb)}
    for b, kk in zip(b_of.tolist(), (k_of + k_min).tolist(), strict=True):
        seen_k[b].add(kk if kk else None)

    benchmarks = {}
    for i, name in enumerate(bench_names.to_pylist()):
        info = lookup(name)
        if info is not None:
            benchmarks[name] = BenchmarkMeta(info.category, info.num_choices)
            continue
        if name.lower() in not_scored_benchmarks():
            ks = seen_k[i]
            benchmarks[name] = BenchmarkMeta(NOT_SCORED, ks.pop() if len(ks) == 1 else None)
            continue
        cats = sorted(given[i])
        if len(cats) > 1:
            raise InputError(
                f"{source}: benchmark {name!r} is given {len(cats)} categories "
                f"({', '.join(cats)}); use one category per benchmark"
            )
        ks = seen_k[i]
        benchmarks[name] = BenchmarkMeta(
            cats[0] if cats else UNCATEGORIZED, ks.pop() if len(ks) == 1 else None
        )
    return table, benchmarks
