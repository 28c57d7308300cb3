"""What the prompts of one unit share: the template around each sample's own text.

The prompts of one (model, benchmark, seed) differ only in the question: a base model's few-shot
block, the instructions and the chat template's turns are the same in every row. Storing them once
per unit (``prompt_templates``) and only the part that differs per row cuts the text an import
writes by about two thirds on the paper's layout (232 MB -> 75 MB of prompts per model), and
DuckDB's commit time grows with the bytes written (bench/harness_import.py).

``unit_templates`` finds, per unit and with Arrow kernels (no per-row Python), the longest prefix
and suffix every prompt of the unit shares, cut back to whitespace so
that a cut never splits a character or a word shared by chance. The store then keeps
``prefix + middle + suffix`` == prompt exactly (app/db/prompts.py rebuilds it when reading).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from app.sample_identity import unit_affixes

MIN_TEMPLATE_BYTES = 16
"""A unit whose prompts share fewer bytes than this keeps its prompts whole."""


@dataclass(frozen=True)
class UnitTemplates:
    """Per unit code (index), its shared prefix and suffix, and their lengths in characters
    (what DuckDB's ``substr`` counts); ``has_template`` False where prompts are kept whole."""

    has_template: np.ndarray  # bool, per unit code
    prefix: list[str | None]
    suffix: list[str | None]
    prefix_chars: np.ndarray  # int32, per unit code
    suffix_chars: np.ndarray  # int32, per unit code


def unit_templates(
    prompts: pa.Array | pa.ChunkedArray, unit: np.ndarray, space: int
) -> UnitTemplates:
    """The template of every unit present in ``unit`` (codes in [0, space)); see module doc.

    Per unit, the prefix and suffix its prompts share are ``sample_identity.unit_affixes``' cuts
    at whitespace (the same as a question key's). A unit with a null prompt, a single distinct
    prompt or less than ``MIN_TEMPLATE_BYTES`` shared keeps its prompts whole."""
    templates = UnitTemplates(np.zeros(space, np.bool_), [None] * space, [None] * space,
                              np.zeros(space, np.int32), np.zeros(space, np.int32))  # fmt: skip
    # per-unit slices of the (chunked) column are views: nothing is copied
    texts = prompts if pa.types.is_string(prompts.type) else pc.cast(prompts, pa.string())
    unit = np.asarray(unit, np.int64)
    if len(unit) == 0:
        return templates
    change = np.flatnonzero(unit[1:] != unit[:-1]) + 1
    starts, ends = np.r_[0, change], np.r_[change, len(unit)]
    if len(starts) != len(np.unique(unit)):  # a unit's rows are not together: group them
        order = np.argsort(unit, kind="stable")
        unit, texts = unit[order], pc.take(texts, pa.array(order))
        change = np.flatnonzero(unit[1:] != unit[:-1]) + 1
        starts, ends = np.r_[0, change], np.r_[change, len(unit)]
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        found = _shared(texts.slice(start, end - start))
        if found is not None:
            code = int(unit[start])
            templates.has_template[code] = True
            templates.prefix[code], templates.suffix[code] = found
            templates.prefix_chars[code], templates.suffix_chars[code] = map(len, found)
    return templates


def _shared(texts: pa.Array | pa.ChunkedArray) -> tuple[str, str] | None:
    """(prefix, suffix) every text of one unit shares, or None (see ``unit_templates``): the
    cuts at whitespace of ``sample_identity.unit_affixes``, taken out of any one text."""
    head, tail = unit_affixes(texts).words
    if head + tail < MIN_TEMPLATE_BYTES:
        return None
    first = texts[0].as_py().encode()
    return first[:head].decode(), first[len(first) - tail :].decode() if tail else ""
