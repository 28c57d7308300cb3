"""lighteval details files read row by row: cells stored as Python reprs or JSON strings,
log-likelihood rows (one score per choice), and other shapes
``forgetmap.importers.lighteval.reader``'s Arrow kernels do not handle. Each row becomes the same
columns the vectorized reader produces.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa
from forgetmap.importers.common import binary_metric, choices_json, json_text, logprob_lists_json
from forgetmap.importers.lighteval.files import EXTRACTED
from forgetmap.importers.lighteval.status import row_status

# what the reader keeps per row of a file, before sample ids are settled across the whole import
# (the query and the whole prompt are done with once the file is read: reader._read_unit)
FILE_COLUMNS = (
    "doc_id",
    "choices_key",
    "gold_key",
    "correct",
    "num_choices",
    "prompt",
    "response",
    "prediction",
    "gold",
    "choices",
    "answer_status",
)

DEFAULT_METRICS = ("acc", "exact_match", "extractive_match", "em")
"""Metrics used for ``correct`` when none is named, in order (lighteval calls exact match "em")."""

_ENUM_REPR = re.compile(r"<([A-Za-z_][\w.]*): ([^<>]*)>")


def _parse(value: Any) -> Any:
    """A structured cell: as stored, or parsed back from its JSON / Python-repr string form."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or text[0] not in "[{(":
        return value
    try:
        return json.loads(text)
    except ValueError:
        pass
    for candidate in (text, _ENUM_REPR.sub(lambda m: repr(m.group(1).rsplit(".", 1)[-1]), text)):
        try:
            return ast.literal_eval(candidate)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
    return value


def _as_dict(value: Any) -> dict[str, Any]:
    value = _parse(value)
    if isinstance(value, dict):
        return value
    if isinstance(value, list) and all(isinstance(i, (list, tuple)) and len(i) == 2 for i in value):
        return {str(k): v for k, v in value}  # an Arrow map column
    return {}


def _as_list(value: Any) -> list[Any]:
    value = _parse(value)
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _number(value: Any) -> float | None:
    """A log-probability: a number, or the first item of ``(logprob, is_greedy)``."""
    if isinstance(value, (list, tuple)):
        if not value:
            return None
        value = value[0]
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _gold_text(values: list[Any]) -> str | None:
    if not values:
        return None
    if len(values) == 1:
        return str(values[0])
    return json.dumps([str(v) for v in values], ensure_ascii=False)


def _indices(value: Any) -> list[int]:
    out = []
    for v in _as_list(value):
        try:
            out.append(int(v))
        except (TypeError, ValueError):
            continue
    return out


def _num_choices(choices: list[Any], gold_index: list[int]) -> int | None:
    """Options shown: the doc's choices when there are >= 2 and they are not all gold answers.

    Generative lighteval tasks keep their reference answers in ``choices`` (one for gsm8k, every
    alias for triviaqa, all marked gold): those have no options to guess among.
    """
    if len(choices) < 2:
        return None
    if set(gold_index) >= set(range(len(choices))):
        return None
    return len(choices)


def _logprob_prediction(lls: list[float | None]) -> tuple[str | None, str | None]:
    """(index of the most likely choice, the log-likelihoods as JSON), as the vectorized reader
    gives them (``forgetmap.importers.lighteval.reader._logprob_texts``)."""
    if not lls or any(v is None for v in lls):
        return None, None
    best = max(range(len(lls)), key=lambda i: cast(float, lls[i]))  # no None: checked above
    text = logprob_lists_json(pa.array(lls, pa.float64()), np.asarray([len(lls)]))
    return str(best), text[0].as_py()


def _extracted_answer(specifics: Any) -> str | None:
    """The first answer an extractive metric took out of the text (``specifics`` of v0.10,
    ``doc.specific`` of v0.11+; ``files.EXTRACTED``), or None."""
    extracted = _as_list(_as_dict(specifics).get(EXTRACTED))
    return json_text(extracted[0]) if extracted else None


def _status(prompt_cut: Any, specifics: Any, scored: bool | None) -> str | None:
    """As the kernels' status (``status.row_status``): from the tokens cut from the
    prompt (a count, or a list of counts), the extractive metric's answers, and, for a
    log-likelihood row (``scored`` not None), whether its scores gave a prediction."""
    counts = [_number(c) for c in _as_list(prompt_cut)] if prompt_cut is not None else []
    return row_status(counts, _parse(_as_dict(specifics).get(EXTRACTED)), scored)


def _first_known(*values: str | None) -> str | None:
    """The first value that is not None (an empty answer counts), as Arrow's ``coalesce``."""
    return next((v for v in values if v is not None), None)


def _flat_row(row: dict[str, Any]) -> dict[str, Any]:
    query = json_text(row.get("example")) or ""
    choices = [str(c) for c in _as_list(row.get("choices"))]
    gold_index = _indices(row.get("gold_index"))
    predictions = _as_list(row.get("predictions"))
    lls = [_number(p) for p in predictions]
    scored = None
    if choices and len(predictions) == len(choices) and all(v is not None for v in lls):
        prediction, response = _logprob_prediction(lls)
        scored = prediction is not None
    else:
        response = json_text(predictions[0]) if predictions else None
        prediction = _first_known(_extracted_answer(row.get("specifics")), response)
    golds = [choices[i] for i in gold_index if 0 <= i < len(choices)]
    if not golds:
        golds = _as_list(row.get("gold"))
    return {
        "id": None,
        "query": query,
        "choices": choices,
        "gold_index": gold_index,
        "prompt": json_text(row.get("full_prompt")) or query,
        "prediction": prediction,
        "response": response,
        "gold": _gold_text(golds) or _gold_text(gold_index),
        "metrics": _as_dict(row.get("metrics")),
        "answer_status": _status(row.get("truncated"), row.get("specifics"), scored),
    }


def _nested_row(row: dict[str, Any]) -> dict[str, Any]:
    doc = _as_dict(row.get("doc"))
    response_cell = _as_dict(row.get("model_response"))
    query = json_text(doc.get("query")) or ""
    choices = [str(c) for c in _as_list(doc.get("choices"))]
    gold_index = _indices(doc.get("gold_index"))
    texts = _as_list(response_cell.get("text"))
    post = _as_list(response_cell.get("text_post_processed"))
    logprobs = _as_list(response_cell.get("logprobs"))
    scored = None
    if texts:
        response = json_text(texts[0])
        processed = json_text(post[0]) if post and post[0] is not None else None
        prediction = _first_known(_extracted_answer(doc.get("specific")), processed, response)
    else:
        prediction, response = _logprob_prediction([_number(v) for v in logprobs])
        scored = prediction is not None
    golds = [choices[i] for i in gold_index if 0 <= i < len(choices)]
    prompt = response_cell.get("input")
    prompt = json_text(prompt) if prompt not in (None, "", []) else None
    metrics = _as_dict(row.get("metric")) or _as_dict(row.get("metrics"))
    return {
        "id": doc.get("id"),
        "query": query,
        "choices": choices,
        "gold_index": gold_index,
        "prompt": prompt or query,
        "prediction": prediction,
        "response": response,
        "gold": _gold_text(golds) or _gold_text(gold_index),
        "metrics": metrics,
        "answer_status": _status(
            response_cell.get("truncated_tokens_count"), doc.get("specific"), scored
        ),
    }


def _correct(metrics: dict[str, Any], metric: str | None, where: str) -> bool:
    values = {k: v for k, v in metrics.items() if v is not None}
    return binary_metric(
        values, metric=metric, defaults=DEFAULT_METRICS, present=list(values), where=where
    )


def row_columns(
    table: pa.Table, nested: bool, metric: str | None, file: Path, first_row: int = 1
) -> dict:
    """The file's ``FILE_COLUMNS`` and its queries (``query``), row by row (``first_row``: the
    number of the table's first row in the file, for messages)."""
    columns: dict[str, list] = {name: [] for name in ("query", *FILE_COLUMNS)}
    for i, raw in enumerate(table.to_pylist(), start=first_row):
        row = _nested_row(raw) if nested else _flat_row(raw)
        correct = _correct(row["metrics"], metric, f"{file}:row {i}")
        doc_id = row["id"]
        num_choices = _num_choices(row["choices"], row["gold_index"])
        columns["doc_id"].append(None if doc_id is None else str(doc_id))
        columns["query"].append(row["query"])
        columns["choices_key"].append("\x1f".join(row["choices"]))
        if num_choices is None:
            columns["gold_key"].append(row["gold"] or "")
        else:
            columns["gold_key"].append(",".join(str(g) for g in sorted(row["gold_index"])))
        columns["correct"].append(correct)
        columns["num_choices"].append(num_choices)
        columns["prompt"].append(row["prompt"])
        columns["response"].append(row["response"])
        columns["prediction"].append(row["prediction"])
        columns["gold"].append(row["gold"])
        columns["choices"].append(choices_json(row["choices"]) if row["choices"] else None)
        columns["answer_status"].append(row["answer_status"])
    types = {"correct": pa.bool_(), "num_choices": pa.int16()}
    out = {name: pa.array(values, types.get(name, pa.string())) for name, values in columns.items()}
    return out
