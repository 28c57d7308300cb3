"""Large lighteval details files, read a slice of rows at a time.

A task's details file can be large: MMLU's 14,042 questions answered with chains of thought
decode to hundreds of MB a seed, and read whole, an import's memory grows with its largest task
(docs/performance.md, Harness imports). A file whose used columns decode to more than
``SLICED_FILE_BYTES`` (read from its footer, nothing decoded) is therefore read in two passes:

1. its keys (``file_keys``): of the whole file, only what a row's sample id, question and prompt
   need (the query, the prompt, the options, the gold index, the document id). The ids and the
   prompt's template are then the whole file's, as if it were read whole: a question asked twice
   in the file is marked so (``identify``), whichever slices hold it;
2. its rows, ``SLICE_BYTES`` of decoded columns at a time (``SlicedFile.take``: Parquet record
   batches, whatever the file's row groups), each reduced as a whole file is and given its keys
   by position (``forgetmap.importers.lighteval.reader``).

A file whose key columns are in other shapes (stored as text: the row reader) is read whole.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from forgetmap.core.columns import one_array
from forgetmap.core.errors import InputError
from forgetmap.core.sample_identity import identify
from forgetmap.importers.lighteval.files import Layout, layout_of, with_twin
from forgetmap.importers.lighteval.uniform import (
    SlowPath,
    field,
    gold_indices,
    has_document_ids,
    is_text,
    is_text_list,
    option_columns,
    optional_field,
    questions_and_prompts,
)

SLICE_BYTES = 4 << 20
"""Decoded bytes of the used columns a slice of a large file holds (the rows a slice reads are
this over the file's decoded bytes per row)."""

SLICED_FILE_BYTES = 2 * SLICE_BYTES
"""A file whose used columns decode to more than this is read in slices (module docstring)."""

READ_BUFFER_BYTES = 1 << 20
"""The bytes of a sliced file read from disk at a time."""

CANDIDATE_BYTES = 1 << 20
"""Files smaller than this on disk are read whole without a look at their footer: the many small
files of a tree pay nothing for slicing."""

# what the keys of a row are made of (``file_keys``), of the paths ``files.used_fields`` reads
_KEY_PATHS = frozenset(
    {
        *("doc.query", "doc.choices", "doc.gold_index", "doc.id", "model_response.input"),
        *("example", "full_prompt", "choices", "gold_index", "gold"),
    }
)


@dataclass(frozen=True)
class FileKeys:
    """What a sliced file's rows take from the whole file: per row in file order, and the
    template of its prompts."""

    sample_id: pa.Array
    displayed: pa.Array  # the question as lists show it
    own: pa.Array  # the prompt's own part (``stored_prompts``)
    prefix: str | None
    suffix: str | None


@dataclass(frozen=True)
class Slice:
    """Rows ``start`` to ``start + table.num_rows`` of a file, and the file's keys."""

    start: int
    table: pa.Table
    keys: FileKeys
    last: bool  # the file's last rows


class SlicedFile:
    """One large details file shared by the reader's threads: each ``take`` gives the next
    slice, under a lock (the first also reads the keys); ``slices`` takes read it all."""

    def __init__(
        self, number: int, file: Path, parquet: pq.ParquetFile, layout: Layout, rows_per_slice: int
    ) -> None:
        self.number, self.file, self.layout = number, file, layout
        self.rows, self.rows_per_slice = parquet.metadata.num_rows, rows_per_slice
        self.slices = math.ceil(self.rows / rows_per_slice)
        self._parquet = parquet
        self._lock = threading.Lock()
        self._keys: FileKeys | None = None
        self._batches: Iterator[pa.RecordBatch] | None = None
        self._next_row = 0
        self.whole = False  # read whole instead: its key columns are in other shapes
        self._claimed = False

    def claim_whole(self) -> bool:
        """True once, to the task that reads the file whole when it is not read in slices."""
        with self._lock:
            claimed, self._claimed = self._claimed, True
            return self.whole and not claimed

    def take(self) -> Slice | None:
        """The next slice; None when the file is read whole (``whole``) or all was taken."""
        with self._lock:
            if self._keys is None and not self.whole:
                self._keys = file_keys(self.file, self._parquet, self.layout)
                self.whole = self._keys is None
                if self.whole:
                    return None
                self._batches = self._parquet.iter_batches(
                    batch_size=self.rows_per_slice, columns=self.layout.columns, use_threads=False
                )
            if self.whole or self._next_row >= self.rows:
                return None
            try:
                batch = next(cast(Iterator[pa.RecordBatch], self._batches))  # set with _keys
            except (pa.ArrowException, OSError) as exc:
                raise InputError(f"{self.file}: not a readable parquet file ({exc})") from None
            start = self._next_row
            self._next_row += batch.num_rows
            last = self._next_row >= self.rows
            if last:  # the reader's buffers (a column chunk's pages) go with it
                self._batches = self._parquet = None
            table = with_twin(pa.Table.from_batches([batch]), self.layout)
            return Slice(start, table, cast(FileKeys, self._keys), last)  # not whole: has keys


def sliced_file(number: int, file: Path, size: int) -> SlicedFile | None:
    """``file`` as a ``SlicedFile`` when it is large enough to be read in slices, else None."""
    if size < CANDIDATE_BYTES:
        return None
    try:
        # pages are read as they are decoded, not a column chunk at once (pre-buffering reads a
        # task's answers whole before its first slice)
        parquet = pq.ParquetFile(file, buffer_size=READ_BUFFER_BYTES, pre_buffer=False)
        layout = layout_of(parquet, file)
    except (pa.ArrowException, OSError, InputError):
        return None  # the whole read says what is wrong with it
    rows = parquet.metadata.num_rows
    if layout.harness or not rows:
        return None
    decoded = decoded_bytes(parquet.metadata, layout.columns)
    if decoded <= SLICED_FILE_BYTES:
        return None
    rows_per_slice = max(1, int(rows * SLICE_BYTES / decoded))
    return SlicedFile(number, file, parquet, layout, rows_per_slice)


def decoded_bytes(metadata: pq.FileMetaData, paths: list[str]) -> int:
    """The uncompressed bytes of the column chunks under ``paths``, from the footer alone."""
    schema = metadata.schema
    leaves = [
        j
        for j in range(metadata.num_columns)
        if any(_under(schema.column(j).path, path) for path in paths)
    ]
    return sum(
        metadata.row_group(g).column(j).total_uncompressed_size
        for g in range(metadata.num_row_groups)
        for j in leaves
    )


def _under(leaf: str, path: str) -> bool:
    """Whether a column chunk's leaf path (``predictions.list.element``) lies under a path."""
    return leaf == path or leaf.startswith(path + ".")


def file_keys(file: Path, parquet: pq.ParquetFile, layout: Layout) -> FileKeys | None:
    """The keys of every row of a file (module docstring), as the whole read would give them
    (``uniform.uniform_table``, then the reader's ``_read_unit`` and ``_keyed``); None where the
    key columns are not in the shapes the kernels take."""
    columns = [c for c in layout.columns if c in _KEY_PATHS]
    try:
        table = with_twin(parquet.read(columns=columns, use_threads=False), layout)
        return _keys(table, layout.nested)
    except (SlowPath, pa.ArrowException, KeyError):
        return None
    except OSError as exc:
        raise InputError(f"{file}: not a readable parquet file ({exc})") from None


def _keys(table: pa.Table, nested: bool) -> FileKeys:
    n = table.num_rows
    names = table.column_names
    if nested:
        doc = table["doc"]
        query = field(doc, "query")
        choices, gold_index = field(doc, "choices"), field(doc, "gold_index")
        doc_id = optional_field(doc, "id")
        prompt = field(table["model_response"], "input")
        gold_texts = None
    else:
        query = one_array(table["example"])
        choices, gold_index = one_array(table["choices"]), one_array(table["gold_index"])
        doc_id = None
        prompt = one_array(table["full_prompt"]) if "full_prompt" in names else query
        gold_texts = one_array(table["gold"]) if "gold" in names else None
    if not (is_text_list(choices.type) and is_text(query.type) and is_text(prompt.type)):
        raise SlowPath
    first_gold, n_gold = gold_indices(gold_index)
    if pc.any(pc.greater(n_gold, 1)).as_py():
        raise SlowPath
    if gold_texts is None or not is_text_list(gold_texts.type):
        gold_texts = pa.nulls(n, pa.list_(pa.string()))
    query, prompt = pc.cast(query, pa.string()), pc.cast(prompt, pa.string())
    doc_id = pa.nulls(n, pa.string()) if doc_id is None else pc.cast(doc_id, pa.string())
    strings = pa.list_(pa.string())
    options = option_columns(
        pc.cast(choices, strings), first_gold, n_gold, pc.cast(gold_texts, strings)
    )
    questions, stored = questions_and_prompts(query, prompt)
    has_ids = has_document_ids(doc_id)
    sample_id = identify(
        pa.table(
            {
                "unit": pa.array(np.zeros(n, np.int32)),
                "question": questions.keyed,
                "choices_key": options["choices_key"],
                "gold_key": options["gold_key"],
                "doc_id": doc_id,
                "has_ids": pa.array(np.full(n, has_ids), pa.bool_()),
            }
        )
    )
    return FileKeys(sample_id, questions.displayed, stored.own, stored.prefix, stored.suffix)


__all__ = ["SLICE_BYTES", "SLICED_FILE_BYTES", "FileKeys", "Slice", "SlicedFile", "sliced_file"]
