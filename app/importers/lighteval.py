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
``str(value)`` (a Python repr); such columns are parsed back here, row by row. Files in the usual
shapes are read with Arrow kernels only (no per-row Python).

A whole tree imports at once: a details file, a run folder, a model's details folder holding many
runs, or an output folder; each run's seed is read from its results file
(``app.importers.lighteval_runs``).

``sample_id`` is the doc's ``id`` when every row of the file has one; otherwise the question key of
``app.sample_identity`` (``q:`` + hash of the question without the template, the options and
the gold answer), never the row position.
"""

from __future__ import annotations

import ast
import json
import re
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from app.importers.common import InputError, build_table, choices_json, parse_binary
from app.importers.lighteval_runs import DetailsRun, find_runs, plan_files
from app.sample_identity import identify, question_texts, unit_affixes

__all__ = ["DEFAULT_METRICS", "read_lighteval"]

DEFAULT_METRICS = ("acc", "exact_match", "extractive_match", "em")
"""Metrics used for ``correct`` when none is named, in order (lighteval calls exact match "em")."""

Progress = Callable[[str, int, int], None]
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


# columns the reader uses (token ids, logits and the like are never read)
_FLAT_COLUMNS = (
    "example",
    "full_prompt",
    "predictions",
    "choices",
    "gold_index",
    "gold",
    "metrics",
)
_NESTED_COLUMNS = ("doc", "model_response", "metric", "metrics")


def _read_rows(file: Path) -> tuple[pa.Table, bool]:
    """The columns of a details file the reader needs, and whether it is nested (v0.11+)."""
    try:
        parquet = pq.ParquetFile(file)
        names = set(parquet.schema_arrow.names)
        if {"doc", "model_response"} <= names:
            nested = True
        elif "metrics" in names and ({"example", "predictions"} & names):
            nested = False
        else:
            raise InputError(
                f"{file}: not a lighteval details table (columns: {', '.join(sorted(names))}); "
                "expected doc/model_response/metric (v0.11+) or example/predictions/metrics (v0.10)"
            )
        wanted = [c for c in (_NESTED_COLUMNS if nested else _FLAT_COLUMNS) if c in names]
        # one thread per file: the files themselves are read on two threads (_read_ahead)
        return parquet.read(columns=wanted, use_threads=False), nested
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{file}: not a readable parquet file ({exc})") from None


# ---------------------------------------------------------------------------------------------
# details files -> rows. Files in the usual shapes are reduced to a few uniform columns each
# (``_uniform``), concatenated, and computed on together (``_from_uniform``): a tree of hundreds
# of small files costs a few Arrow kernels, not a few per file. Other files go row by row.

# what the reader produces per row, before sample ids are settled across the whole import
_FILE_COLUMNS = (
    "doc_id",
    "query",
    "choices_key",
    "gold_key",
    "correct",
    "num_choices",
    "prompt",
    "response",
    "prediction",
    "gold",
    "choices",
)

_STRINGS = pa.list_(pa.string())
_UNIFORM = pa.schema(
    [
        ("doc_id", pa.string()),
        ("query", pa.string()),
        ("prompt", pa.string()),
        ("texts", _STRINGS),
        ("post", _STRINGS),
        ("choices", _STRINGS),
        ("first_gold", pa.int64()),
        ("n_gold", pa.int64()),
        ("gold_texts", _STRINGS),
        ("correct", pa.bool_()),
    ]
)


class _SlowPath(Exception):
    """The file's columns are not in the shapes the vectorized reader handles."""


def _field(col: pa.ChunkedArray | pa.Array, name: str) -> pa.Array:
    col = _plain(col)
    if not pa.types.is_struct(col.type) or col.type.get_field_index(name) < 0:
        raise _SlowPath
    return pc.struct_field(col, name)


def _plain(col) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 1:
            return col.chunk(0)
        return col.combine_chunks() if col.num_chunks else pa.array([], col.type)
    return col


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_text_list(t: pa.DataType) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and _is_text(t.value_type)


def _first(lists: pa.Array) -> pa.Array:
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


def _gold_indices(col: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(first gold index per row, number of gold indices per row) of an int or list<int> column."""
    if col.null_count:
        raise _SlowPath
    if pa.types.is_integer(col.type):
        return col.cast(pa.int64()), pa.array(np.ones(len(col), np.int64))
    if (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)) and pa.types.is_integer(
        col.type.value_type
    ):
        return _first(col).cast(pa.int64()), pc.list_value_length(col).cast(pa.int64())
    raise _SlowPath


def _choices_json(joined: pa.Array) -> pa.Array:
    """Stored JSON of each row's options, from the options joined by \\x1f (per distinct list)."""
    encoded = pc.dictionary_encode(joined)
    as_json = [
        None if v is None else json.dumps(v.split("\x1f") if v else [], ensure_ascii=False)
        for v in encoded.dictionary.to_pylist()
    ]
    return pc.take(pa.array(as_json, pa.string()), encoded.indices)


def _strings(col) -> pa.Array:
    return pc.cast(col, _STRINGS) if col is not None else None


def _uniform(table: pa.Table, nested: bool, metric: str | None) -> pa.Table:
    """One file in the uniform columns of ``_UNIFORM``; _SlowPath when its shapes are unusual."""
    n = table.num_rows
    names = table.column_names
    if nested:
        doc, response = table["doc"], table["model_response"]
        query = _field(doc, "query")
        choices = _field(doc, "choices")
        gold_index = _field(doc, "gold_index")
        texts = _field(response, "text")
        prompt = _field(response, "input")
        metrics = _plain(table["metric"] if "metric" in names else table["metrics"])
        doc_id = _field(doc, "id") if _plain(doc).type.get_field_index("id") >= 0 else None
        post = (
            _field(response, "text_post_processed")
            if _plain(response).type.get_field_index("text_post_processed") >= 0
            else None
        )
        gold_texts = None
    else:
        query = _plain(table["example"])
        choices = _plain(table["choices"]) if "choices" in names else None
        gold_index = _plain(table["gold_index"]) if "gold_index" in names else None
        texts = _plain(table["predictions"])
        prompt = _plain(table["full_prompt"]) if "full_prompt" in names else query
        metrics = _plain(table["metrics"])
        doc_id = post = None
        gold_texts = _plain(table["gold"]) if "gold" in names else None
    if choices is None or gold_index is None or not _is_text_list(choices.type):
        raise _SlowPath
    if not (_is_text(query.type) and _is_text(prompt.type) and _is_text_list(texts.type)):
        raise _SlowPath
    if not pa.types.is_struct(metrics.type):
        raise _SlowPath
    if texts.null_count or (n and pc.min(pc.list_value_length(texts)).as_py() == 0):
        raise _SlowPath  # log-likelihood rows: predictions are per-choice scores
    if post is not None and pa.types.is_null(post.type):
        post = None
    if post is not None and not _is_text_list(post.type):
        raise _SlowPath
    if gold_texts is not None and not _is_text_list(gold_texts.type):
        gold_texts = None
    if doc_id is not None and not _is_text(doc_id.type):
        doc_id = pc.cast(doc_id, pa.string())

    # correct: the chosen metric, binary, in every row (else the row reader names the problem)
    present = [
        metrics.type.field(i).name
        for i in range(metrics.type.num_fields)
        if pc.struct_field(metrics, i).null_count < n
    ]
    name = (
        metric if metric is not None else next((m for m in DEFAULT_METRICS if m in present), None)
    )
    if name is None or name not in present:
        raise _SlowPath
    values = pc.struct_field(metrics, metrics.type.get_field_index(name))
    if values.null_count or not (
        pa.types.is_integer(values.type) or pa.types.is_floating(values.type)
    ):
        raise _SlowPath
    values = values.cast(pa.float64())
    if not pc.all(pc.is_in(values, pa.array([0.0, 1.0]))).as_py():
        raise _SlowPath
    first_gold, n_gold = _gold_indices(gold_index)
    if pc.any(pc.greater(n_gold, 1)).as_py():
        raise _SlowPath  # several gold answers: kept as a JSON list by the row reader
    return pa.table(
        [
            doc_id if doc_id is not None else pa.nulls(n, pa.string()),
            pc.cast(query, pa.string()),
            pc.cast(prompt, pa.string()),
            _strings(texts),
            _strings(post) if post is not None else pa.nulls(n, _STRINGS),
            _strings(choices),
            first_gold,
            n_gold,
            _strings(gold_texts) if gold_texts is not None else pa.nulls(n, _STRINGS),
            pc.equal(values, 1.0),
        ],
        schema=_UNIFORM,
    )


def _from_uniform(table: pa.Table) -> dict:
    """``_FILE_COLUMNS`` of the concatenated uniform rows of many files, with Arrow kernels."""
    # the texts stay in their per-file chunks (copying them is most of the cost); only the lists,
    # whose offsets are worked on in numpy, become one array each
    texts = ("doc_id", "query", "prompt")
    cols = {
        name: table[name] if name in texts else _plain(table[name]) for name in table.column_names
    }
    choices, first_gold, n_gold = cols["choices"], cols["first_gold"], cols["n_gold"]
    k = pc.fill_null(pc.list_value_length(choices), 0)
    num_choices = pc.if_else(
        pc.and_(pc.greater_equal(k, 2), pc.less(n_gold, k)), k.cast(pa.int16()), None
    )
    # the gold option's text: choices[first_gold], else the file's gold list, else the index
    choice_values = pc.list_flatten(choices)
    offsets = (
        pc.subtract(choices.offsets[:-1], choices.offsets[0]).to_numpy()
        if len(choices)
        else np.zeros(0, np.int64)
    )
    fg = pc.fill_null(first_gold, -1).to_numpy()
    valid = (fg >= 0) & (fg < k.to_numpy())
    where = np.where(valid, offsets + np.maximum(fg, 0), -1)
    gold = pc.take(choice_values, pa.array(where, mask=~valid))
    gold = pc.coalesce(gold, _first(cols["gold_texts"]), pc.cast(first_gold, pa.string()))
    joined = pc.binary_join(choices, "\x1f")
    response = _first(cols["texts"])
    prediction = pc.coalesce(_first(cols["post"]), response)
    no_prompt = pc.fill_null(pc.equal(cols["prompt"], ""), True)
    # the query stands in for a missing prompt (an if_else copies every prompt: only if needed)
    prompt = (
        pc.if_else(no_prompt, cols["query"], cols["prompt"])
        if pc.any(no_prompt).as_py()
        else cols["prompt"]
    )
    generative = pc.is_null(num_choices)
    return {
        "doc_id": cols["doc_id"],
        "query": cols["query"],
        "choices_key": joined,
        "gold_key": pc.if_else(generative, gold, pc.cast(first_gold, pa.string())),
        "correct": cols["correct"],
        "num_choices": num_choices,
        "prompt": prompt,
        "response": response,
        "prediction": prediction,
        "gold": gold,
        "choices": pc.if_else(pc.greater(k, 0), _choices_json(joined), None),
    }


def _row_columns(table: pa.Table, nested: bool, metric: str | None, file: Path) -> dict:
    """The file's columns, row by row (Python-repr cells, log-likelihood rows, odd shapes)."""
    columns: dict[str, list] = {name: [] for name in _FILE_COLUMNS}
    for i, raw in enumerate(table.to_pylist(), start=1):
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
    types = {"correct": pa.bool_(), "num_choices": pa.int16()}
    out = {name: pa.array(values, types.get(name, pa.string())) for name, values in columns.items()}
    return out


def _rows_table(columns: dict) -> pa.Table:
    return pa.table(
        {
            name: columns[name]
            if name in ("correct", "num_choices")
            else pc.cast(columns[name], pa.string())
            for name in _FILE_COLUMNS
        }
    )


READ_AHEAD = 4
"""Details files read and reduced ahead on two threads while earlier ones are collected: Parquet
decoding releases the GIL, so reading overlaps the rest. (The reduction's many small kernels hold
it often enough that two threads reduce no faster than one: measured, a 282-file tree.)"""


class _Unit(NamedTuple):
    """One details file (a task of a run), read and reduced: ``rows`` in ``_FILE_COLUMNS``."""

    rows: pa.Table
    slow: bool  # read row by row (``_row_columns``)
    question: pa.Array  # the query without what all of the unit's queries share: for keys
    shown: pa.Array  # the same, cut at line breaks: what lists show
    has_ids: bool  # every row has a document id


def _read_unit(file: Path, metric: str | None) -> _Unit:
    table, nested = _read_rows(file)
    try:
        rows, slow = _uniform(table, nested, metric), False
    except (_SlowPath, pa.ArrowException):
        rows, slow = _rows_table(_row_columns(table, nested, metric, file)), True
    # what all queries of this (task, run) share is removed to leave the question: at word
    # boundaries for its key, at line breaks for what lists show
    cuts = unit_affixes(rows["query"])
    doc_id = rows["doc_id"]
    return _Unit(
        rows,
        slow,
        question_texts(rows["query"], *cuts.words),
        question_texts(rows["query"], *cuts.lines),
        doc_id.null_count == 0
        and not pc.any(pc.equal(pc.utf8_trim_whitespace(doc_id), "")).as_py(),
    )


def _read_ahead(files: list[Path], metric: str | None) -> Iterator[_Unit]:
    """``_read_unit`` of each file, in order, with up to READ_AHEAD files worked on ahead."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        pending: deque = deque()
        for file in files:
            pending.append(pool.submit(_read_unit, file, metric))
            if len(pending) > READ_AHEAD:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _model_names(path: Path, runs: list[DetailsRun], model: str | None) -> dict[str | None, str]:
    """The name each run's model (as the tree names it) is stored under: ``model`` when given
    (the tree then must hold one model's runs), else the tree's own ``<org>/<model>``."""
    in_tree = sorted({run.model for run in runs}, key=lambda m: (m is None, m or ""))
    if model is not None:
        if len(in_tree) > 1:
            named = ", ".join(m or "(outside details/)" for m in in_tree)
            raise InputError(
                f"{path}: holds the runs of {len(in_tree)} models ({named}); import each model's "
                "folder (OUT/details/<org>/<model>) with its own --model, or leave --model out "
                "to store each under the name lighteval gave it"
            )
        return {m: model for m in in_tree}
    unnamed = next((run for run in runs if run.model is None), None)
    if unnamed is not None:
        raise InputError(
            f"{unnamed.folder}: cannot tell which model run {unnamed.timestamp} evaluated "
            "(lighteval writes OUT/details/<org>/<model>/<timestamp>/); pass --model NAME"
        )
    return {m: m for m in in_tree}


def read_lighteval(
    path: Path,
    *,
    model: str | None,
    metric: str | None = None,
    seed: int | None = None,
    latest: bool = False,
    progress: Progress | None = None,
) -> pa.Table:
    """Read lighteval details parquet files: a file, a run folder, a model's folder, an output tree.

    Returns the normalized table of ``app.importers.common`` (not validated: the caller does that).
    ``benchmark`` is the raw task string from the file name (``leaderboard|mmlu:anatomy|5``); the
    seed of each run comes from its results file unless ``seed`` is given (see ``plan_files``).
    Rows are stored under ``model``, or, when it is None, under each run's model as the tree
    names it (an output folder of several models imports them all).
    """
    runs = find_runs(Path(path))
    names = _model_names(Path(path), runs, model)
    planned = plan_files(runs, seed=seed, latest=latest)
    uniform, by_rows, uniform_units = [], [], []
    questions: list[pa.Array] = []  # per file
    shown: list[pa.Array] = []  # per file
    slow: list[bool] = []  # per file: read row by row
    has_ids: list[bool] = []  # per file: every row has a document id
    for number, unit in enumerate(_read_ahead([f for _, _, _, f in planned], metric)):
        if unit.slow:
            n = unit.rows.num_rows
            by_rows.append(unit.rows.append_column("unit", pa.array(np.full(n, number, np.int32))))
        else:
            uniform.append(unit.rows)
            uniform_units.append(np.full(unit.rows.num_rows, number, np.int32))
        slow.append(unit.slow)
        questions.append(unit.question)
        shown.append(unit.shown)
        has_ids.append(unit.has_ids)
        if progress:
            progress("read files", number + 1, len(planned))
    parts = list(by_rows)
    if uniform:
        fast = _rows_table(_from_uniform(pa.concat_tables(uniform)))
        parts.append(fast.append_column("unit", pa.array(np.concatenate(uniform_units))))
    table = pa.concat_tables(parts) if parts else None
    if table is None or table.num_rows == 0:
        raise InputError(f"{path}: the lighteval details files contain no rows")
    # rows are the slow-path files first, then the uniform ones: questions in the same order
    ranked = sorted(range(len(planned)), key=lambda i: (not slow[i], i))
    question = pa.chunked_array([questions[i] for i in ranked], pa.string()).combine_chunks()
    displayed = pa.chunked_array([shown[i] for i in ranked], pa.string())
    unit = table["unit"].combine_chunks()
    keyed = table.append_column("question", question).append_column(
        "has_ids", pc.take(pa.array(has_ids, pa.bool_()), unit)
    )
    sample_id = identify(keyed)
    tasks = pa.array([task for _, task, _, _ in planned], pa.string())
    seeds = pa.array([s for _, _, s, _ in planned], pa.int32())
    stored = sorted(set(names.values()))
    model_of_unit = pa.array([stored.index(names[m]) for m, _, _, _ in planned], pa.int32())
    return build_table(
        {
            "model": pa.DictionaryArray.from_arrays(pc.take(model_of_unit, unit), stored),
            "seed": pc.take(seeds, unit),
            "benchmark": pa.DictionaryArray.from_arrays(unit, tasks),
            "sample_id": sample_id,
            "correct": table["correct"],
            "num_choices": table["num_choices"],
            "prompt": table["prompt"],
            "response": table["response"],
            "prediction": table["prediction"],
            "gold": table["gold"],
            "choices": table["choices"],
            "question": displayed,
        }
    )
