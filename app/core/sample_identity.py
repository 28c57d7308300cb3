"""Sample identity that survives prompt templates (for harness files without document ids).

A base model is usually prompted few-shot and its post-trained descendant through a chat template,
so the same question reaches the two models inside different queries. Keying a sample by a hash
of its query therefore pairs nothing. Here a sample is keyed by its **question**:

1. ``unit_affixes``: within one (task, run) file, the longest prefix and
   suffix that *every* query shares (few-shot block, instructions, answer cue) are removed
   (``question_texts``), cut back to whitespace so that a word shared by chance is not split. A
   file with one query keeps it whole.
2. ``normalize_text``: whitespace and quote characters are dropped (templates wrap questions in
   quotes or not, straight or curly, and lay options out with other spacing), case is folded.
3. ``identify``: ``q:`` + the first 16 hex digits of md5(normalized question, normalized
   choices, gold), over the whole import at once (pure-ASCII rows in one DuckDB statement, the
   others through ``normalized_texts``).
   md5 is an identity hash here, not a security measure.
4. ``link_candidates`` (at pairing time): samples of a benchmark still unpaired after (1)-(3) are
   matched by the question text one side's prompt contains, when that match is unique both ways.

Two different samples of one file that share a key cannot be told apart by content; pairing them by
row order would be a guess (files are written in a shuffled order). They are stored under
``<key>~ambiguous<n>``, excluded from pairing and reported as ambiguous. Ids given by the file
(lm-eval ``doc_id``, lighteval's doc ``id``) are used as they are and need none of this.
"""

from __future__ import annotations

import os
from typing import NamedTuple, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from forgetmap.core.columns import (
    SLICE_TO_END,
    dictionary_codes,
    one_array,
    pairs_repeat,
    text_without_bytes,
)
from forgetmap.core.digests import ascii_joined_md5_prefixes, md5_prefixes
from forgetmap.core.sample_marks import AMBIGUOUS_MARK, QUESTION_KEY_PREFIX

__all__ = [
    "AMBIGUOUS_MARK",
    "QUESTION_KEY_PREFIX",
    "Cuts",
    "identify",
    "question_texts",
    "unit_affixes",
    "unit_questions",
    "link_candidates",
    "question_from_prompts",
    "normalize_text",
    "normalized_texts",
]


# straight, curly, low and angle quotes, backticks, and whitespace (ASCII and the usual Unicode
# spaces): templates differ in all of them, so the key drops them
_DROPPED = (
    "\"'`\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f\u00ab\u00bb\u2039\u203a"
    " \t\n\r\x0b\x0c\u00a0\u2002\u2003\u2009\u200b\u3000"
)
_DROP_TABLE = str.maketrans("", "", _DROPPED)


SPACE_BYTES = b" \t\n\r\x0b\x0c"


def cut_at_separator(shared: bytes, *, from_end: bool, separators: bytes) -> int:
    """Length of ``shared`` cut so that it ends (prefix, ``from_end``) or starts (suffix) at a
    separator: a cut there never splits a character or a word shared by chance."""
    if not shared:
        return 0
    if from_end:
        return max(shared.rfind(bytes([c])) for c in separators) + 1
    cuts = [i for i in (shared.find(bytes([c])) for c in separators) if i >= 0]
    return len(shared) - min(cuts) if cuts else 0


class Cuts(NamedTuple):
    """Byte lengths (prefix, suffix) of what every query of a unit shares, cut back to
    whitespace (``words``: for keys) and to line breaks (``lines``: for what lists show)."""

    words: tuple[int, int]
    lines: tuple[int, int]


_NO_CUTS = Cuts((0, 0), (0, 0))


def unit_affixes(queries: pa.Array | pa.ChunkedArray) -> Cuts:
    """The prefix and suffix every query of one unit shares, in UTF-8 bytes, with Arrow kernels.

    Bytewise min/max keep the property that every query shares the common prefix of the two
    extremes; suffixes likewise on the queries' reversed last bytes (a window doubled while all of
    it is shared). Both cuts come from one pass over the queries. Cutting back to whitespace keeps
    a word shared by chance whole and the cuts between characters; cutting at line breaks keeps a
    question's opening words that all questions share (every BBH navigate question starts "If you
    follow these instructions"). Byte offsets keep slicing O(1) per row: codepoint slicing of long
    few-shot prompts scans them from the start. With fewer than two distinct queries nothing is
    shared: a single query is all question.
    """
    if len(queries) < 2 or queries.null_count:
        return _NO_CUTS
    raw = pc.cast(one_array(queries), pa.binary())
    ends = pc.min_max(raw)
    lo, hi = ends["min"].as_py(), ends["max"].as_py()
    if lo == hi:
        return _NO_CUTS
    shortest = pc.min(pc.binary_length(raw)).as_py()
    window = 256
    while True:
        tails = pc.min_max(pc.binary_reverse(pc.binary_slice(raw, -window, SLICE_TO_END)))
        rlo, rhi = tails["min"].as_py(), tails["max"].as_py()
        if len(os.path.commonprefix([rlo, rhi])) < window or window >= shortest:
            break
        window *= 2
    return Cuts(
        _affixes(lo, hi, rlo, rhi, shortest, SPACE_BYTES),
        _affixes(lo, hi, rlo, rhi, shortest, b"\n"),
    )


def question_texts(queries: pa.Array | pa.ChunkedArray, start: int, finish: int) -> pa.Array:
    """One unit's questions: its queries without the shared affixes (byte lengths), trimmed."""
    texts = pc.cast(one_array(queries), pa.string())
    if start or finish:
        texts = text_without_bytes(texts, start, finish)
    return pc.utf8_trim_whitespace(texts)


class Questions(NamedTuple):
    """One unit's questions: its queries without what all of them share."""

    keyed: pa.Array  # cut at word boundaries: what a question's key is made of
    displayed: pa.Array  # cut at line breaks: what lists show


def unit_questions(queries: pa.Array | pa.ChunkedArray) -> Questions:
    """``question_texts`` of one unit at both of ``unit_affixes``' cuts."""
    cuts = unit_affixes(queries)
    keyed = question_texts(queries, *cuts.words)
    if cuts.lines == cuts.words:  # usual: what all queries share ends at a line break
        return Questions(keyed, keyed)
    return Questions(keyed, question_texts(queries, *cuts.lines))


def _row_groups(
    columns: list[tuple[np.ndarray, pa.Array]], rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """(one code per row, equal for rows equal in every column; the first row of each code) from
    each column's ``dictionary_codes``. Codes are made dense again after each column, so their
    product never overflows."""
    combined, first = np.zeros(rows, np.int64), np.zeros(0, np.int64)
    for codes, values in columns:
        _, first, combined = np.unique(
            combined * len(values) + codes, return_index=True, return_inverse=True
        )
        combined = combined.reshape(-1)
    return combined, first


def _unit_codes(table: pa.Table, columns: tuple[str, ...]) -> np.ndarray:
    """One integer per row, equal for rows with equal values in ``columns`` (no nulls)."""
    return _row_groups([dictionary_codes(table[name]) for name in columns], table.num_rows)[0]


def question_from_prompts(table: pa.Table) -> pa.Array:
    """The ``question`` column where given, else each ``prompt`` without what every prompt of its
    (model, benchmark, seed) shares (few-shot block, instructions, answer cue): what lists show."""
    question = table["question"].combine_chunks()
    wanted = pc.and_(pc.is_null(question), pc.is_valid(table["prompt"])).to_numpy(
        zero_copy_only=False
    )
    pos = np.flatnonzero(wanted)
    if not len(pos):
        return question
    group = _unit_codes(
        table.select(["model", "benchmark", "seed"]).take(pa.array(pos)),
        ("model", "benchmark", "seed"),
    )
    order = np.argsort(group, kind="stable")
    pos, group = pos[order], group[order]
    prompts = pc.take(table["prompt"], pa.array(pos))
    bounds = np.flatnonzero(np.diff(group)) + 1
    parts = []
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(pos)], strict=True):
        unit = prompts.slice(lo, hi - lo)
        parts.append(question_texts(unit, *unit_affixes(unit).lines))
    filled = pa.chunked_array(parts, pa.string()).combine_chunks()
    index = np.full(table.num_rows, -1, np.int64)
    index[pos] = np.arange(len(pos))
    taken = pc.take(filled, pa.array(index, mask=index < 0))
    return pc.coalesce(question, taken)


# the ASCII bytes that normalize_text drops
_ASCII_DROPPED = sorted({ord(c) for c in _DROPPED if ord(c) < 128})
_ASCII_DROPPED_CHARS = "".join(map(chr, _ASCII_DROPPED))


def normalized_texts(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``normalize_text`` of every string (null -> ""), vectorized.

    Rows that are pure ASCII go through byte comparisons in numpy (drop, lower case); the others
    (any byte >= 0x80) through ``normalize_text`` itself, so both give exactly its result. Works in
    slices of a few MB so that numpy's temporaries stay small (large ones are fresh pages each).
    """
    texts = pc.fill_null(pc.cast(one_array(texts), pa.string()), "")
    n = len(texts)
    if not n:
        return texts
    offsets = np.frombuffer(texts.buffers()[1], np.int32, n + 1, texts.offset * 4)
    parts, start = [], 0
    while start < n:
        stop = int(np.searchsorted(offsets, offsets[start] + _SLICE_BYTES, side="right")) - 1
        stop = min(max(stop, start + 1), n)
        parts.append(_normalized_slice(texts.slice(start, stop - start)))
        start = stop
    return pa.concat_arrays(parts) if parts else texts


_SLICE_BYTES = 1 << 22


def _normalized_slice(texts: pa.Array) -> pa.Array:
    n = len(texts)
    offsets = np.frombuffer(texts.buffers()[1], np.int32, n + 1, texts.offset * 4)
    data = np.frombuffer(texts.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    offsets = offsets - offsets[0]
    dropped = np.zeros(len(data), np.bool_)
    for byte in _ASCII_DROPPED:  # a comparison per byte value beats a lookup table here
        dropped |= data == byte
    keep = ~dropped
    upper = (data >= ord("A")) & (data <= ord("Z"))
    lowered = data + (upper.view(np.uint8) << 5)  # +32: ASCII upper case to lower
    kept = np.zeros(len(data) + 1, np.int32)
    np.cumsum(keep, out=kept[1:])
    out = pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(kept[offsets]), pa.py_buffer(lowered[keep])]
    )
    wide = np.flatnonzero(data >= 0x80)
    if not len(wide):
        return out
    rows = np.unique(np.searchsorted(offsets, wide, side="right") - 1)
    exact = [normalize_text(t) for t in pc.take(texts, pa.array(rows)).to_pylist()]
    return _replaced(out, rows, pa.array(exact, pa.string()))


def _replaced(base: pa.Array, rows: np.ndarray, values: pa.Array) -> pa.Array:
    """``base`` with ``base[rows[i]]`` replaced by ``values[i]`` (one take, no Python loop)."""
    index = np.arange(len(base))
    index[rows] = len(base) + np.arange(len(rows))
    return pc.take(pa.concat_arrays([base, values.cast(base.type)]), pa.array(index))


def identify(table: pa.Table) -> pa.Array:
    """Sample ids for rows of many (task, run) files at once.

    ``table`` has ``unit`` (one value per task and run), ``question`` (the query without what all
    queries of its unit share: ``unit_affixes``, ``question_texts``), ``choices_key`` (the options
    joined by \\x1f) and ``gold_key`` (the gold index, or the gold text of a generative item; both
    may be null; all three are normalized here), ``doc_id`` and ``has_ids`` (every row of the unit
    has a document id: the ids are kept). Otherwise a row's id is ``q:`` + 16 hex digits of
    md5(normalized question, choices, gold), the three joined by \\x1f; keys shared by several
    rows of one unit get ``~ambiguous<n>`` (n in row order within the unit).
    """
    n = table.num_rows
    has_ids = pc.fill_null(table["has_ids"], False).to_numpy(zero_copy_only=False)
    content = table.select(["question", "choices_key", "gold_key"])
    keyed = np.flatnonzero(~has_ids)
    if len(keyed) == n:  # no document ids at all (the usual lighteval file): keys from content
        keys = _content_keys(content)
    else:
        keys = pc.utf8_trim_whitespace(pc.cast(one_array(table["doc_id"]), pa.string()))
        if len(keyed):  # units without document ids: keys from content (only their rows hashed)
            keys = _replaced(keys, keyed, _content_keys(content.take(pa.array(keyed))))
    if not n:
        return keys
    unit = np.asarray(pc.fill_null(table["unit"], -1).to_numpy(zero_copy_only=False), np.int64)
    if len(keyed) == n:  # rows keyed by content (not by a document id) may share a key
        content_units, content_keys = unit, keys
    else:
        content_units, content_keys = unit[keyed], pc.take(keys, pa.array(keyed))
    if not _shares_a_key(content_units, content_keys):  # the usual file
        return keys
    key_codes, _ = dictionary_codes(pc.fill_null(keys, ""))
    group = np.where(has_ids, -1, (unit - unit.min()) * (int(key_codes.max()) + 1) + key_codes)
    _, inverse, counts = np.unique(group, return_inverse=True, return_counts=True)
    shared = (counts[inverse.reshape(-1)] > 1) & ~has_ids
    if not shared.any():
        return keys
    rows = np.flatnonzero(shared)
    order = rows[np.argsort(group[rows], kind="stable")]
    starts = np.r_[True, np.diff(group[order]) != 0]
    first = np.maximum.accumulate(np.where(starts, np.arange(len(order)), 0))
    number = np.arange(len(order)) - first + 1
    marked = pc.take(keys, pa.array(order)).to_pylist()
    suffixed = [f"{k}{AMBIGUOUS_MARK}{m}" for k, m in zip(marked, number.tolist(), strict=True)]
    return _replaced(keys, order, pa.array(suffixed, pa.string()))


def _shares_a_key(units: np.ndarray, keys: pa.Array) -> bool:
    """Whether two rows of one unit have the same key, exactly: the keys coded by value (Arrow),
    the (unit, code) pairs compared by ``forgetmap.core.columns.pairs_repeat`` (numpy). Both let go
    of the GIL, which the lighteval reader's two threads share; the DuckDB hash query this replaces
    held it for about 1.5 ms a task in Python (its binding and ``fetchnumpy``: 7.7% of an import's
    GIL time, ``py-spy --gil``)."""
    if len(units) < 2:
        return False
    codes, values = dictionary_codes(pc.fill_null(keys, ""))
    low = units.min()
    return pairs_repeat(units - low, int(units.max() - low) + 1, codes, len(values))


def _content_keys(content: pa.Table) -> pa.Array:
    """``q:`` + md5 of (normalized question, choices, gold) per row, the three joined by \\x1f
    (normalization keeps it, so the normalized join is the join of the normalized parts).

    Pure-ASCII rows (nearly all) are joined, normalized and hashed by one DuckDB statement on
    every core (``ascii_joined_md5_prefixes``); the others by ``normalized_texts``, which is
    exactly ``normalize_text`` (Python's Unicode lower-casing)."""
    parts = content.select(["question", "choices_key", "gold_key"])
    keys = ascii_joined_md5_prefixes(
        parts, separator="\x1f", dropped=_ASCII_DROPPED_CHARS, prefix=QUESTION_KEY_PREFIX, digits=16
    )
    if not keys.null_count:
        return keys
    wide = np.flatnonzero(pc.is_null(keys).to_numpy(zero_copy_only=False))
    joined = pc.binary_join_element_wise(
        *(pc.fill_null(pc.take(parts[name], pa.array(wide)), "") for name in parts.column_names),
        "\x1f",
    )
    hashed = md5_prefixes(normalized_texts(joined), prefix=QUESTION_KEY_PREFIX, digits=16)
    return _replaced(keys, wide, hashed)


def _affixes(
    lo: bytes, hi: bytes, rlo: bytes, rhi: bytes, shortest: int, separators: bytes
) -> tuple[int, int]:
    """``unit_affixes`` from a unit's extreme queries (forward and byte-reversed): every query
    shares the common prefix of the smallest and the largest, and likewise for suffixes. When the
    two would overlap in the shortest query, only the prefix is removed."""
    if lo == hi:
        return 0, 0
    # bytes in, bytes out (typeshed's overload adds the '' an empty list gives)
    prefix = cast(bytes, os.path.commonprefix([lo, hi]))
    suffix = cast(bytes, os.path.commonprefix([rlo, rhi]))[::-1]
    p = cut_at_separator(prefix, from_end=True, separators=separators)
    s = cut_at_separator(suffix, from_end=False, separators=separators)
    return (p, s) if p + s <= shortest else (p, 0)


MIN_LINK_CHARS = 20
"""A question shorter than this (normalized) is too generic to be found inside another prompt."""

MAX_LINK_COMPARISONS = 25_000_000
"""Above this many (base, post) candidates in one benchmark, linking by text is skipped."""


def normalize_text(text: str | None) -> str:
    """A question, options or gold text as keys compare it: whitespace and quote characters
    dropped, case folded (``normalized_texts`` is its vectorized twin for whole columns)."""
    if not text:
        return ""
    return text.translate(_DROP_TABLE).lower()


def link_candidates(
    base: list[tuple[str, str | None, str | None]],
    post: list[tuple[str, str | None, str | None]],
) -> list[tuple[str, str]]:
    """Match samples whose keys differ by the question text one side's prompt contains.

    ``base`` and ``post`` are (sample_id, question, prompt) of one benchmark's still-unpaired
    samples. A base sample and a post sample are candidates when the normalized question of either
    is contained in the normalized prompt of the other. A link is made only when it is unique both
    ways (the base sample has exactly one candidate and so has the post sample): a wrong pairing
    is worse than none. Returns (base_sample_id, post_sample_id) links.
    """
    if not base or not post or len(base) * len(post) > MAX_LINK_COMPARISONS:
        return []
    b = [(sid, normalize_text(q), normalize_text(p)) for sid, q, p in base]
    p = [(sid, normalize_text(q), normalize_text(pr)) for sid, q, pr in post]
    edges: set[tuple[int, int]] = set()
    for i, (_, question, _) in enumerate(b):
        if len(question) >= MIN_LINK_CHARS:
            edges.update((i, j) for j, (_, _, prompt) in enumerate(p) if question in prompt)
    for j, (_, question, _) in enumerate(p):
        if len(question) >= MIN_LINK_CHARS:
            edges.update((i, j) for i, (_, _, prompt) in enumerate(b) if question in prompt)
    per_base: dict[int, int] = {}
    per_post: dict[int, int] = {}
    for i, j in edges:
        per_base[i] = per_base.get(i, 0) + 1
        per_post[j] = per_post.get(j, 0) + 1
    return sorted((b[i][0], p[j][0]) for i, j in edges if per_base[i] == 1 and per_post[j] == 1)
