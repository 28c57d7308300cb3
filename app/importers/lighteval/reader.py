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
``str(value)`` (a Python repr); such columns are parsed back row by row
(``forgetmap.importers.lighteval.rows``). Files in the usual shapes are read with Arrow kernels only (no
per-row Python): generated answers, and log-likelihood tasks (a score per choice: v0.10
``predictions`` of ``(logprob, is_greedy)`` pairs, v0.11+ ``logprobs``; ``_logprob_texts``).

Each file's prompts are split into the file's template (few-shot block, chat turns) and each row's
own part as it is read (``forgetmap.core.prompt_templates.settle_unit``): the table carries ``prompt_prefix``
and ``prompt_suffix`` (``forgetmap.importers.common``), and the whole prompts are let go with their file.
A flat file whose ``full_prompt`` is stored as the same bytes as its ``example`` (a base model
without a chat template) has its prompts decoded once, and of the nested layout's ``doc`` and
``model_response`` only the fields the reader uses are decoded (``forgetmap.importers.lighteval.files``).

A whole tree imports at once: a details file, a run folder, a model's details folder holding many
runs, or an output folder; each run's seed is read from its results file
(``forgetmap.importers.lighteval.runs``).

``sample_id`` is the doc's ``id`` when every row of the file has one; otherwise the question key of
``forgetmap.core.sample_identity`` (``q:`` + hash of the question without the template, the options and
the gold answer), never the row position. Each answer's status (``answer_status``: cut prompt,
empty extraction, ...) follows ``forgetmap.importers.lighteval.status``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from forgetmap.core.columns import (
    dictionary_codes,
    first_items,
    first_max_positions,
    one_array,
    one_item_lists,
)
from forgetmap.core.prompt_templates import settle_unit
from forgetmap.core.sample_identity import identify, question_texts, unit_affixes
from forgetmap.importers.common import (
    InputError,
    binary_column,
    build_table,
    choices_json_column,
    logprob_lists_json,
)
from forgetmap.importers.lighteval.files import EXTRACTED, read_columns
from forgetmap.importers.lighteval.rows import DEFAULT_METRICS, FILE_COLUMNS, row_columns
from forgetmap.importers.lighteval.runs import find_runs, model_names, plan_files
from forgetmap.importers.lighteval.status import cut_counts, status_column

__all__ = ["DEFAULT_METRICS", "iter_lighteval", "read_lighteval"]

Progress = Callable[[str, int, int], None]

# ---------------------------------------------------------------------------------------------
# details files -> rows. Files in the usual shapes are reduced to a few uniform columns each
# (``_uniform``), concatenated a task of files at a time, and computed on together
# (``_from_uniform``, ``_keyed``): a tree of hundreds of small files costs a few Arrow kernels
# per task, not a few per file. Other files go row by row.

_STRINGS = pa.list_(pa.string())
_UNIFORM = pa.schema(
    [
        ("doc_id", pa.string()),
        ("query", pa.string()),
        ("prompt", pa.string()),
        ("texts", _STRINGS),
        ("post", _STRINGS),
        ("extracted", _STRINGS),
        ("choices", _STRINGS),
        ("first_gold", pa.int64()),
        ("n_gold", pa.int64()),
        ("gold_texts", _STRINGS),
        ("correct", pa.bool_()),
        # the answer's status (``forgetmap.importers.lighteval.status``; null: not said)
        ("status", pa.string()),
    ]
)


class _SlowPath(Exception):
    """The file's columns are not in the shapes the vectorized reader handles."""


def _field(col: pa.ChunkedArray | pa.Array, name: str) -> pa.Array:
    """One field of a struct column as one array."""
    return one_array(_field_chunks(col, name))


def _field_chunks(col: pa.ChunkedArray | pa.Array, name: str) -> pa.ChunkedArray | pa.Array:
    """One field of a struct column, in the column's chunks (long texts are not copied)."""
    if not pa.types.is_struct(col.type) or col.type.get_field_index(name) < 0:
        raise _SlowPath
    return pc.struct_field(col, name)


def _optional_field(col: pa.ChunkedArray | pa.Array, name: str) -> pa.Array | None:
    """``_field`` of a struct column, or None where the struct has no such field."""
    return _field(col, name) if col.type.get_field_index(name) >= 0 else None


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_text_list(t: pa.DataType) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and _is_text(t.value_type)


def _gold_indices(col: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(first gold index per row, number of gold indices per row) of an int or list<int> column."""
    if col.null_count:
        raise _SlowPath
    if pa.types.is_integer(col.type):
        return col.cast(pa.int64()), pa.array(np.ones(len(col), np.int64))
    if (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)) and pa.types.is_integer(
        col.type.value_type
    ):
        return first_items(col).cast(pa.int64()), pc.list_value_length(col).cast(pa.int64())
    raise _SlowPath


def _strings(col) -> pa.Array:
    return pc.cast(col, _STRINGS) if col is not None else None


def _logprob_texts(scores: pa.Array, choices: pa.Array | None) -> tuple[pa.Array, pa.Array]:
    """(response, prediction) of log-likelihood rows, each as a one-item list per row, as the row
    reader gives them (``lighteval_rows._logprob_prediction``): the scores as a JSON list
    (``common.logprob_lists_json``) and the index of the highest score, the first of equals.

    ``scores``: per row a list of per-choice log-likelihoods (v0.11+ ``logprobs``) or of
    ``(logprob, is_greedy)`` pairs (v0.10 ``predictions``); a row without scores has neither.
    With ``choices`` (v0.10) every row must have a score per choice. Anything else (a NaN,
    whose maximum depends on the order; missing or non-numeric scores) is left to the row
    reader."""
    if not (pa.types.is_list(scores.type) or pa.types.is_large_list(scores.type)):
        raise _SlowPath
    if scores.null_count:
        raise _SlowPath
    n = len(scores)
    lengths = np.asarray(pc.list_value_length(scores).to_numpy(zero_copy_only=False), np.int64)
    items = pc.list_flatten(scores)
    if pa.types.is_list(items.type) or pa.types.is_large_list(items.type):
        if items.null_count or (len(items) and pc.min(pc.list_value_length(items)).as_py() == 0):
            raise _SlowPath
        items = first_items(items)  # (logprob, is_greedy): the logprob
    if items.null_count or not (
        pa.types.is_integer(items.type) or pa.types.is_floating(items.type)
    ):
        raise _SlowPath
    values = np.asarray(items.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)
    if np.isnan(values).any():
        raise _SlowPath
    if choices is not None:
        k = np.asarray(pc.fill_null(pc.list_value_length(choices), 0).to_numpy(), np.int64)
        if not ((lengths == k) & (k > 0)).all():
            raise _SlowPath
    best = first_max_positions(values, lengths)
    missing = best < 0
    prediction = pa.array(best, mask=missing).cast(pa.string())
    response = logprob_lists_json(pa.array(values), lengths)
    if missing.any():
        response = pc.if_else(pa.array(missing), pa.nulls(n, pa.string()), response)
    return one_item_lists(response), one_item_lists(prediction)


def _uniform(table: pa.Table, nested: bool, metric: str | None) -> pa.Table:
    """One file in the uniform columns of ``_UNIFORM``; _SlowPath when its shapes are unusual."""
    n = table.num_rows
    names = table.column_names
    if nested:
        doc, response = table["doc"], table["model_response"]
        # the query and the prompt stay in the files' chunks (``_uniform_rows``): no copy
        query = _field_chunks(doc, "query")
        choices = _field(doc, "choices")
        gold_index = _field(doc, "gold_index")
        texts = _field(response, "text")
        scores = _optional_field(response, "logprobs")
        prompt = _field_chunks(response, "input")
        metrics = one_array(table["metric"] if "metric" in names else table["metrics"])
        doc_id = _optional_field(doc, "id")
        post = _optional_field(response, "text_post_processed")
        has_specific = doc.type.get_field_index("specific") >= 0
        extracted = _extracted(_field_chunks(doc, "specific")) if has_specific else None
        gold_texts = None
        prompt_cut = cut_counts(_optional_field(response, "truncated_tokens_count"))
    else:
        query = table["example"]
        choices = one_array(table["choices"]) if "choices" in names else None
        gold_index = one_array(table["gold_index"]) if "gold_index" in names else None
        texts = scores = one_array(table["predictions"])
        prompt = table["full_prompt"] if "full_prompt" in names else query
        metrics = one_array(table["metrics"])
        doc_id = post = None
        extracted = _extracted(table["specifics"]) if "specifics" in names else None
        gold_texts = one_array(table["gold"]) if "gold" in names else None
        prompt_cut = cut_counts(one_array(table["truncated"]) if "truncated" in names else None)
    if choices is None or gold_index is None or not _is_text_list(choices.type):
        raise _SlowPath
    if not (_is_text(query.type) and _is_text(prompt.type)):
        raise _SlowPath
    if not pa.types.is_struct(metrics.type):
        raise _SlowPath
    scored = None  # log-likelihood rows: whether each has a prediction
    if not _is_text_list(texts.type) or (n and not pc.max(pc.list_value_length(texts)).as_py()):
        # log-likelihood rows: a score per choice, no generated text
        if scores is None:
            raise _SlowPath
        texts, post = _logprob_texts(scores, None if nested else choices)
        scored = pc.is_valid(first_items(post))
    if texts.null_count or (n and pc.min(pc.list_value_length(texts)).as_py() == 0):
        raise _SlowPath  # some rows with a text, some without
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
    correct = binary_column(pc.struct_field(metrics, metrics.type.get_field_index(name)))
    if correct is None:
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
            extracted if extracted is not None else pa.nulls(n, _STRINGS),
            _strings(choices),
            first_gold,
            n_gold,
            _strings(gold_texts) if gold_texts is not None else pa.nulls(n, _STRINGS),
            correct,
            status_column(n, prompt_cut, extracted, scored),
        ],
        schema=_UNIFORM,
    )


def _extracted(specifics: pa.ChunkedArray | pa.Array) -> pa.Array | None:
    """The answers an extractive metric took out of each row's text (``specifics`` or
    ``doc.specific``: ``lighteval_files.EXTRACTED``), as lists of strings; None where the file
    holds none; _SlowPath where they are not lists of strings (the row reader takes them)."""
    if _is_text(specifics.type):
        raise _SlowPath  # stored as text
    if not pa.types.is_struct(specifics.type) or specifics.type.get_field_index(EXTRACTED) < 0:
        return None
    extracted = _field(specifics, EXTRACTED)
    if pa.types.is_null(extracted.type):
        return None
    if not _is_text_list(extracted.type):
        raise _SlowPath
    return _strings(extracted)


def _from_uniform(table: pa.Table) -> dict:
    """``FILE_COLUMNS`` of the concatenated uniform rows of many files, with Arrow kernels."""
    # the texts stay in their per-file chunks (copying them is most of the cost); only the lists,
    # whose offsets are worked on in numpy, become one array each
    texts = ("doc_id", "prompt")
    cols = {
        name: table[name] if name in texts else one_array(table[name])
        for name in table.column_names
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
    gold = pc.coalesce(gold, first_items(cols["gold_texts"]), pc.cast(first_gold, pa.string()))
    joined = pc.binary_join(choices, "\x1f")
    response = first_items(cols["texts"])
    # the answer the metric extracted, else the post-processed text, else the text itself: a
    # chain of thought's answer is its letter, not its whole text again
    prediction = pc.coalesce(first_items(cols["extracted"]), first_items(cols["post"]), response)
    generative = pc.is_null(num_choices)
    return {
        "doc_id": cols["doc_id"],
        "choices_key": joined,
        "gold_key": pc.if_else(generative, gold, pc.cast(first_gold, pa.string())),
        "correct": cols["correct"],
        "num_choices": num_choices,
        "prompt": cols["prompt"],
        "response": response,
        "prediction": prediction,
        "gold": gold,
        "choices": pc.if_else(pc.greater(k, 0), choices_json_column(joined), None),
        "answer_status": cols["status"],
    }


def _rows_table(columns: dict) -> pa.Table:
    return pa.table(
        {
            name: columns[name]
            if name in ("correct", "num_choices")
            else pc.cast(columns[name], pa.string())
            for name in FILE_COLUMNS
        }
    )


class _Unit(NamedTuple):
    """One details file (a task of a run), read and reduced: ``rows`` in ``FILE_COLUMNS``, the
    prompt being each row's own part of it (``settle_unit``) under the file's template."""

    rows: pa.Table
    slow: bool  # read row by row (``row_columns``)
    question: pa.Array  # the query without what all of the unit's queries share: for keys
    shown: pa.Array  # the same, cut at line breaks: what lists show
    has_ids: bool  # every row has a document id
    prefix: str | None  # the prompts' template (None: each prompt is kept whole)
    suffix: str | None


def _read_unit(file: Path, table: pa.Table, nested: bool, metric: str | None,
               uniform: pa.Table | None) -> _Unit:  # fmt: skip
    """One file's ``_Unit`` from its columns (``read_columns``) and, when they are in the usual
    shapes, their uniform rows (``_uniform_rows``; None: the file is read row by row)."""
    if uniform is not None:
        rows, slow = uniform, False
        query, prompt = rows["query"], rows["prompt"]
        rows = rows.drop_columns(["query"])
    else:
        columns = row_columns(table, nested, metric, file)
        query, prompt = columns["query"], columns["prompt"]
        rows, slow = _rows_table(columns), True
    # what all queries of this (task, run) share is removed to leave the question: at word
    # boundaries for its key, at line breaks for what lists show
    cuts = unit_affixes(query)
    shown = question_texts(query, *cuts.lines)
    # the template is settled here, file by file, so that the query and the whole prompts (a
    # base model's few-shot block in every row: most of an import's memory) are let go with
    # their task (``_read_task``), not kept to the end: a paper import's peak memory 1.3 ->
    # 0.8-0.9 GB, a third fewer page faults
    settled = settle_unit(_prompt_or_query(prompt, query), shown)
    rows = rows.set_column(rows.schema.get_field_index("prompt"), "prompt", settled.own)
    doc_id = rows["doc_id"]
    return _Unit(
        rows,
        slow,
        question_texts(query, *cuts.words),
        shown,
        doc_id.null_count == 0
        and not pc.any(pc.equal(pc.utf8_trim_whitespace(doc_id), "")).as_py(),
        settled.prefix,
        settled.suffix,
    )


def _uniform_or_none(table: pa.Table, nested: bool, metric: str | None) -> pa.Table | None:
    try:
        return _uniform(table, nested, metric)
    except (_SlowPath, pa.ArrowException):
        return None


def _uniform_rows(read: list[tuple[pa.Table, bool]], metric: str | None) -> list[pa.Table | None]:
    """``_uniform`` of each file (None where it is not in the usual shapes), the files of one
    layout done together: one call instead of one a file (~40 kernels each; a task of the
    paper's layout holds 6-33 files). Every check of ``_uniform`` is a condition on all rows,
    or on the type, or holds for every file when it holds for all rows together (the chosen
    metric has no nulls, so it is the first default present in each file), so the files pass
    together exactly when each passes alone; when they do not, each file is tried alone."""
    if len(read) > 1:
        first, nested = read[0]
        if all(t.schema == first.schema and n == nested for t, n in read[1:]):
            together = _uniform_or_none(pa.concat_tables([t for t, _ in read]), nested, metric)
            if together is not None:
                starts = np.cumsum([0] + [t.num_rows for t, _ in read])
                bounds = zip(starts[:-1], starts[1:], strict=True)
                return [together.slice(a, b - a) for a, b in bounds]
    return [_uniform_or_none(table, nested, metric) for table, nested in read]


def _prompt_or_query(prompt: pa.Array, query: pa.Array) -> pa.Array:
    """The prompt, or the query where the file gives no prompt (an if_else copies every prompt:
    only when one is missing)."""
    prompt, query = one_array(prompt), one_array(query)
    missing = pc.fill_null(pc.equal(prompt, ""), True)
    return pc.if_else(missing, query, prompt) if pc.any(missing).as_py() else prompt


TASK_BYTES = (1 << 20, 8 << 20)
"""The least and the most bytes on disk of one task (``_read_task``): the details files the
reader threads read, reduce and key together, whole (model, task) groups (the seeds of a task,
whose rows of one sample a task puts side by side). The two threads do all of the reading and
keying (Parquet decoding, Arrow's kernels and DuckDB's hashing release the GIL), where a main
thread had keyed batches of the files they read and been the read's critical path (one model of
the paper's layout: 1.71 -> 1.58 s). Each task takes a quarter of the bytes not yet in a task,
within these bounds (``_tasks``): large tasks pay the per-task work (a few dozen kernels, a
DuckDB query) seldom, and the last, small ones keep both threads busy to the end. One model of
the paper's layout (84 MB: 14 tasks of 6-33 files instead of 33 of 2 MB) read in 1.04 s
instead of 1.19 s, the other in 1.12 s instead of 1.20 s (medians of 5 alternating runs,
docs/performance.md)."""


class _Part(NamedTuple):
    """A task's files, read and keyed: their rows in ``FILE_COLUMNS`` plus ``unit`` (the file's
    number) and ``sample_id``, and the questions lists show, in the same row order: the rows of
    one sample of a (model, task) side by side, in seed order (``_by_sample``); and each file's
    prompt template (prefix, suffix), in file order."""

    rows: pa.Table
    shown: pa.Array
    templates: list[tuple[str | None, str | None]]
    first_file: int  # the number of the task's first file (its files are numbered in a row)


def _tasks(files: list[Path], groups: np.ndarray) -> list[list[tuple[int, Path]]]:
    """The files (numbered in order) cut into tasks of whole groups: a task ends at the first
    group boundary past its budget, a quarter of the bytes not yet in a task within
    ``TASK_BYTES``."""
    least, most = TASK_BYTES
    sizes = [file.stat().st_size for file in files]
    left = sum(sizes)
    tasks: list[list[tuple[int, Path]]] = []
    size = budget = 0
    for number, (file, file_size) in enumerate(zip(files, sizes, strict=True)):
        if not tasks or (size >= budget and groups[number] != groups[number - 1]):
            tasks.append([])
            size, budget = 0, min(most, max(left // 4, least))
        tasks[-1].append((number, file))
        size += file_size
        left -= file_size
    return tasks


def _read_task(files: list[tuple[int, Path]], groups: np.ndarray, metric: str | None) -> _Part:
    read = [read_columns(file) for _, file in files]
    uniform = _uniform_rows(read, metric)
    units = [
        (number, _read_unit(file, table, nested, metric, rows))
        for (number, file), (table, nested), rows in zip(files, read, uniform, strict=True)
    ]
    del read, uniform  # the files' whole prompts: each unit keeps only its own parts
    rows, shown = _keyed(units, groups)
    return _Part(rows, shown, [(u.prefix, u.suffix) for _, u in units], files[0][0])


READ_AHEAD = 4
"""Tasks read ahead of the one the import is writing: enough to keep both threads busy while the
store writes a batch (2 left them waiting a third of a chat model's import), few enough that the
rows held wait for the writer, not pile up."""


def _read_tasks(
    tasks: list[list[tuple[int, Path]]], groups: np.ndarray, metric: str | None
) -> Iterator[_Part]:
    """``_read_task`` of each task, in order, on two threads, at most ``READ_AHEAD`` tasks
    beyond the one being consumed; a task's error is raised in its turn, and the tasks not
    started are dropped."""
    pool = ThreadPoolExecutor(max_workers=2)
    pending: deque = deque()
    try:
        for task in tasks:
            pending.append(pool.submit(_read_task, task, groups, metric))
            if len(pending) > READ_AHEAD:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _keyed(units: list[tuple[int, _Unit]], groups: np.ndarray) -> tuple[pa.Table, pa.Array]:
    """Rows and sample ids of whole files (``identify`` works per file, so a task of files
    gets the ids the whole import would give them), the rows of each sample of a (model, task)
    brought together (``groups``: each file's (model, task) number; a task holds whole groups)."""
    fast = [(n, u) for n, u in units if not u.slow]
    slow = [(n, u) for n, u in units if u.slow]
    units = fast + slow  # the row order of ``rows``
    parts = (
        [_rows_table(_from_uniform(pa.concat_tables([u.rows for _, u in fast])))] if fast else []
    )
    if slow:
        parts.append(pa.concat_tables([u.rows for _, u in slow]))
    rows = pa.concat_tables(parts)
    unit = np.concatenate([np.full(u.rows.num_rows, n, np.int32) for n, u in units])
    has_ids = np.concatenate([np.full(u.rows.num_rows, u.has_ids) for _, u in units])
    rows = rows.append_column("unit", pa.array(unit))
    keyed = rows.append_column(
        "question", pa.chunked_array([u.question for _, u in units], pa.string())
    ).append_column("has_ids", pa.array(has_ids, pa.bool_()))
    sample_id = identify(keyed)
    order = pa.array(_by_sample(groups[unit], unit, sample_id))
    shown = pa.chunked_array([u.shown for _, u in units], pa.string())
    return rows.append_column("sample_id", sample_id).take(order), one_array(shown.take(order))


def _by_sample(group: np.ndarray, unit: np.ndarray, sample_id: pa.Array) -> np.ndarray:
    """The row order that puts the rows of each sample of a group side by side, in file (seed)
    order, keeping the groups' order. The store inserts the rows as they come: the seeds of a
    question then lie together and DuckDB's compression stores their shared texts once, as an
    ORDER BY in the INSERT did with more memory (a paper import's ingest 0.53-0.60 -> 0.42-0.44
    s, 95k -> 72k page faults)."""
    codes, _ = dictionary_codes(pc.fill_null(sample_id, ""))
    return np.lexsort((unit, codes, group))


def iter_lighteval(
    path: Path,
    *,
    model: str | None,
    metric: str | None = None,
    seed: int | None = None,
    latest: bool = False,
    progress: Progress | None = None,
    notice: Callable[[str], None] | None = None,
) -> Iterator[pa.Table]:
    """Read lighteval details parquet files: a file, a run folder, a model's folder, an output tree.

    Yields the normalized table of ``forgetmap.importers.common`` (not validated: the caller does that)
    a task of files at a time (``_tasks``: whole (model, task) groups, every seed of them, a few
    MB on disk), so that an import holds one task's rows, not the tree's. ``benchmark`` is the raw
    task string from the file name (``leaderboard|mmlu:anatomy|5``); the seed of each run comes
    from its results file unless ``seed`` is given (see ``plan_files``; ``notice`` hears of runs
    without one). Rows are stored under
    ``model``, or, when it is None, under each run's model as the tree names it (an output folder
    of several models imports them all). The rows of one sample of a (model, task) come side by
    side, in seed order (``ingest``'s ``grouped_by_sample``).
    """
    runs = find_runs(Path(path))
    names = model_names(Path(path), runs, model)
    # the seeds of one (model, task) in a row: a task of files keyed together then holds
    # every seed of its groups, whose rows of one sample it puts side by side (``_keyed``)
    planned = sorted(
        plan_files(runs, seed=seed, latest=latest, notice=notice),
        key=lambda p: (p[0] is None, p[0] or "", p[1], p[2]),
    )
    group_of = {}
    groups = np.asarray([group_of.setdefault(p[:2], len(group_of)) for p in planned], np.int64)
    files = [f for _, _, _, f in planned]
    stored = sorted(set(names.values()))
    tasks = pa.array([task for _, task, _, _ in planned], pa.string())
    seeds = pa.array([s for _, _, s, _ in planned], pa.int32())
    model_of_file = pa.array([stored.index(names[m]) for m, _, _, _ in planned], pa.int32())
    done = rows = 0
    waiting: list[_Part] = []
    for part in _read_tasks(_tasks(files, groups), groups, metric):
        done += len(part.templates)
        if progress:
            progress("read files", done, len(planned))
        waiting.append(part)
        rows += part.rows.num_rows
        if sum(p.rows.nbytes for p in waiting) >= BATCH_BYTES:
            yield _normalized(_joined(waiting), model_of_file, stored, tasks, seeds)
            waiting = []
    if any(p.rows.num_rows for p in waiting):
        yield _normalized(_joined(waiting), model_of_file, stored, tasks, seeds)
    if not rows:
        raise InputError(f"{path}: the lighteval details files contain no rows")


BATCH_BYTES = 32 << 20
"""Bytes of rows (in memory, answers included) a batch gathers before the store writes it: tasks
of a tree of long answers hold a few hundred rows, and each batch costs the store a few dozen ms
of SQL whatever its size (40,320 answers of ~4,000 tokens: 97 batches of a task each, 2.5 s of
it)."""


def _joined(parts: list[_Part]) -> _Part:
    """Consecutive tasks' parts as one (their files are numbered in a row)."""
    if len(parts) == 1:
        return parts[0]
    return _Part(
        pa.concat_tables([p.rows for p in parts]),
        pa.chunked_array([p.shown for p in parts], pa.string()),
        [t for p in parts for t in p.templates],
        parts[0].first_file,
    )


def read_lighteval(path: Path, **options) -> pa.Table:
    """``iter_lighteval``'s tables as one (what tests and small tools want; imports stream)."""
    return pa.concat_tables(iter_lighteval(path, **options)).unify_dictionaries()


def _normalized(
    part: _Part, model_of_file: pa.Array, stored: list[str], tasks: pa.Array, seeds: pa.Array
) -> pa.Table:
    """A task's rows in the normalized columns; names and seeds by each row's file number."""
    table = part.rows
    file = one_array(table["unit"])
    first = part.first_file
    local = pc.subtract(file, first)  # the file's place among the task's files
    return build_table(
        {
            "model": pa.DictionaryArray.from_arrays(pc.take(model_of_file, file), stored),
            "seed": pc.take(seeds, file),
            "benchmark": pa.DictionaryArray.from_arrays(
                local, tasks.slice(first, len(part.templates))
            ),
            "sample_id": table["sample_id"],
            "correct": table["correct"],
            "num_choices": table["num_choices"],
            "prompt": table["prompt"],
            "response": table["response"],
            "prediction": table["prediction"],
            "gold": table["gold"],
            "choices": table["choices"],
            "answer_status": table["answer_status"],
            "question": part.shown,
            **_template_columns(part.templates, local),
        }
    )


def _template_columns(templates: list[tuple[str | None, str | None]], unit: pa.Array) -> dict:
    """``prompt_prefix`` and ``prompt_suffix`` per row, dictionary-encoded by file (a few-shot
    block is held once per file, not once per row); null for a file whose prompts are whole."""
    whole = np.asarray([prefix is None for prefix, _ in templates], np.bool_)
    codes = unit.to_numpy(zero_copy_only=False)
    indices = pa.array(codes, pa.int32(), mask=whole[codes])
    return {
        name: pa.DictionaryArray.from_arrays(
            indices, pa.array([t[side] or "" for t in templates], pa.string())
        )
        for side, name in enumerate(("prompt_prefix", "prompt_suffix"))
    }
