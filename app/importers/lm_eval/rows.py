"""lm-eval samples read line by line: any shape lm-eval has written, with errors that name the line.

The reader's Arrow path (``lm_eval.py``) handles the usual shapes of a whole file at once; a file it
cannot (older releases' mixed-type lists, a stringified metric, a document whose fields change
type, invalid JSON or UTF-8) comes here, line by line, and gives the same columns: both paths build
the same table from the same file. See ``lm_eval.py`` for the file format.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa
from forgetmap.core.answer_status import ANSWERED, LEGACY_NO_ANSWER
from forgetmap.core.answer_status import NO_ANSWER as NO_ANSWER_STATUS
from forgetmap.core.taxonomy import usual_num_choices
from forgetmap.importers.common import (
    InputError,
    binary_metric,
    choices_json,
    json_objects,
    json_text,
    logprob_lists_json,
)

DEFAULT_METRICS = ("acc", "exact_match", "extractive_match")
"""Metrics used for ``correct`` when none is named, in order of preference."""

BOOKKEEPING = frozenset(
    {
        "doc_id",
        "doc",
        "target",
        "arguments",
        "resps",
        "filtered_resps",
        "filter",
        "metrics",
        "doc_hash",
        "prompt_hash",
        "target_hash",
    }
)
"""Keys of a logged sample that are not metric values."""

ROW_COLUMNS = (
    "sample_id",
    "correct",
    "num_choices",
    "prompt",
    "response",
    "prediction",
    "gold",
    "choices",
    "doc_hash",
    "answer_status",
)
"""The normalized columns one samples file gives (``common.NORMALIZED_SCHEMA``)."""

NO_ANSWER = LEGACY_NO_ANSWER
"""What lm-eval's regex filters (``strict-match``, ``flexible-extract``) give when the text holds
no answer (their ``fallback``). Such a generated row's status is ``no_answer``, any other
generated row's ``answered``, a scored log-likelihood row's ``answered``; never ``truncated``:
samples files carry no finish reason."""


def answer_status(multiple_choice: bool, prediction: str | None, scored: bool) -> str | None:
    """A line's status (``NO_ANSWER``), as the Arrow path gives it (``lm_eval._generative``)."""
    if multiple_choice:
        return ANSWERED if scored else None
    return NO_ANSWER_STATUS if prediction == NO_ANSWER else ANSWERED


def records(file: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, parsed object) for each non-blank line of a samples file."""
    return json_objects(file, str(file))


def argument_index(key: str) -> tuple[int, str]:
    """Sort key of ``gen_args_<i>`` / ``arg_<j>``: the number, then the name."""
    digits = re.search(r"(\d+)$", key)
    return (int(digits.group(1)) if digits else 0, key)


def _arguments(value: Any) -> list[list[Any]]:
    """Requests as a list of argument lists, from either stored shape of ``arguments``."""
    if isinstance(value, dict):
        requests = []
        for key in sorted(value, key=argument_index):
            args = value[key]
            if isinstance(args, dict):
                requests.append([args[k] for k in sorted(args, key=argument_index)])
            else:
                requests.append(list(args) if isinstance(args, (list, tuple)) else [args])
        return requests
    if isinstance(value, (list, tuple)):
        return [list(a) if isinstance(a, (list, tuple)) else [a] for a in value]
    return []


def _loglikelihood(value: Any) -> float | None:
    """The log-likelihood in one request's response: ``(ll, is_greedy)``, nested or as strings."""
    while isinstance(value, (list, tuple)) and value and isinstance(value[0], (list, tuple)):
        value = value[0]
    if isinstance(value, (list, tuple)):
        if not value:
            return None
        value = value[0]
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _first_text(value: Any) -> str | None:
    """The first leaf of a (possibly nested) response list, as text."""
    while isinstance(value, (list, tuple)):
        if not value:
            return None
        value = value[0]
    return json_text(value)


def _metrics_present(record: dict[str, Any]) -> list[str]:
    listed = record.get("metrics")
    if isinstance(listed, list):
        names = [m for m in listed if isinstance(m, str) and m in record]
        if names:
            return names
    return [
        k
        for k, v in record.items()
        if k not in BOOKKEEPING and isinstance(v, (int, float, bool, str))
    ]


def _correct(record: dict[str, Any], metric: str | None, where: str) -> bool:
    return binary_metric(
        record,
        metric=metric,
        defaults=DEFAULT_METRICS,
        present=_metrics_present(record),
        where=where,
    )


def _convert(
    record: dict[str, Any], *, task: str, metric: str | None, where: str
) -> tuple[dict[str, Any], list[float] | None]:
    """One line's columns, and its log-likelihoods (written as ``response`` by ``row_columns``)."""
    doc_id = record.get("doc_id")
    if doc_id is None or (isinstance(doc_id, str) and not doc_id.strip()):
        raise InputError(f"{where}: the sample has no doc_id (is this an lm-eval samples file?)")
    if isinstance(doc_id, float) and doc_id.is_integer():
        doc_id = int(doc_id)

    correct = _correct(record, metric, where)
    requests = _arguments(record.get("arguments"))
    multiple_choice = bool(requests) and all(
        len(r) >= 2 and isinstance(r[0], str) and isinstance(r[1], str) for r in requests
    )

    prompt = json_text(requests[0][0]) if requests and requests[0] else None
    lls: list[float] | None
    choices = response = prediction = lls = None
    if multiple_choice:
        contexts = [r[0] for r in requests]
        continuations = [r[1] for r in requests]
        num_choices = len(requests) if len(requests) >= 2 else None
        if num_choices is not None:
            # multiple-input tasks (winogrande) vary the context and share the continuation
            shared = len(set(continuations)) == 1 and len(set(contexts)) > 1
            choices = choices_json(contexts if shared else continuations)
        for source in (record.get("filtered_resps"), record.get("resps")):
            if isinstance(source, list) and len(source) == len(requests):
                parsed = [_loglikelihood(r) for r in source]
                if all(v is not None for v in parsed):
                    lls = cast(list[float], parsed)  # no None left
                    break
        if lls is not None and num_choices is not None:
            prediction = str(max(range(len(lls)), key=lls.__getitem__))
    else:
        num_choices = usual_num_choices(task)
        response = _first_text(record.get("resps"))
        filtered = record.get("filtered_resps")
        prediction = _first_text(filtered[0] if isinstance(filtered, list) and filtered else None)

    target = record.get("target")
    row = {
        "sample_id": str(doc_id),
        "correct": correct,
        "num_choices": num_choices,
        "prompt": prompt,
        "response": response,
        "prediction": prediction,
        "gold": None if target is None else str(target),
        "choices": choices,
        "doc_hash": json_text(record.get("doc_hash")),
        "answer_status": answer_status(multiple_choice, prediction, lls is not None),
    }
    return row, lls


def row_columns(
    lines: list[tuple[int, dict[str, Any]]], *, file: Path, task: str, metric: str | None
) -> dict[str, list[Any] | pa.Array]:
    """``ROW_COLUMNS`` of the given (line number, object) lines of one file. A log-likelihood
    row's response is its scores as JSON, written as the Arrow path writes them
    (``common.logprob_lists_json``)."""
    columns: dict[str, list[Any]] = {name: [] for name in ROW_COLUMNS}
    scored: list[int] = []
    scores: list[float] = []
    lengths: list[int] = []
    for lineno, record in lines:
        row, lls = _convert(record, task=task, metric=metric, where=f"{file}:{lineno}")
        if lls is not None:
            scored.append(len(columns["sample_id"]))
            scores.extend(lls)
            lengths.append(len(lls))
        for name in ROW_COLUMNS:
            columns[name].append(row[name])
    if scored:
        texts = logprob_lists_json(pa.array(scores, pa.float64()), np.array(lengths, np.int64))
        for at, text in zip(scored, texts.to_pylist(), strict=True):
            columns["response"][at] = text
    return columns
