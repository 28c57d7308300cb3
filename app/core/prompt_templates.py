"""What the prompts of one unit share: the template around each sample's own text.

The prompts of one (model, benchmark, seed) differ only in the question: a base model's few-shot
block, the instructions and the chat template's turns are the same in every row. Storing them once
per unit (``prompt_templates``) and only the part that differs per row cuts the text an import
writes by about two thirds on the paper's layout (232 MB -> 75 MB of prompts per model), and
DuckDB's commit time grows with the bytes written (bench/harness_import.py).

``unit_templates`` finds, per unit and with Arrow kernels (no per-row Python), the template:

- around the question, when every prompt of the unit is ``prefix + question + suffix`` with the
  row's stored question (the usual case: the importers cut the question out of the query, and the
  query sits whole in the prompt). The row then stores no prompt text at all: its question is
  its own part, so an import writes the question once instead of twice (the paper's layout: an
  import 0.6 s faster on this machine's 564k rows, docs/performance.md);
- else the longest prefix and suffix every prompt of the unit shares, cut back to whitespace so
  that a cut never splits a character or a word shared by chance.

The store keeps ``prefix + own part + suffix`` == prompt exactly, the own part being the stored
prompt text or, where that is NULL, the question (app/db/prompts.py rebuilds it when reading).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from forgetmap.core.columns import SLICE_TO_END, text_without_bytes
from forgetmap.core.sample_identity import unit_affixes

MIN_TEMPLATE_BYTES = 16
"""A unit whose prompts share fewer bytes than this keeps its prompts whole."""


@dataclass(frozen=True)
class UnitTemplates:
    """Per unit code (index), its shared prefix and suffix, and their lengths in characters
    (what DuckDB's ``substr`` counts); ``has_template`` False where prompts are kept whole;
    ``around_question`` True where each prompt's own part is its row's question."""

    has_template: np.ndarray  # bool, per unit code
    around_question: np.ndarray  # bool, per unit code
    prefix: list[str | None]
    suffix: list[str | None]
    prefix_chars: np.ndarray  # int32, per unit code
    suffix_chars: np.ndarray  # int32, per unit code


def unit_templates(
    prompts: pa.Array | pa.ChunkedArray,
    unit: np.ndarray,
    space: int,
    questions: pa.Array | pa.ChunkedArray | None = None,
) -> UnitTemplates:
    """The template of every unit present in ``unit`` (codes in [0, space)); see module doc.

    Per unit: the prompts' text around each row's question (``questions``, same rows) when every
    prompt is made so; else the prefix and suffix its prompts share, ``sample_identity.
    unit_affixes``' cuts at whitespace (the same as a question key's). A unit with a null prompt,
    or none around its questions and a single distinct prompt or less than ``MIN_TEMPLATE_BYTES``
    shared, keeps its prompts whole."""
    templates = UnitTemplates(
        np.zeros(space, np.bool_),
        np.zeros(space, np.bool_),
        [None] * space,
        [None] * space,
        np.zeros(space, np.int32),
        np.zeros(space, np.int32),
    )
    # per-unit slices of the (chunked) columns are views: nothing is copied
    texts = _strings(prompts)
    asked = _strings(questions) if questions is not None else None
    unit = np.asarray(unit, np.int64)
    if len(unit) == 0:
        return templates
    change = np.flatnonzero(unit[1:] != unit[:-1]) + 1
    starts, ends = np.r_[0, change], np.r_[change, len(unit)]
    if len(starts) != len(np.unique(unit)):  # a unit's rows are not together: group them
        order = np.argsort(unit, kind="stable")
        unit, texts = unit[order], pc.take(texts, pa.array(order))
        asked = pc.take(asked, pa.array(order)) if asked is not None else None
        change = np.flatnonzero(unit[1:] != unit[:-1]) + 1
        starts, ends = np.r_[0, change], np.r_[change, len(unit)]
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        code = int(unit[start])
        rows = texts.slice(start, end - start)
        found = None
        if asked is not None:
            found = _around_questions(rows, asked.slice(start, end - start))
            templates.around_question[code] = found is not None
        if found is None:
            found = _shared(rows)
        if found is not None:
            templates.has_template[code] = True
            templates.prefix[code], templates.suffix[code] = found
            templates.prefix_chars[code], templates.suffix_chars[code] = map(len, found)
    return templates


@dataclass(frozen=True)
class StoredPrompts:
    """One unit's prompts as the store keeps them (see the module docstring): ``own`` per row (null
    where it is the row's question), and the unit's ``prefix`` and ``suffix`` (None: no template,
    ``own`` is each whole prompt)."""

    own: pa.Array
    prefix: str | None
    suffix: str | None


def stored_prompts(prompts: pa.Array, questions: pa.Array) -> StoredPrompts:
    """The template of one unit's prompts, by ``unit_templates``' rules, and each row's own part
    cut out with Arrow. A reader that works file by file calls this on each (one file is one
    unit): the whole prompts need not outlive their file (lighteval's few-shot prompts are most of
    a paper import's memory)."""
    texts = _strings(prompts)
    if not len(texts):
        return StoredPrompts(texts, None, None)
    found = _around_questions(texts, _strings(questions))
    if found is not None:
        return StoredPrompts(pa.nulls(len(texts), pa.string()), *found)
    found = _shared(texts)
    if found is None:
        return StoredPrompts(texts, None, None)
    prefix, suffix = found
    own = text_without_bytes(texts, len(prefix.encode()), len(suffix.encode()))
    return StoredPrompts(own, prefix, suffix)


def _strings(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    return column if pa.types.is_string(column.type) else pc.cast(column, pa.string())


def _around_questions(
    texts: pa.Array | pa.ChunkedArray, questions: pa.Array | pa.ChunkedArray
) -> tuple[str, str] | None:
    """(prefix, suffix) with every prompt of one unit == prefix + its question + suffix, or None.

    The split is read off the first row (where its question sits in its prompt, first or last
    occurrence) and checked on every row with Arrow kernels: byte lengths, prefix, suffix, and
    the middle equal to the question."""
    if texts.null_count or questions.null_count:
        return None
    first, question = texts[0].as_py(), questions[0].as_py()
    for at in dict.fromkeys((first.find(question), first.rfind(question))):
        if at < 0 or not question:
            continue
        prefix, suffix = first[:at], first[at + len(question) :]
        head, tail = len(prefix.encode()), len(suffix.encode())
        lengths = pc.add(pc.binary_length(questions), head + tail)
        if not pc.all(pc.equal(pc.binary_length(texts), lengths)).as_py():
            continue
        if prefix and not pc.all(pc.starts_with(texts, prefix)).as_py():
            continue
        if suffix and not pc.all(pc.ends_with(texts, suffix)).as_py():
            continue
        middle = pc.binary_slice(pc.cast(texts, pa.binary()), head, -tail if tail else SLICE_TO_END)
        if pc.all(pc.equal(middle, pc.cast(questions, pa.binary()))).as_py():
            return prefix, suffix
    return None


def _shared(texts: pa.Array | pa.ChunkedArray) -> tuple[str, str] | None:
    """(prefix, suffix) every text of one unit shares, or None (see ``unit_templates``): the
    cuts at whitespace of ``sample_identity.unit_affixes``, taken out of any one text."""
    head, tail = unit_affixes(texts).words
    if head + tail < MIN_TEMPLATE_BYTES:
        return None
    first = texts[0].as_py().encode()
    return first[:head].decode(), first[len(first) - tail :].decode() if tail else ""
