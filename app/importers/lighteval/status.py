"""Each lighteval answer's status (``forgetmap.core.answer_status``): one rule, written once for
the reader's Arrow kernels (``status_column``) and once for its row path (``row_status``), which
give the same file the same statuses.

lighteval says two things about an answer besides its score, and no finish reason:

- the tokens it cut from the prompt to fit the context: v0.10's ``truncated`` (a list of counts,
  one per request), v0.11+'s ``model_response.truncated_tokens_count``;
- what an extractive metric took out of the text: ``specifics.extracted_predictions`` (v0.10),
  ``doc.specific.extracted_predictions`` (v0.11+); an empty list where it found no answer (a
  chain of thought that stopped before its "Answer:", or never gave one).

A count above 0 is ``truncated``; otherwise an empty extracted list is ``no_answer`` and a
non-empty one ``answered``; a log-likelihood row (a score per choice) is ``answered``; null where
the file says neither (a generated text its metric graded whole, counts of 0 alone).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from forgetmap.core.answer_status import ANSWERED, NO_ANSWER, TRUNCATED


def cut_counts(counts: pa.Array | None) -> pa.Array | None:
    """Whether lighteval cut tokens from each row's prompt: a count, or any of a list of counts
    (one per request), above 0; None where the file does not say in numbers (a column stored as
    text says nothing the kernels read)."""
    if counts is None:
        return None
    if not (pa.types.is_list(counts.type) or pa.types.is_large_list(counts.type)):
        return pc.greater(counts, 0) if pa.types.is_integer(counts.type) else None
    values = pc.list_flatten(counts)
    if not pa.types.is_integer(values.type):
        return None
    rows = np.asarray(pc.list_parent_indices(counts), np.int64)
    above = np.asarray(pc.fill_null(pc.greater(values, 0), False), np.bool_)
    cut = np.zeros(len(counts), np.bool_)
    cut[rows[above]] = True
    return pa.array(cut)


def status_column(
    n: int, prompt_cut: pa.Array | None, extracted: pa.Array | None, scored: pa.Array | None
) -> pa.Array:
    """The status of each of ``n`` rows: ``prompt_cut`` (``cut_counts``), ``extracted`` (lists
    of the extracted answers, null where a row has none), ``scored`` (a log-likelihood file:
    whether each row has a prediction from its scores; None for generated answers)."""
    status = pa.nulls(n, pa.string())
    if scored is not None:
        status = pc.if_else(scored, ANSWERED, status)
    if extracted is not None:
        found = pc.list_value_length(extracted)
        status = pc.if_else(pc.fill_null(pc.greater(found, 0), False), ANSWERED, status)
        status = pc.if_else(pc.fill_null(pc.equal(found, 0), False), NO_ANSWER, status)
    if prompt_cut is not None:
        status = pc.if_else(pc.fill_null(prompt_cut, False), TRUNCATED, status)
    return status


def row_status(cut: list[float | None], extracted: Any, scored: bool | None) -> str | None:
    """``status_column`` of one row: its prompt-cut counts (as numbers, None where not one), its
    ``extracted_predictions`` value as parsed, and whether it is a log-likelihood row with a
    prediction (None: a generated answer)."""
    if any(c is not None and c > 0 for c in cut):
        return TRUNCATED
    if isinstance(extracted, (list, tuple)):
        return ANSWERED if extracted else NO_ANSWER
    return ANSWERED if scored else None
