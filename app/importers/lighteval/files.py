"""Opening one lighteval details file: its layout, and the columns the reader decodes of it.

Only the columns the reader uses are read (token ids, logits and the like never are), and of them
as little as it takes:

- a flat (v0.10) file whose ``full_prompt`` is stored as the same bytes as its ``example`` (a base
  model without a chat template: lighteval writes ``doc.ctx``, which is then ``doc.query``) has
  its prompts decoded once (``stored_alike``);
- of the nested (v0.11+) layout's ``doc`` and ``model_response`` only the fields the reader uses
  are decoded (``used_fields``): token ids, few-shot documents and logits are most of such a file;
- of the answers an extractive metric took out of the model's texts (``specifics`` in v0.10,
  ``doc.specific`` in v0.11+) only ``extracted_predictions`` is decoded, when it is there.

A third layout is the Open LLM Leaderboard v1's own (``open-llm-leaderboard-old/details_*``,
2023-2024, written by its fork of lm-eval's harness): flat like v0.10, but each metric in a
column of its own (``acc``, ``acc_norm``, ``mc1``, ...), ``gold`` the gold option's index (a
generative task's: the reference text), ``predictions`` one log-likelihood per option, and the
question in ``query`` where ``example`` holds the dataset's own id (2023's first ARC files), else
in ``example``. Those columns are read into the v0.10 layout's (``_from_harness``). Known from
code that reads the published files (their columns ``example``, ``query``, ``choices``, ``gold``,
``acc``, ``acc_norm``, ``predictions``, ``truncated``, ``hashes``), not from the files themselves:
no network here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from forgetmap.core.columns import one_item_lists
from forgetmap.core.errors import InputError

__all__ = ["Layout", "layout_of", "read_columns", "stored_alike", "used_fields", "with_twin"]

# columns the reader uses (token ids, logits and the like are never read)
_FLAT_COLUMNS = (
    "example",
    "full_prompt",
    "predictions",
    "choices",
    "gold_index",
    "gold",
    "metrics",
    "specifics",
    "truncated",
)
_NESTED_COLUMNS = ("doc", "model_response", "metric", "metrics")
HARNESS_METRICS = ("acc", "acc_norm", "mc1", "mc2", "em", "f1", "exact_match")
"""The per-sample metrics the leaderboard v1's harness wrote as columns of their own."""
_HARNESS_COLUMNS = (
    "example",
    "query",
    "full_prompt",
    "predictions",
    "choices",
    "gold",
    "truncated",
    *HARNESS_METRICS,
)
EXTRACTED = "extracted_predictions"
"""The field of lighteval's per-sample ``specifics`` (v0.10; ``doc.specific`` from v0.11) where
its extractive metrics keep what they took out of each answer (``"B"`` out of a chain of thought
ending in "Answer: B"): of those structs, only this field is read."""
# the fields (dotted paths) of the nested layout's structs the reader uses (its kernels and its
# row reader): the rest (token ids, few-shot documents, logits, ...) is never decoded
_NESTED_FIELDS = {
    "doc": ("query", "choices", "gold_index", "id", f"specific.{EXTRACTED}"),
    "model_response": (
        "input",
        "text",
        "text_post_processed",
        "logprobs",
        "truncated_tokens_count",
    ),
}


@dataclass(frozen=True)
class Layout:
    """What of a details file the reader reads: its layout and the column paths it decodes."""

    nested: bool  # v0.11+ (doc / model_response); else flat (v0.10, or the harness's)
    harness: bool  # the Open LLM Leaderboard v1's columns (``_from_harness``)
    columns: list[str]  # column paths to read (``used_fields``)
    twin: bool  # ``full_prompt`` is stored as ``example``'s bytes: decoded once (``stored_alike``)


def layout_of(parquet: pq.ParquetFile, file: Path) -> Layout:
    """The file's ``Layout``; InputError where it is not a lighteval details table."""
    # ParquetFile.schema_arrow converts the footer's schema again on every access (nine times
    # a file here, a sixth of a small file's read): taken once
    schema = parquet.schema_arrow
    names = set(schema.names)
    if {"doc", "model_response"} <= names:
        nested = True
    elif "metrics" in names and ({"example", "predictions"} & names):
        nested = False
    elif {"example", "predictions"} <= names and names & set(HARNESS_METRICS):
        return Layout(False, True, [c for c in _HARNESS_COLUMNS if c in names], False)
    else:
        raise InputError(
            f"{file}: not a lighteval details table (columns: {', '.join(sorted(names))}); "
            "expected doc/model_response/metric (v0.11+), example/predictions/metrics (v0.10) "
            "or example/predictions with a column per metric (the Open LLM Leaderboard v1's)"
        )
    wanted = [c for c in (_NESTED_COLUMNS if nested else _FLAT_COLUMNS) if c in names]
    wanted = [path for c in wanted for path in used_fields(schema, c)]
    twin = not nested and stored_alike(parquet, file, "example", "full_prompt", arrow=schema)
    if twin:
        wanted.remove("full_prompt")
    return Layout(nested, False, wanted, twin)


def read_columns(file: Path) -> tuple[pa.Table, bool]:
    """The columns of a details file the reader needs, and whether it is nested (v0.11+)."""
    try:
        parquet = pq.ParquetFile(file)
        layout = layout_of(parquet, file)
        # one thread per file: the files themselves are read on two threads
        # (``reader._read_tasks``)
        table = parquet.read(columns=layout.columns, use_threads=False)
        if layout.harness:
            return _from_harness(table, file), False
        return with_twin(table, layout), layout.nested
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{file}: not a readable parquet file ({exc})") from None


def with_twin(table: pa.Table, layout: Layout) -> pa.Table:
    """The table with ``full_prompt`` back where it was read once, as ``example``."""
    return table.append_column("full_prompt", table["example"]) if layout.twin else table


def _from_harness(table: pa.Table, file: Path) -> pa.Table:
    """The Open LLM Leaderboard v1's harness columns (module doc) as the v0.10 layout's: the
    metric columns in one ``metrics`` struct (a metric stored as text, as DROP's ``f1``, where it
    reads as numbers), ``gold`` as ``gold_index`` (a reference text: the one choice and gold of a
    generative row), the question in ``example``."""
    names = table.column_names
    metrics = {}
    for name in HARNESS_METRICS:
        if name not in names:
            continue
        values = table[name]
        if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
            try:
                values = pc.cast(values, pa.float64())
            except pa.ArrowInvalid:
                continue  # not numbers: no per-sample score forgetmap could count
        metrics[name] = values.combine_chunks()
    columns = {
        name: table[name] for name in ("full_prompt", "predictions", "truncated") if name in names
    }
    columns["example"] = table["query" if "query" in names else "example"]
    if not metrics:
        raise InputError(
            f"{file}: no per-sample metric of "
            f"{', '.join(n for n in HARNESS_METRICS if n in names)} "
            "reads as numbers"
        )
    columns["metrics"] = pa.StructArray.from_arrays(list(metrics.values()), list(metrics))
    gold = table["gold"] if "gold" in names else None
    if gold is not None and pa.types.is_integer(gold.type):
        columns["gold_index"] = one_item_lists(pc.cast(gold, pa.int64()))
    elif (
        gold is not None
        and pa.types.is_list(gold.type)
        and pa.types.is_integer(gold.type.value_type)
    ):
        columns["gold_index"] = gold
    elif gold is not None and (
        pa.types.is_string(gold.type) or pa.types.is_large_string(gold.type)
    ):
        texts = one_item_lists(pc.cast(gold, pa.string()))
        columns["gold"] = texts
        columns["gold_index"] = one_item_lists(pa.array(np.zeros(len(table), np.int64)))
        if "choices" not in names:
            columns["choices"] = texts
    if "choices" in names:
        columns["choices"] = table["choices"]
    return pa.table(columns)


def used_fields(schema: pa.Schema, column: str) -> list[str]:
    """What to read of a column: the used fields of a struct (``doc.query``, ...; of ``specifics``
    and ``doc.specific`` only ``extracted_predictions``), else the whole column (a struct with
    none of them, or a column stored as text). ``specifics`` without that field (a struct without
    it, or null) is not read."""
    kind = schema.field(column).type
    if column == "specifics":
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            return [column]  # stored as text: the row reader parses it
        return [f"{column}.{EXTRACTED}"] if _has_field(kind, EXTRACTED) else []
    if column not in _NESTED_FIELDS or not pa.types.is_struct(kind):
        return [column]
    present = [path for path in _NESTED_FIELDS[column] if _has_path(kind, path)]
    return [f"{column}.{path}" for path in present] or [column]


def _has_field(kind: pa.DataType, name: str) -> bool:
    return pa.types.is_struct(kind) and kind.get_field_index(name) >= 0


def _has_path(kind: pa.DataType, path: str) -> bool:
    """Whether a struct type holds a dotted path of fields (``specific.extracted_predictions``)."""
    for name in path.split("."):
        if not _has_field(kind, name):
            return False
        kind = kind.field(name).type
    return True


def stored_alike(
    parquet: pq.ParquetFile, file: Path, first: str, second: str, *, arrow: pa.Schema
) -> bool:
    """Whether two top-level columns of one Arrow type are stored as the same bytes in every row
    group (codec, pages, dictionary): then they hold the same values, and one decoded serves both.

    A base model's prompt is its query (lighteval 0.10 writes ``full_prompt = doc.ctx``, which is
    ``doc.query`` without a chat template or lighteval's own few-shot examples: the paper's base
    runs): half of the bytes a flat file decodes, then copied and scanned twice. Comparing the
    compressed chunks costs a fraction of decoding one of them (the paper's layout: a 141 KB chunk
    for 811 KB of prompts), and chunks of different sizes are not read at all. ``arrow``: the
    file's Arrow schema."""
    if first not in arrow.names or second not in arrow.names:
        return False
    if arrow.field(first).type != arrow.field(second).type:
        return False
    leaves = {parquet.schema.column(j).path: j for j in range(len(parquet.schema))}
    if first not in leaves or second not in leaves:
        return False  # a nested column: several leaves
    described = [parquet.schema.column(leaves[name]) for name in (first, second)]
    if len({(c.physical_type, c.logical_type.type, c.max_definition_level) for c in described}) > 1:
        return False  # the same bytes would mean other values
    metadata = parquet.metadata
    spans = []
    for group in range(metadata.num_row_groups):
        chunks = [metadata.row_group(group).column(leaves[name]) for name in (first, second)]
        if chunks[0].total_compressed_size != chunks[1].total_compressed_size:
            return False
        starts = [_chunk_start(c) for c in chunks]
        # a writer that leaves an offset unset (0) would have both spans read the file's start
        if starts[0] == starts[1] or min(starts) < len(b"PAR1"):
            return False
        spans.append((starts, chunks[0].total_compressed_size))
    with open(file, "rb") as raw:
        for starts, size in spans:
            stored = []
            for start in starts:
                raw.seek(start)
                stored.append(raw.read(size))
            if stored[0] != stored[1]:
                return False
    return True


def _chunk_start(chunk: pq.ColumnChunkMetaData) -> int:
    """Where a column chunk's bytes begin: its dictionary page, when it has one, else its first
    data page."""
    if chunk.has_dictionary_page and chunk.dictionary_page_offset is not None:
        return min(chunk.dictionary_page_offset, chunk.data_page_offset)
    return chunk.data_page_offset
