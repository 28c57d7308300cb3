"""Reader for lm-evaluation-harness per-sample logs (``lm_eval --log_samples``).

lm-eval writes one ``samples_<task>_<date_id>.jsonl`` file per task, where ``date_id`` is
``datetime.now().isoformat().replace(":", "-")`` (e.g. ``2024-05-13T16-13-22.123456``), and the task
name is everything between the first and the last underscore (lm-eval's own
``get_file_task_name``). Each line is one (document, filter) pair::

    {"doc_id": 0, "doc": {...}, "target": "2",
     "arguments": {"gen_args_0": {"arg_0": "<context>", "arg_1": " A"}, ...},
     "resps": [[["-1.2", "False"]], ...], "filtered_resps": [["-1.2", "False"], ...],
     "filter": "none", "metrics": ["acc", "acc_norm"],
     "doc_hash": "...", "prompt_hash": "...", "target_hash": "...", "acc": 1.0, "acc_norm": 1.0}

``arguments`` holds one request per option for multiple-choice (loglikelihood) tasks, where each
request is ``(context, continuation)``, and one request ``(context, generation_kwargs)`` for
``generate_until`` tasks. Releases up to 0.4.2 stored it as a list of such pairs; since 0.4.3 the
tracker rewrites it as ``{"gen_args_<i>": {"arg_<j>": ...}}``. Both are read. The tracker also runs
``resps``/``filtered_resps`` through ``sanitize_list``, which turns every leaf into a string, so
log-likelihoods arrive as ``"-1.2"``; numbers are accepted too.

Rows are keyed by (task, doc_id, filter): a task evaluated with several filters (gsm8k's
``strict-match`` and ``flexible-extract``, every CoT task) has one line per filter and document.
One filter per task is imported: the one the caller names (``NAME`` for every task that has it,
``TASK=NAME`` for one task), else the first of ``DEFAULT_FILTERS`` the task has. The default
prefers the lenient extraction: a forgetting map should count what a model knows, not whether a
chat model still writes the answer in the base model's format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from app.importers.common import InputError, binary_metric, build_table, choices_json
from app.taxonomy import usual_num_choices

__all__ = [
    "DEFAULT_FILTERS",
    "DEFAULT_METRICS",
    "find_samples_files",
    "parse_filter_options",
    "read_lm_eval",
    "task_from_filename",
]

DEFAULT_FILTERS = ("flexible-extract", "get-answer", "strict-match", "none")
"""Filter taken for a task scored with several when none is chosen, in order of preference
(a task whose filters are all outside this list takes the first in file order)."""

DEFAULT_METRICS = ("acc", "exact_match", "extractive_match")
"""Metrics used for ``correct`` when none is named, in order of preference."""

_DATE_ID = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
_SAMPLES_NAME = re.compile(rf"^samples_(?P<task>.+)_(?P<date>{_DATE_ID})\.jsonl$")
_EXPECTED = "samples_<task>_<timestamp>.jsonl (written by lm_eval --log_samples --output_path DIR)"

# keys of a logged sample that are not metric values
_BOOKKEEPING = frozenset(
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


def task_from_filename(name: str) -> str | None:
    """The task of a ``samples_<task>_<timestamp>.jsonl`` file name, raw; None if not one."""
    match = _SAMPLES_NAME.match(name)
    if match:
        return match.group("task")
    if name.startswith("samples_") and name.endswith(".jsonl"):
        # lm-eval's get_file_task_name: between the first and the last underscore
        task = name[name.find("_") + 1 : name.rfind("_")]
        return task or None
    return None


def find_samples_files(path: Path) -> list[Path]:
    """The samples files at ``path``: the file itself, or ``samples_*.jsonl`` below a directory."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory (expected {_EXPECTED})")
    if path.is_dir():
        files = sorted(p for p in path.rglob("samples_*.jsonl") if p.is_file())
        if not files:
            raise InputError(f"{path}: no lm-eval samples files found; expected {_EXPECTED}")
        return files
    if task_from_filename(path.name) is None:
        raise InputError(f"{path}: not an lm-eval samples file name; expected {_EXPECTED}")
    return [path]


def _records(file: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, parsed object) for each non-blank line of a samples file."""
    with file.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{file}: line {lineno} is not valid UTF-8 ({exc.reason} at byte {exc.start}); "
                    "lm-eval writes UTF-8, re-export or re-encode the file"
                ) from None
            if lineno == 1:
                text = text.lstrip("\ufeff")
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"{file}:{lineno}: malformed JSON ({exc.msg} at column {exc.colno}); "
                    "each line of a samples file must be one JSON object"
                ) from None
            if not isinstance(record, dict):
                raise InputError(
                    f"{file}:{lineno}: expected a JSON object per line, got {type(record).__name__}"
                )
            yield lineno, record


def _arguments(value: Any) -> list[list[Any]]:
    """Requests as a list of argument lists, from either stored shape of ``arguments``."""
    if isinstance(value, dict):

        def index(key: str) -> tuple[int, str]:
            digits = re.search(r"(\d+)$", key)
            return (int(digits.group(1)) if digits else 0, key)

        requests = []
        for key in sorted(value, key=index):
            args = value[key]
            if isinstance(args, dict):
                requests.append([args[k] for k in sorted(args, key=index)])
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
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _metrics_present(record: dict[str, Any]) -> list[str]:
    listed = record.get("metrics")
    if isinstance(listed, list):
        names = [m for m in listed if isinstance(m, str) and m in record]
        if names:
            return names
    return [
        k
        for k, v in record.items()
        if k not in _BOOKKEEPING and isinstance(v, (int, float, bool, str))
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
) -> dict[str, Any]:
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

    prompt = _text(requests[0][0]) if requests and requests[0] else None
    choices = response = prediction = None
    if multiple_choice:
        contexts = [r[0] for r in requests]
        continuations = [r[1] for r in requests]
        num_choices = len(requests) if len(requests) >= 2 else None
        if num_choices is not None:
            # multiple-input tasks (winogrande) vary the context and share the continuation
            shared = len(set(continuations)) == 1 and len(set(contexts)) > 1
            choices = choices_json(contexts if shared else continuations)
        filtered = record.get("filtered_resps")
        raw = record.get("resps")
        lls = None
        for source in (filtered, raw):
            if isinstance(source, list) and len(source) == len(requests):
                parsed = [_loglikelihood(r) for r in source]
                if all(v is not None for v in parsed):
                    lls = parsed
                    break
        if lls is not None:
            response = json.dumps(lls, separators=(",", ":"))
            if num_choices is not None:
                prediction = str(max(range(len(lls)), key=lls.__getitem__))
    else:
        num_choices = usual_num_choices(task)
        response = _first_text(record.get("resps"))
        filtered = record.get("filtered_resps")
        prediction = _first_text(filtered[0] if isinstance(filtered, list) and filtered else None)

    target = record.get("target")
    return {
        "sample_id": str(doc_id),
        "correct": correct,
        "num_choices": num_choices,
        "prompt": prompt,
        "response": response,
        "prediction": prediction,
        "gold": None if target is None else str(target),
        "choices": choices,
        "doc_hash": _text(record.get("doc_hash")),
    }


def parse_filter_options(options: list[str] | tuple[str, ...] | str | None) -> dict[str, str]:
    """``--filter`` values to {task or "": filter}: ``NAME`` applies to every task, ``TASK=NAME``
    to one task. Two choices for the same task are refused."""
    if options is None:
        return {}
    if isinstance(options, str):
        options = [options]
    chosen: dict[str, str] = {}
    for option in options:
        task, sep, name = option.rpartition("=")
        task, name = (task.strip(), name.strip()) if sep else ("", option.strip())
        if not name:
            raise InputError(f"--filter {option!r}: give a filter name, or TASK=NAME")
        if task in chosen and chosen[task] != name:
            what = f"task {task!r}" if task else "all tasks"
            raise InputError(f"--filter chooses two filters for {what}: {chosen[task]}, {name}")
        chosen[task] = name
    return chosen


def _choose_filter(
    task: str, filters: list[str], chosen: dict[str, str], files: str
) -> tuple[str, str]:
    """(filter, why) for one task: the one named for it, the one named for all, or the default."""
    listed = ", ".join(filters)
    for key, why in ((task, f"--filter {task}=NAME"), ("", "--filter NAME")):
        name = chosen.get(key)
        if name is None:
            continue
        if name in filters:
            return name, why
        if key or len(filters) > 1:
            raise InputError(
                f"{files}: task {task!r} has no filter {name!r}; its filters are: {listed}; "
                f"choose one with --filter {task}=NAME"
            )
    if len(filters) == 1:
        return filters[0], "only filter"
    default = next((f for f in DEFAULT_FILTERS if f in filters), filters[0])
    return default, "default"


def read_lm_eval(
    path: Path,
    *,
    model: str,
    metric: str | None = None,
    filter_name: list[str] | tuple[str, ...] | str | None = None,
    seed: int = 0,
    on_filter: Callable[[str, str, list[str], str], None] | None = None,
) -> pa.Table:
    """Read lm-eval ``samples_*.jsonl`` (one file, or a directory searched recursively).

    Returns the normalized table of ``app.importers.common`` (not validated: the caller does that).
    ``benchmark`` is the raw task name from the file name; ``sample_id`` is ``str(doc_id)``.
    ``on_filter(task, taken, filters, why)`` is told the filter taken for each task with several.
    """
    chosen_filters = parse_filter_options(filter_name)
    files = find_samples_files(Path(path))
    by_task: dict[str, Path] = {}
    for file in files:
        task = task_from_filename(file.name)
        if task is None:  # a directory match like samples_x.jsonl with no task part
            raise InputError(
                f"{file}: cannot read the task from the file name; expected {_EXPECTED}"
            )
        if task in by_task:
            raise InputError(
                f"{path}: task {task!r} has more than one samples file ({by_task[task]}, {file}), "
                "e.g. from two runs; import one run at a time"
            )
        by_task[task] = file

    rows: dict[str, list[Any]] = {}
    benchmarks: list[str] = []
    for task, file in by_task.items():
        records = list(_records(file))
        filters: list[str] = []
        for _, record in records:
            name = record.get("filter")
            name = "none" if name is None else str(name)
            if name not in filters:
                filters.append(name)
        if not records:
            continue
        chosen, why = _choose_filter(task, filters, chosen_filters, str(file))
        if on_filter is not None and len(filters) > 1:
            on_filter(task, chosen, filters, why)
        for lineno, record in records:
            name = record.get("filter")
            if ("none" if name is None else str(name)) != chosen:
                continue
            row = _convert(record, task=task, metric=metric, where=f"{file}:{lineno}")
            for key, value in row.items():
                rows.setdefault(key, []).append(value)
            benchmarks.append(task)

    if not benchmarks:
        raise InputError(f"{path}: the lm-eval samples files contain no samples")
    n = len(benchmarks)
    return build_table(
        {
            "model": [model] * n,
            "benchmark": benchmarks,
            "seed": [seed] * n,
            "category": [None] * n,
            **rows,
        }
    )
