"""What every importer produces: one normalized Arrow table of per-sample results.

Each reader (generic table, lm-eval-harness, lighteval) parses its own format and returns a
``pyarrow.Table`` with exactly the columns of ``NORMALIZED_SCHEMA``. Validation that does not depend
on the source format (binary ``correct``, duplicate keys, empty input) happens once, in
``validate_normalized``; the store then writes the table in one transaction.

Problems with the user's input raise ``InputError`` with a one-line message that names the problem
and, where possible, how to fix it. The CLI prints it as ``error: <message>`` and exits 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from app.errors import InputError

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
    ]
)

KEY_COLUMNS = ("model", "benchmark", "sample_id", "seed")


def empty_columns(n: int) -> dict[str, pa.Array]:
    """All-null columns of the normalized schema, for readers to fill in."""
    return {f.name: pa.nulls(n, f.type) for f in NORMALIZED_SCHEMA}


def build_table(columns: dict[str, Sequence | pa.Array]) -> pa.Table:
    """Assemble a normalized table from python lists or arrays; missing columns become null."""
    n = None
    for values in columns.values():
        n = len(values)
        break
    if n is None:
        raise InputError("no rows to import")
    arrays = []
    for field in NORMALIZED_SCHEMA:
        values = columns.get(field.name)
        if values is None:
            arrays.append(pa.nulls(n, field.type))
        elif isinstance(values, (pa.Array, pa.ChunkedArray)):
            arrays.append(values.cast(field.type))
        else:
            arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=NORMALIZED_SCHEMA.remove_metadata())


def choices_json(choices: Iterable | None) -> str | None:
    """Options as a JSON list of strings (the stored form), or None."""
    if choices is None:
        return None
    return json.dumps([str(c) for c in choices], ensure_ascii=False)


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


def validate_normalized(table: pa.Table, *, source: str) -> pa.Table:
    """Checks shared by every importer. Returns the table cast to NORMALIZED_SCHEMA.

    Refuses: no rows; empty keys (readers strip whitespace first); num_choices < 2. Duplicate (model, benchmark, sample_id, seed)
    keys are refused by the store's ingest, which finds them in the same pass that writes.
    """
    if table.num_rows == 0:
        raise InputError(f"{source}: no rows to import (the file is empty or has only a header)")
    table = table.select([f.name for f in NORMALIZED_SCHEMA]).cast(
        NORMALIZED_SCHEMA.remove_metadata()
    )
    for name in ("model", "benchmark", "sample_id"):
        col = table[name]
        bad = pc.or_(pc.is_null(col), pc.equal(col, ""))
        if pc.any(bad).as_py():
            row = pc.index(bad, True).as_py()
            hint = " (or pass --model NAME)" if name == "model" else ""
            raise InputError(f"{source}: row {row + 1} has an empty {name}{hint}")
    if pc.any(pc.is_null(table["correct"])).as_py():
        row = pc.index(pc.is_null(table["correct"]), True).as_py()
        raise InputError(
            f"{source}: row {row + 1} has no value for correct (need 0/1 or true/false)"
        )
    k = table["num_choices"]
    bad_k = pc.fill_null(pc.less(k, 2), False)
    if pc.any(bad_k).as_py():
        row = pc.index(bad_k, True).as_py()
        raise InputError(
            f"{source}: row {row + 1} has num_choices {k[row].as_py()}; it must be >= 2, "
            "or empty for a generative item"
        )
    return table


def prepare(table: pa.Table, *, source: str) -> tuple[pa.Table, dict]:
    """Canonicalize benchmark names, settle each benchmark's category and usual k, validate.

    The taxonomy's category and k win for benchmarks it knows; others keep the category the source
    gives (one per benchmark, else an error) or become "Uncategorized". Returns the validated table
    and {benchmark: BenchmarkMeta}.
    """
    from app.db.ingest import BenchmarkMeta
    from app.taxonomy import UNCATEGORIZED, canonical_name, lookup

    raw_names = table["benchmark"].unique().to_pylist()
    mapping = {name: canonical_name(name) for name in raw_names if name is not None}
    if any(raw != canon for raw, canon in mapping.items()):
        canon = pc.take(
            pa.array(list(mapping.values()), pa.string()),
            pc.index_in(table["benchmark"], pa.array(list(mapping), pa.string())),
        )
        table = table.set_column(table.schema.get_field_index("benchmark"), "benchmark", canon)
    table = validate_normalized(table, source=source)

    per_benchmark = table.group_by("benchmark").aggregate(
        [("category", "distinct"), ("num_choices", "distinct")]
    )
    benchmarks = {}
    for row in per_benchmark.to_pylist():
        name = row["benchmark"]
        info = lookup(name)
        given = sorted({c.strip() for c in row["category_distinct"] if c and c.strip()})
        ks = {k for k in row["num_choices_distinct"]}
        if info is not None:
            benchmarks[name] = BenchmarkMeta(info.category, info.num_choices)
            continue
        if len(given) > 1:
            raise InputError(
                f"{source}: benchmark {name!r} is given {len(given)} categories "
                f"({', '.join(given)}); use one category per benchmark"
            )
        benchmarks[name] = BenchmarkMeta(
            given[0] if given else UNCATEGORIZED, ks.pop() if len(ks) == 1 else None
        )
    return table, benchmarks
