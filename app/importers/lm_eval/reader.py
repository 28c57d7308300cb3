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
``generate_until`` tasks. lm-eval's own log holds it as a list of such pairs; since 0.4.3 its
tracker rewrites it as ``{"gen_args_<i>": {"arg_<j>": ...}}`` when saving. Both are read. The
tracker also runs ``resps``/``filtered_resps`` through ``sanitize_list``, which turns every leaf
into a string, so log-likelihoods arrive as ``"-1.2"``; numbers are accepted too. lm-eval 0.4.0 to
0.4.2 wrote each task's samples as one JSON array under another name (``lm_eval.legacy``).

Files are read with Arrow: pyarrow's JSON reader parses a file into columns, and kernels turn
them into the normalized columns (``_arrow_columns``), with no per-line Python. A file in a shape
they do not handle (the older list form, whose ``[ll, false]`` pairs mix types; a metric stored
as text; a NaN score; a field whose type changes between lines; invalid JSON or UTF-8) is read
line by line by ``lm_eval.rows``, which gives the same columns and names the line of an error.
A log-likelihood row's response is its scores as a JSON list (``common.logprob_lists_json``).

Rows are keyed by (task, doc_id, filter): a task evaluated with several filters (gsm8k's
``strict-match`` and ``flexible-extract``, every CoT task) has one line per filter and document.
lm-eval 0.4.7 and later name the filter in each line; 0.4.3 to 0.4.6 do not, and the run's
results file beside the samples names them by their order (``lm_eval.filters``).
One filter per task is imported: the one the caller names (``NAME`` for every task that has it,
``TASK=NAME`` for one task), else the first of ``DEFAULT_FILTERS`` the task has. The default
prefers the lenient extraction: a forgetting map should count what a model knows, not whether a
chat model still writes the answer in the base model's format.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
from forgetmap.core.answer_status import ANSWERED
from forgetmap.core.answer_status import NO_ANSWER as NO_ANSWER_STATUS
from forgetmap.core.columns import first_items, first_max_positions, one_array
from forgetmap.core.taxonomy import usual_num_choices
from forgetmap.importers.common import (
    InputError,
    binary_column,
    build_table,
    choices_json_column,
    files_at,
    logprob_lists_json,
)
from forgetmap.importers.lm_eval.filters import line_filters
from forgetmap.importers.lm_eval.legacy import legacy_records, legacy_tasks
from forgetmap.importers.lm_eval.rows import (
    BOOKKEEPING,
    DEFAULT_METRICS,
    NO_ANSWER,
    argument_index,
    records,
    row_columns,
)

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

_DATE_ID = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
_SAMPLES_NAME = re.compile(rf"^samples_(?P<task>.+)_(?P<date>{_DATE_ID})\.jsonl$")
_EXPECTED = (
    "samples_<task>_<timestamp>.jsonl (written by lm_eval --log_samples --output_path DIR), or "
    "lm-eval 0.4.0-0.4.2's <model_args>_<task>.jsonl beside its results.json"
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
    return files_at(
        path,
        pattern="samples_*.jsonl",
        kind="lm-eval samples files",
        one="an lm-eval samples file name",
        expected=_EXPECTED,
        is_one=lambda file: task_from_filename(file.name) is not None,
    )


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


def iter_lm_eval(
    path: Path,
    *,
    model: str,
    metric: str | None = None,
    filter_name: list[str] | tuple[str, ...] | str | None = None,
    seed: int = 0,
    on_filter: Callable[[str, str, list[str], str], None] | None = None,
) -> Iterator[pa.Table]:
    """Read lm-eval ``samples_*.jsonl`` (one file, or a directory searched recursively), and
    lm-eval 0.4.0-0.4.2 runs' samples (``lm_eval.legacy``: at ``path`` or below it).

    Yields the normalized table of ``forgetmap.importers.common`` (not validated: the caller does
    that), a task's file at a time. ``benchmark`` is the raw task name from the file name;
    ``sample_id`` is ``str(doc_id)``. ``on_filter(task, taken, filters, why)`` is told the filter
    taken for each task with several.
    """
    chosen_filters = parse_filter_options(filter_name)
    by_task: dict[str, _TaskFile] = {}
    for found in _task_files(Path(path)):
        if found.task in by_task:
            raise InputError(
                f"{path}: task {found.task!r} has more than one samples file "
                f"({by_task[found.task].samples}, {found.samples}), e.g. from two runs; import "
                "one run at a time"
            )
        by_task[found.task] = found

    any_rows = False
    for task, found in by_task.items():
        for columns in _task_batches(found, metric, chosen_filters, on_filter):
            n = len(columns["sample_id"])
            if not n:
                continue
            any_rows = True
            yield _batch_table(columns, model, task, seed)
    if not any_rows:
        raise InputError(f"{path}: the lm-eval samples files contain no samples")


def _batch_table(columns: dict[str, Any], model: str, task: str, seed: int) -> pa.Table:
    n = len(columns["sample_id"])
    return build_table(
        {
            "model": pa.array([model] * n, pa.string()),
            "benchmark": pa.array([task] * n, pa.string()),
            "seed": pa.array(np.full(n, seed, np.int32)),
            **columns,
        }
    )


STREAM_BYTES = 256 << 20
"""A samples file at least this large is read in blocks, twice (``_streamed``), instead of whole:
its memory then holds a block's lines, not the file's (a reasoning model's answers make files of
gigabytes)."""


def _task_batches(
    found: _TaskFile,
    metric: str | None,
    chosen_filters: dict[str, str],
    on_filter: Callable[[str, str, list[str], str], None] | None,
) -> Iterator[dict[str, Any]]:
    """``ROW_COLUMNS`` of one task's file, of the chosen filter, in one or more batches."""
    if not found.legacy and found.samples.stat().st_size >= STREAM_BYTES:
        streamed = _streamed(found, metric, chosen_filters, on_filter)
        if streamed is not None:
            yield from streamed
            return
    columns = _read_task(found, metric, chosen_filters, on_filter)
    if columns is not None:
        yield columns


def _streamed(
    found: _TaskFile,
    metric: str | None,
    chosen_filters: dict[str, str],
    on_filter: Callable[[str, str, list[str], str], None] | None,
) -> Iterator[dict[str, Any]] | None:
    """The file read by pyarrow's streaming JSON reader, twice: once for each line's filter
    (``line_filters`` needs every document's lines: the n-th line of a document is its n-th
    filter where lines do not name theirs), once for the rows of the chosen filter, a block at
    a time. None where the blocks are not all in the shapes the kernels read (a field whose type
    changes, a line longer than a block, ...): the file is then read whole, as a smaller one."""
    file, task = found.samples, found.task
    try:
        named, doc_ids = [], []
        for block in _blocks(file):
            block.validate(full=True)  # the JSON reader does not check UTF-8
            named.append(_block_column(block, "filter", pa.string()))
            doc_ids.append(_block_column(block, "doc_id", None))
            # every line in the kernels' shapes (checked on all filters' lines: where a subset
            # would pass but not all, the whole-file read decides)
            _arrow_columns(block, task, metric)
        if not doc_ids:
            return None
        filters_seen = pa.chunked_array(named, pa.string()).combine_chunks()
        ids = pa.concat_arrays([d.cast(doc_ids[0].type) for d in doc_ids])
    except (_SlowPath, InputError, pa.ArrowException, ValueError, OSError):
        return None
    per_row = line_filters(
        filters_seen if filters_seen.null_count < len(filters_seen) else None,
        ids,
        file=file,
        task=task,
        results=found.results,
    )
    filters = pc.unique(per_row).to_pylist()
    if not filters:
        return None
    chosen, why = _choose_filter(task, filters, chosen_filters, str(file))
    if on_filter is not None and len(filters) > 1:
        on_filter(task, chosen, filters, why)
    taken = pc.equal(per_row, chosen)
    return _chosen_blocks(file, task, metric, taken)


def _chosen_blocks(file: Path, task: str, metric: str | None, taken: pa.Array):
    start = 0
    for block in _blocks(file):
        rows = block.filter(taken.slice(start, block.num_rows))
        start += block.num_rows
        if rows.num_rows:
            yield _arrow_columns(rows, task, metric)


def _blocks(file: Path) -> Iterator[pa.Table]:
    reader = pa_json.open_json(file, read_options=pa_json.ReadOptions(block_size=_BLOCK_SIZE))
    for batch in reader:
        yield pa.Table.from_batches([batch])


def _block_column(block: pa.Table, name: str, kind: pa.DataType | None) -> pa.Array:
    if name not in block.column_names:
        return pa.nulls(block.num_rows, kind or pa.null())
    column = one_array(block[name])
    return column.cast(kind) if kind is not None else column


def read_lm_eval(path: Path, **options) -> pa.Table:
    """``iter_lm_eval``'s tables as one (what tests and small tools want; imports stream)."""
    return pa.concat_tables(iter_lm_eval(path, **options)).unify_dictionaries()


class _TaskFile(NamedTuple):
    task: str
    samples: Path
    results: Path | None  # the run's results file (where the samples file says which it is)
    legacy: bool  # lm-eval 0.4.0-0.4.2: one JSON array (``lm_eval.legacy``)


def _task_files(path: Path) -> list[_TaskFile]:
    """The samples files at ``path`` with their tasks: ``samples_<task>_<date>.jsonl`` files,
    then lm-eval 0.4.0-0.4.2 runs' ``<model_args>_<task>.jsonl`` (found by their results file)."""
    legacy = [_TaskFile(t.task, t.samples, t.results, True) for t in legacy_tasks(path)]
    try:
        files = find_samples_files(path)
    except InputError:
        if not legacy:
            raise
        files = []
    found = []
    for file in files:
        task = task_from_filename(file.name)
        if task is None:  # a directory match like samples_x.jsonl with no task part
            raise InputError(
                f"{file}: cannot read the task from the file name; expected {_EXPECTED}"
            )
        found.append(_TaskFile(task, file, _results_beside(file), False))
    return found + legacy


def _read_task(
    found: _TaskFile,
    metric: str | None,
    chosen_filters: dict[str, str],
    on_filter: Callable[[str, str, list[str], str], None] | None,
) -> dict[str, Any] | None:
    """``ROW_COLUMNS`` of one task's file, its rows of the chosen filter: with Arrow kernels where
    the file has the usual shapes, else sample by sample. None for a file without samples."""
    file, task, results = found.samples, found.task, found.results
    table = None if found.legacy else _parse(file)
    lines = legacy_records(file) if found.legacy else None
    if table is not None:
        doc_ids = _column(table, "doc_id")
        per_row = line_filters(
            _column(table, "filter"),
            pa.nulls(table.num_rows) if doc_ids is None else doc_ids,
            file=file,
            task=task,
            results=results,
        )
    else:
        if lines is None:
            lines = list(records(file))
        per_row = _line_filters_of(lines, file, task, results)
    filters = pc.unique(per_row).to_pylist()  # in the order of first appearance
    if not filters:
        return None
    chosen, why = _choose_filter(task, filters, chosen_filters, str(file))
    if on_filter is not None and len(filters) > 1:
        on_filter(task, chosen, filters, why)
    if table is not None:
        if len(filters) > 1:
            table = table.filter(pc.equal(per_row, chosen))
        try:
            return _arrow_columns(table, task, metric)
        except (_SlowPath, pa.ArrowException):
            lines = list(records(file))
            per_row = _line_filters_of(lines, file, task, results)
    assert lines is not None
    taken = np.asarray(pc.equal(per_row, chosen), bool)
    chosen_lines = [line for line, take in zip(lines, taken, strict=True) if take]
    return row_columns(chosen_lines, file=file, task=task, metric=metric)


def _results_beside(file: Path) -> Path | None:
    """The results file of the run that wrote ``file`` (same folder, same date), if it is named
    ``samples_<task>_<date_id>.jsonl``."""
    match = _SAMPLES_NAME.match(file.name)
    return file.parent / f"results_{match.group('date')}.json" if match else None


def _line_filters_of(
    lines: list[tuple[int, dict[str, Any]]], file: Path, task: str, results: Path | None
) -> pa.Array:
    """``line_filters`` of lines read one by one."""
    named = [record.get("filter") for _, record in lines]
    doc_ids = [record.get("doc_id") for _, record in lines]
    return line_filters(
        pa.array([None if f is None else str(f) for f in named], pa.string()),
        pa.array([None if d is None else str(d) for d in doc_ids], pa.string()),
        file=file,
        task=task,
        results=results,
    )


class _SlowPath(Exception):
    """The file's columns are not in the shapes the Arrow kernels handle."""


def _parse(file: Path) -> pa.Table | None:
    """The file as a table (pyarrow's JSON reader), or None where that reader cannot take it: not
    UTF-8, not one JSON object per line, a field whose type changes from line to line (older
    releases' ``[ll, false]`` pairs), a line longer than a block. The row reader then reads the
    file, and names the line of any error."""
    try:
        table = pa_json.read_json(file, read_options=pa_json.ReadOptions(block_size=_BLOCK_SIZE))
        table.validate(full=True)  # the JSON reader does not check UTF-8
    except (pa.ArrowException, ValueError, OSError):
        return None
    if table.num_rows == 0 or (
        "filter" in table.column_names and not _is_text_or_null(table["filter"].type)
    ):
        return None
    return table


_BLOCK_SIZE = 8 << 20
"""Bytes of a file the JSON reader parses per block (a line must fit in one; a longer line sends
the file to the row reader). Blocks are parsed on Arrow's threads."""


def _column(table: pa.Table, name: str) -> pa.Array | None:
    return one_array(table[name]) if name in table.column_names else None


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def _is_text_or_null(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)


def _leaves(values: pa.Array) -> pa.Array:
    """The first leaf of each (nested) list, each list descended by its first item."""
    while _is_list(values.type):
        values = first_items(values)
    return values


def _text_or_nulls(values: pa.Array | None, n: int) -> pa.Array:
    """A text column as it is (null where absent); other types are written by the row reader."""
    if values is None or pa.types.is_null(values.type):
        return pa.nulls(n, pa.string())
    if not _is_text_or_null(values.type):
        raise _SlowPath
    return values.cast(pa.string())


def _arrow_columns(table: pa.Table, task: str, metric: str | None) -> dict[str, Any]:
    """``ROW_COLUMNS`` of one file's rows, with kernels; _SlowPath for any shape the row reader
    would read differently (it then reads the file and gives the same columns)."""
    n = table.num_rows
    slots = _request_slots(_column(table, "arguments"))
    present = np.array([np.asarray(s.is_valid()) for s in slots], bool).reshape(len(slots), n)
    if len(slots) > 1 and (present[1:] > present[:-1]).any():
        raise _SlowPath  # a request missing before a later one
    k = present.sum(axis=0).astype(np.int64)
    args = [_two_arguments(s) for s in slots]
    continued = [a[1] is not None and pa.types.is_string(a[1].type) for a in args]
    if continued and all(continued):
        columns = _multiple_choice(table, args, present, k)
    elif any(continued):
        raise _SlowPath  # some requests with a continuation, some without
    else:
        columns = _generative(table, task, args, n)
    target = _column(table, "target")
    if target is not None and pa.types.is_integer(target.type):
        target = target.cast(pa.string())
    return {
        "sample_id": _sample_ids(_column(table, "doc_id")),
        "correct": _correct(table, metric),
        "gold": _text_or_nulls(target, n),
        "doc_hash": _text_or_nulls(_column(table, "doc_hash"), n),
        **columns,
    }


def _request_slots(arguments: pa.Array | None) -> list[pa.Array]:
    """``gen_args_<i>`` of the ``arguments`` struct, in request order (null where a row has fewer
    requests). The older list form (``[[context, continuation], ...]``) goes to the row reader."""
    if arguments is None or not pa.types.is_struct(arguments.type):
        raise _SlowPath
    fields = [arguments.type.field(i).name for i in range(arguments.type.num_fields)]
    order = sorted(range(len(fields)), key=lambda i: argument_index(fields[i]))
    slots = [pc.struct_field(arguments, i) for i in order]
    if not all(pa.types.is_struct(s.type) for s in slots):
        raise _SlowPath
    return slots


def _two_arguments(slot: pa.Array) -> tuple[pa.Array, pa.Array | None]:
    """(``arg_0``, ``arg_1``) of one request slot, in argument order (``arg_1`` None where the
    requests have one argument); ``arg_0``, the context, must be text."""
    fields = [slot.type.field(i).name for i in range(slot.type.num_fields)]
    order = sorted(range(len(fields)), key=lambda i: argument_index(fields[i]))
    if not order or not _is_text_or_null(slot.type.field(order[0]).type):
        raise _SlowPath
    second = pc.struct_field(slot, order[1]) if len(order) > 1 else None
    return pc.struct_field(slot, order[0]), second


def _multiple_choice(
    table: pa.Table,
    args: list[tuple[pa.Array, pa.Array | None]],
    present: np.ndarray,
    k: np.ndarray,
) -> dict[str, Any]:
    """Log-likelihood rows: a (context, continuation) request per option."""
    contexts = [a[0] for a in args]
    continuations = [a[1] for a in args]
    for j, part in enumerate([*contexts, *continuations]):
        if (np.asarray(part.is_valid()) != present[j % len(args)]).any():
            raise _SlowPath  # a request without its context or continuation
    if not (k >= 1).all():
        raise _SlowPath  # a row without requests is generative to the row reader
    # multiple-input tasks (winogrande) vary the context and share the continuation; the long
    # contexts are compared only where some row's continuations are all the same
    shared = (k >= 2) & _all_equal(continuations)
    if shared.any():
        shared &= ~_all_equal(contexts)
    joined = pc.binary_join_element_wise(*continuations, "\x1f", null_handling="skip")
    if shared.any():
        by_context = pc.binary_join_element_wise(*contexts, "\x1f", null_handling="skip")
        joined = pc.if_else(pa.array(shared), by_context, joined)
    separators = np.asarray(pc.count_substring(joined, "\x1f"), np.int64)
    if (separators != np.maximum(k - 1, 0)).any():
        raise _SlowPath  # an option holding the separator
    options = k >= 2
    values = _scores(_column(table, "filtered_resps"), k)
    if values is None:
        values = _scores(_column(table, "resps"), k)
    if values is None:
        raise _SlowPath
    best = first_max_positions(values, k)
    return {
        "num_choices": pa.array(k.astype(np.int16), mask=~options),
        "prompt": contexts[0].cast(pa.string()),
        "response": logprob_lists_json(pa.array(values), k),
        "prediction": pa.array(best, mask=~options).cast(pa.string()),
        "choices": pc.if_else(pa.array(options), choices_json_column(joined), None),
        "answer_status": pa.array([ANSWERED] * len(k), pa.string()),  # every row is scored
    }


def _all_equal(parts: list[pa.Array]) -> np.ndarray:
    """Per row: whether its values of ``parts`` (null where the row has fewer) are all equal."""
    same = np.ones(len(parts[0]), bool)
    for part in parts[1:]:
        same &= np.asarray(pc.fill_null(pc.equal(part, parts[0]), True))
    return same


def _scores(responses: pa.Array | None, k: np.ndarray) -> np.ndarray | None:
    """Each request's log-likelihood, from ``filtered_resps`` or ``resps`` (per request
    ``(ll, is_greedy)``, maybe nested, numbers or the tracker's strings); None where the column
    is absent or not a number per request in every row."""
    if responses is None or pa.types.is_null(responses.type):
        return None
    if not _is_list(responses.type) or responses.null_count:
        raise _SlowPath
    lengths = np.asarray(pc.list_value_length(responses), np.int64)
    if (lengths != k).any():
        raise _SlowPath
    leaves = _leaves(pc.list_flatten(responses))
    if leaves.null_count:
        raise _SlowPath
    if _is_text_or_null(leaves.type) or pa.types.is_integer(leaves.type):
        leaves = leaves.cast(pa.float64())  # ArrowInvalid for text that is not a number
    if not pa.types.is_floating(leaves.type):
        raise _SlowPath
    values = np.asarray(leaves.cast(pa.float64()), np.float64)
    if np.isnan(values).any():
        raise _SlowPath  # Python's max then depends on the order
    return values


def _generative(
    table: pa.Table, task: str, args: list[tuple[pa.Array, pa.Array | None]], n: int
) -> dict[str, Any]:
    """``generate_until`` rows: one (context, generation kwargs) request."""
    prompt = args[0][0] if args else None
    response = _column(table, "resps")
    filtered = _column(table, "filtered_resps")
    for part in (response, filtered):
        if part is not None and not (pa.types.is_null(part.type) or _is_list(part.type)):
            raise _SlowPath
    k = usual_num_choices(task)
    prediction = _text_or_nulls(None if filtered is None else _leaves(filtered), n)
    return {
        "num_choices": pa.nulls(n, pa.int16()) if k is None else pa.array(np.full(n, k, np.int16)),
        "prompt": _text_or_nulls(prompt, n),
        "response": _text_or_nulls(None if response is None else _leaves(response), n),
        "prediction": prediction,
        "choices": pa.nulls(n, pa.string()),
        # lm-eval's filters found no answer (``lm_eval.rows.answer_status``)
        "answer_status": pc.if_else(
            pc.fill_null(pc.equal(prediction, NO_ANSWER), False), NO_ANSWER_STATUS, ANSWERED
        ),
    }


def _sample_ids(doc_id: pa.Array | None) -> pa.Array:
    """``str(doc_id)``: integers (or whole floats) and non-blank text."""
    if doc_id is None or doc_id.null_count:
        raise _SlowPath
    if pa.types.is_floating(doc_id.type):
        values = np.asarray(doc_id, np.float64)
        if not (np.isfinite(values) & (values == np.floor(values)) & (abs(values) < 2**53)).all():
            raise _SlowPath
        doc_id = doc_id.cast(pa.int64())
    if pa.types.is_integer(doc_id.type):
        return doc_id.cast(pa.string())
    if not _is_text_or_null(doc_id.type):
        raise _SlowPath
    if pc.any(pc.equal(pc.utf8_trim_whitespace(doc_id), "")).as_py():
        raise _SlowPath
    return doc_id.cast(pa.string())


def _correct(table: pa.Table, metric: str | None) -> pa.Array:
    """The chosen metric (else the first of ``DEFAULT_METRICS`` in the file), 0/1 in every row."""
    names = table.column_names
    name = metric if metric is not None else next((m for m in DEFAULT_METRICS if m in names), None)
    if name is None or name not in names or name in BOOKKEEPING:
        raise _SlowPath
    correct = binary_column(one_array(table[name]))
    if correct is None:
        raise _SlowPath
    return correct
