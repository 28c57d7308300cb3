"""Arrow column helpers shared by the importers and the store: per-value work on
dictionary-encoded columns, and integer codes for key checks.

String columns may arrive dictionary-encoded (``dictionary<int32, string>``, e.g. name columns read
from Parquet): they hold the same values, and per-value work (trimming, canonical names, checks)
then runs once per distinct value instead of once per row (``map_values``). ``dictionary_codes``
turns such a column (or a plain one) into integer codes. A leaf module: it imports none of ours.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SLICE_TO_END = 2**31 - 1
"""``binary_slice``'s stop for "to the end": its default (None) fails in pyarrow 26 ("Negative
buffer resize") whenever the stop is not negative; a string column's values are shorter than
this."""


def use_jemalloc_pool() -> None:
    """Make Arrow allocate from its jemalloc pool in this process, where the build has one.

    pyarrow's default pool (mimalloc) gives freed memory back and asks for transparent huge pages,
    so each large temporary of an import is zeroed afresh by the kernel, 2 MB at a time: ``perf``
    put 30% of a 564,000-row lighteval import's CPU in ``clear_page``, 5% with jemalloc, which
    keeps and reuses its pages (the import took 8 s, then 5 s). Idempotent; arrays already
    allocated keep their pool."""
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc: keep the default
        return
    if pa.default_memory_pool().backend_name != pool.backend_name:
        pa.set_memory_pool(pool)


def map_values(
    col: pa.ChunkedArray | pa.Array,
    fn: Callable[[pa.Array], pa.Array],
    *,
    keep_dictionary: bool = True,
) -> pa.ChunkedArray | pa.Array:
    """``fn`` (elementwise) applied to a column; on a dictionary-encoded one, to its values only.

    A dictionary column gives a dictionary column again when ``fn`` returns strings and
    ``keep_dictionary``; otherwise the per-value results are taken out to one per row (a null row
    stays null). Chunks sharing one dictionary run ``fn`` once.
    """
    if not pa.types.is_dictionary(col.type):
        return fn(col)
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    done: dict[tuple[Any, ...], pa.Array] = {}
    out = []
    for chunk in chunks:
        d = chunk.dictionary
        key = (tuple(b.address if b is not None else 0 for b in d.buffers()), d.offset, len(d))
        mapped = done.get(key)
        if mapped is None:
            mapped = done[key] = fn(d)
        if keep_dictionary and pa.types.is_string(mapped.type):
            out.append(pa.DictionaryArray.from_arrays(chunk.indices.cast(pa.int32()), mapped))
        else:
            out.append(pc.take(mapped, chunk.indices))
    if not out:
        return fn(pa.array([], col.type.value_type))
    if isinstance(col, pa.Array):
        return out[0]
    return pa.chunked_array(out, type=out[0].type)


def dictionary_codes(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Integer codes of a column without nulls: ``values[codes[i]]`` is row i's value.

    ``values`` are distinct and each is used by some row (a dictionary's unused or repeated
    entries, e.g. " a" and "a" after trimming, are folded). Hashes the dictionary, not the rows,
    when the column is dictionary-encoded; a plain column is dictionary-encoded first.
    """
    if isinstance(col, pa.ChunkedArray):
        col = (
            col.combine_chunks()
            if col.num_chunks != 1 or pa.types.is_dictionary(col.type)
            else col.chunk(0)
        )
    encoded_here = not pa.types.is_dictionary(col.type)
    if encoded_here:
        col = pc.dictionary_encode(col)
    if col.null_count:
        raise ValueError("dictionary_codes needs a column without nulls")
    dictionary = col.dictionary
    indices = col.indices.to_numpy(zero_copy_only=False)
    # a dictionary made here holds each value once, and only values some row uses
    values = dictionary if encoded_here else pc.unique(dictionary)
    if len(values) != len(dictionary):
        remap = pc.index_in(dictionary, value_set=values).to_numpy(zero_copy_only=False)
        codes = remap.astype(np.int32)[indices]
    else:
        codes = indices.astype(np.int32, copy=False)
    if encoded_here:
        return codes, values
    used = (
        np.bincount(codes, minlength=len(values)) > 0 if len(codes) else np.zeros(len(values), bool)
    )
    if not used.all():
        renumber = np.cumsum(used, dtype=np.int32) - 1
        codes = renumber[codes]
        values = values.filter(pa.array(used))
    return codes, values


PAIR_KEY_LIMIT = 2**62
"""``na * nb`` must stay below this for ``distinct_pairs`` and ``pairs_repeat``: each pair is coded
as one int64, ``a * nb + b``."""


def _pair_keys(a: np.ndarray, na: int, b: np.ndarray, nb: int) -> np.ndarray:
    """The distinct codes ``a * nb + b`` of the (a[i], b[i]) pairs, sorted: marked in a bitmap
    when the code space is small (at most 4 MiB, or 4 bytes a row), else sorted."""
    space = na * nb
    if space >= PAIR_KEY_LIMIT:
        raise ValueError(f"{na} x {nb} pair codes do not fit an int64")
    if space <= max(1 << 22, 4 * len(a)):
        seen = np.zeros(space, np.bool_)
        seen[a.astype(np.int64) * nb + b] = True
        return np.flatnonzero(seen)
    return np.unique(a.astype(np.int64) * nb + b)


def distinct_pairs(a: np.ndarray, na: int, b: np.ndarray, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (a[i], b[i]) pairs, 0 <= a < na and 0 <= b < nb, sorted by a then b."""
    keys = _pair_keys(a, na, b, nb)
    return keys // nb, keys % nb


def pairs_repeat(a: np.ndarray, na: int, b: np.ndarray, nb: int) -> bool:
    """Whether two rows share their (a[i], b[i]) pair, 0 <= a < na and 0 <= b < nb, exactly
    (a group and a key coded by value: two samples of one unit with one id). numpy lets go of the
    GIL, which the lighteval reader's two threads share."""
    return len(_pair_keys(a, na, b, nb)) < len(a)


def rows_where(col: pa.ChunkedArray, value_mask: Callable[[pa.Array], pa.Array]) -> pa.ChunkedArray:
    """Per-row booleans of a per-value predicate (a dictionary column tests each value once)."""
    return map_values(col, value_mask, keep_dictionary=False)


OFFSET_LIMIT = 2**31 - 1
"""The most bytes of text one ``string`` or ``binary`` array holds (32-bit offsets)."""

_LARGE = {pa.string(): pa.large_string(), pa.binary(): pa.large_binary()}


def text_without_bytes(texts: pa.Array | pa.ChunkedArray, start: int, finish: int) -> pa.Array:
    """Each string without its first ``start`` and last ``finish`` bytes. Byte offsets keep the
    slicing O(bytes kept) (codepoint slicing scans each long prompt from its start). Callers cut
    between characters (at whitespace, or at a template's ends), so the bytes kept are viewed as
    text again rather than cast, which would validate every byte as UTF-8 once more (most of a
    small file's cutting)."""
    texts = one_array(texts)
    large = pa.types.is_large_string(texts.type)
    raw = texts.view(pa.large_binary() if large else pa.binary())
    kept = pc.binary_slice(raw, start, -finish if finish else SLICE_TO_END)
    return kept.view(pa.large_string() if large else pa.string())


def one_array(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The column as one array: an array as it is, a single chunk as it is (``combine_chunks``
    would copy it), several chunks (or none) combined. Text chunks holding more than
    ``OFFSET_LIMIT`` bytes together become one ``large_string`` (``large_binary``) array: a
    lighteval output folder of chain-of-thought answers holds gigabytes of them (1,128,000
    answers of ~400 tokens: 2.4 GB), past what one ``string`` array can."""
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 1:
            return col.chunk(0)
        if col.type in _LARGE and col.nbytes > OFFSET_LIMIT:
            col = col.cast(_LARGE[col.type])
        return col.combine_chunks()
    return col


def one_item_lists(values: pa.Array | pa.ChunkedArray) -> pa.ListArray:
    """Each value as a list of its own (``[v]``): the inverse of ``first_items``."""
    values = one_array(values)
    offsets = pa.array(np.arange(len(values) + 1, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, values)


def first_items(lists: pa.Array) -> pa.Array:
    """First item of each list (null for an empty or null list)."""
    n = len(lists)
    if not lists.null_count and len(lists.values) == n and lists.offset == 0:
        offsets = lists.offsets.to_numpy()
        if offsets[0] == 0 and (np.diff(offsets) == 1).all():  # one item each: the items
            return lists.values
    head = pc.list_slice(lists, 0, 1)
    values = pc.list_flatten(head)
    parents = pc.list_parent_indices(head).to_numpy()
    index = np.full(n, -1, np.int64)
    index[parents] = np.arange(len(values))
    return pc.take(values, pa.array(index, mask=index < 0))


def first_max_positions(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per row (``lengths[i]`` consecutive ``values``, no NaN), the position of its highest value,
    the first of equals (what Python's ``max`` over the positions picks); -1 for an empty row."""
    n = len(lengths)
    starts = np.zeros(n, np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    best = np.full(n, -1, np.int64)
    scored = lengths > 0
    if len(values):
        first, count = starts[scored], lengths[scored]
        top = np.repeat(np.maximum.reduceat(values, first), count)
        position = np.arange(len(values)) - np.repeat(first, count)
        best[scored] = np.minimum.reduceat(np.where(values == top, position, len(values)), first)
    return best
