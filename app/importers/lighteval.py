"""Reader for lighteval details files (``lighteval ... --save-details``).

lighteval writes one parquet file per task at
``{output_dir}/details/{model}/{date_id}/details_{task}_{date_id}.parquet``, where ``task`` is the
full task string (``leaderboard|mmlu:anatomy|5``; ``suite|task|fewshot``) and ``date_id`` is
``datetime.now().isoformat().replace(":", "-")``. The file holds ``asdict(Detail)`` rows, columns
sorted by name. Two layouts exist:

- up to v0.10, "flat": ``example`` (the query), ``instruction``, ``full_prompt``,
  ``num_effective_few_shots``, ``num_asked_few_shots``, ``predictions`` (generated texts, or one
  ``(logprob, is_greedy)`` per choice for log-likelihood tasks), ``prediction_logits``,
  ``input_tokens``, ``cont_tokens``, ``truncated``, ``padded``, ``gold``, ``pred_logits``,
  ``choices``, ``gold_index``, ``metrics`` (metric -> value), ``specifics``;
- v0.11 and later, nested: ``doc`` (the ``Doc``: ``query``, ``choices``, ``gold_index``,
  ``instruction``, ``id``, ``task_name``, ``specific``, ...), ``model_response`` (the
  ``ModelResponse``: ``input``, ``text``, ``text_post_processed``, ``logprobs``,
  ``argmax_logits_eq_gold``, ``input_tokens``, ``output_tokens``, ...) and ``metric``.

When the rows could not be turned into Arrow directly, some versions stored every column as
``str(value)`` (a Python repr); such columns are parsed back here.

``sample_id`` is the doc's ``id`` when it has one, else ``content_sample_id(query, choices)``
(``sha256`` of the JSON list ``[query, choices]``, first 16 hex digits), never the row position.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from app.importers.common import InputError, build_table, choices_json, parse_binary

__all__ = [
    "DEFAULT_METRICS",
    "content_sample_id",
    "find_details_files",
    "read_lighteval",
    "task_from_filename",
]

DEFAULT_METRICS = ("acc", "exact_match", "extractive_match", "em")
"""Metrics used for ``correct`` when none is named, in order (lighteval calls exact match "em")."""

_DATE_ID = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
_DETAILS_NAME = re.compile(rf"^details_(?P<task>.+)_(?P<date>{_DATE_ID})\.parquet$")
_EXPECTED = (
    "details_<task>_<timestamp>.parquet "
    "(written by lighteval --save-details under OUTPUT_DIR/details/MODEL/TIMESTAMP/)"
)
_ENUM_REPR = re.compile(r"<([A-Za-z_][\w.]*): ([^<>]*)>")


def task_from_filename(name: str) -> str | None:
    """The raw task string of a ``details_<task>_<timestamp>.parquet`` name; None if not one."""
    match = _DETAILS_NAME.match(name)
    if match:
        return match.group("task")
    if name.startswith("details_") and name.endswith(".parquet"):
        task = name[len("details_") : name.rfind("_")]
        return task or None
    return None


def find_details_files(path: Path) -> list[Path]:
    """The details files at ``path``: the file itself, or ``details_*.parquet`` below a folder."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory (expected {_EXPECTED})")
    if path.is_dir():
        files = sorted(p for p in path.rglob("details_*.parquet") if p.is_file())
        if not files:
            raise InputError(f"{path}: no lighteval details files found; expected {_EXPECTED}")
        return files
    if task_from_filename(path.name) is None:
        raise InputError(f"{path}: not a lighteval details file name; expected {_EXPECTED}")
    return [path]


def content_sample_id(query: str, choices: list[str]) -> str:
    """Stable id of a document without an id: sha256 of JSON ``[query, choices]``, 16 hex."""
    payload = json.dumps([query, [str(c) for c in choices]], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


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


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


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
    if not lls or any(v is None for v in lls):
        return None, None
    best = max(range(len(lls)), key=lambda i: lls[i])
    return str(best), json.dumps(lls, separators=(",", ":"))


def _flat_row(row: dict[str, Any]) -> dict[str, Any]:
    query = _text(row.get("example")) or ""
    choices = [str(c) for c in _as_list(row.get("choices"))]
    gold_index = _indices(row.get("gold_index"))
    predictions = _as_list(row.get("predictions"))
    lls = [_number(p) for p in predictions]
    if choices and len(predictions) == len(choices) and all(v is not None for v in lls):
        prediction, response = _logprob_prediction(lls)
    else:
        prediction = response = _text(predictions[0]) if predictions else None
    golds = [choices[i] for i in gold_index if 0 <= i < len(choices)]
    if not golds:
        golds = _as_list(row.get("gold"))
    return {
        "id": None,
        "query": query,
        "choices": choices,
        "gold_index": gold_index,
        "prompt": _text(row.get("full_prompt")) or query,
        "prediction": prediction,
        "response": response,
        "gold": _gold_text(golds) or _gold_text(gold_index),
        "metrics": _as_dict(row.get("metrics")),
    }


def _nested_row(row: dict[str, Any]) -> dict[str, Any]:
    doc = _as_dict(row.get("doc"))
    response_cell = _as_dict(row.get("model_response"))
    query = _text(doc.get("query")) or ""
    choices = [str(c) for c in _as_list(doc.get("choices"))]
    gold_index = _indices(doc.get("gold_index"))
    texts = _as_list(response_cell.get("text"))
    post = _as_list(response_cell.get("text_post_processed"))
    logprobs = _as_list(response_cell.get("logprobs"))
    if texts:
        response = _text(texts[0])
        prediction = _text(post[0]) if post and post[0] is not None else response
    else:
        prediction, response = _logprob_prediction([_number(v) for v in logprobs])
    golds = [choices[i] for i in gold_index if 0 <= i < len(choices)]
    prompt = response_cell.get("input")
    prompt = _text(prompt) if prompt not in (None, "", []) else None
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
    }


def _correct(metrics: dict[str, Any], metric: str | None, where: str) -> bool:
    present = [k for k, v in metrics.items() if v is not None]
    shown = ", ".join(present) if present else "none"
    if metric is not None:
        if metric not in present:
            raise InputError(
                f"{where}: metric {metric!r} is not in this sample; metrics present: {shown}; "
                "pass one of them with --metric"
            )
        name = metric
    else:
        name = next((m for m in DEFAULT_METRICS if m in present), None)
        if name is None:
            raise InputError(
                f"{where}: none of the default metrics ({', '.join(DEFAULT_METRICS)}) is present; "
                f"metrics present: {shown}; choose a binary one with --metric NAME"
            )
    value = metrics[name]
    try:
        return parse_binary(value, where=where)
    except InputError:
        others = [m for m in present if m != name]
        hint = f" (present: {', '.join(others)})" if others else ""
        raise InputError(
            f"{where}: metric {name!r} has the non-binary value {value!r}; forgetmap counts "
            f"per-sample 0/1 flips, choose a binary metric with --metric{hint}"
        ) from None


def _read_rows(file: Path) -> tuple[list[dict[str, Any]], bool]:
    """Rows of a details file and whether it has the nested (v0.11+) layout."""
    try:
        table = pq.read_table(file)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{file}: not a readable parquet file ({exc})") from None
    names = set(table.column_names)
    if {"doc", "model_response"} <= names:
        nested = True
    elif "metrics" in names and ({"example", "predictions"} & names):
        nested = False
    else:
        raise InputError(
            f"{file}: not a lighteval details table (columns: {', '.join(sorted(names))}); "
            "expected doc/model_response/metric (v0.11+) or example/predictions/metrics (v0.10)"
        )
    return table.to_pylist(), nested


def read_lighteval(path: Path, *, model: str, metric: str | None = None, seed: int = 0) -> pa.Table:
    """Read lighteval details parquet files (one file, or a directory searched recursively).

    Returns the normalized table of ``app.importers.common`` (not validated: the caller does that).
    ``benchmark`` is the raw task string from the file name (``leaderboard|mmlu:anatomy|5``).
    """
    files = find_details_files(Path(path))
    by_task: dict[str, Path] = {}
    for file in files:
        task = task_from_filename(file.name)
        if task is None:
            raise InputError(
                f"{file}: cannot read the task from the file name; expected {_EXPECTED}"
            )
        if task in by_task:
            raise InputError(
                f"{path}: task {task!r} has more than one details file ({by_task[task]}, {file}), "
                "e.g. from two runs; import one run at a time"
            )
        by_task[task] = file

    columns: dict[str, list[Any]] = {
        name: []
        for name in (
            "benchmark",
            "sample_id",
            "correct",
            "num_choices",
            "prompt",
            "response",
            "prediction",
            "gold",
            "choices",
        )
    }
    for task, file in by_task.items():
        rows, nested = _read_rows(file)
        seen: dict[str, int] = {}
        for i, raw in enumerate(rows, start=1):
            where = f"{file}:row {i}"
            row = _nested_row(raw) if nested else _flat_row(raw)
            correct = _correct(row["metrics"], metric, where)
            doc_id = row["id"]
            if doc_id is not None and str(doc_id).strip():
                sample_id = str(doc_id).strip()
            else:
                sample_id = content_sample_id(row["query"], row["choices"])
                # identical documents (same query and choices) are told apart by occurrence
                seen[sample_id] = seen.get(sample_id, 0) + 1
                if seen[sample_id] > 1:
                    sample_id = f"{sample_id}~{seen[sample_id]}"
            columns["benchmark"].append(task)
            columns["sample_id"].append(sample_id)
            columns["correct"].append(correct)
            columns["num_choices"].append(_num_choices(row["choices"], row["gold_index"]))
            columns["prompt"].append(row["prompt"])
            columns["response"].append(row["response"])
            columns["prediction"].append(row["prediction"])
            columns["gold"].append(row["gold"])
            columns["choices"].append(choices_json(row["choices"]) if row["choices"] else None)

    n = len(columns["benchmark"])
    if n == 0:
        raise InputError(f"{path}: the lighteval details files contain no rows")
    return build_table(
        {
            "model": [model] * n,
            "seed": [seed] * n,
            "category": [None] * n,
            **columns,
        }
    )
