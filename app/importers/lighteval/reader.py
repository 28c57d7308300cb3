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
(``forgetmap.importers.lighteval.rows``). Files in the usual shapes are read with Arrow kernels only
(no per-row Python): generated answers, and log-likelihood tasks (a score per choice: v0.10
``predictions`` of ``(logprob, is_greedy)`` pairs, v0.11+ ``logprobs``; ``logprob_texts``).

Each file's prompts are split into the file's template (few-shot block, chat turns) and each row's
own part as it is read (``forgetmap.core.prompt_templates.stored_prompts``): the table carries
``prompt_prefix`` and ``prompt_suffix`` (``forgetmap.importers.common``), and the whole prompts are
let go with their file. A flat file whose ``full_prompt`` is stored as the same bytes as its
``example`` (a base model without a chat template) has its prompts decoded once, and of the nested
layout's ``doc`` and ``model_response`` only the fields the reader uses are decoded
(``forgetmap.importers.lighteval.files``).

A whole tree imports at once: a details file, a run folder, a model's details folder holding many
runs, or an output folder; each run's seed is read from its results file
(``forgetmap.importers.lighteval.runs``).

``sample_id`` is the doc's ``id`` when every row of the file has one; otherwise the question key of
``forgetmap.core.sample_identity`` (``q:`` + hash of the question without the template, the options
and the gold answer), never the row position. Each answer's status (``answer_status``: cut prompt,
empty extraction, ...) follows ``forgetmap.importers.lighteval.status``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from forgetmap.core.columns import dictionary_codes, one_array
from forgetmap.core.sample_identity import identify
from forgetmap.importers.common import InputError, build_table, whole_units
from forgetmap.importers.lighteval.files import read_columns
from forgetmap.importers.lighteval.rows import DEFAULT_METRICS, row_columns
from forgetmap.importers.lighteval.runs import find_runs, model_names, plan_files
from forgetmap.importers.lighteval.slices import SlicedFile, sliced_file
from forgetmap.importers.lighteval.uniform import (
    from_uniform,
    has_document_ids,
    questions_and_prompts,
    rows_table,
    uniform_or_none,
    uniform_rows,
)

__all__ = ["DEFAULT_METRICS", "iter_lighteval", "read_lighteval"]

Progress = Callable[[str, int, int], None]


class _Unit(NamedTuple):
    """One details file (a task of a run), read and reduced: ``rows`` in ``FILE_COLUMNS``, the
    prompt being each row's own part of it (``stored_prompts``) under the file's template."""

    rows: pa.Table
    slow: bool  # read row by row (``row_columns``)
    question: pa.Array  # the query without what all of the unit's queries share: for keys
    displayed: pa.Array  # the same, cut at line breaks: what lists show
    has_ids: bool  # every row has a document id
    prefix: str | None  # the prompts' template (None: each prompt is kept whole)
    suffix: str | None


def _read_unit(
    file: Path, table: pa.Table, nested: bool, metric: str | None, uniform: pa.Table | None
) -> _Unit:
    """One file's ``_Unit`` from its columns (``read_columns``) and, when they are in the usual
    shapes, their uniform rows (``uniform_rows``; None: the file is read row by row)."""
    if uniform is not None:
        rows, slow = uniform, False
        query, prompt = rows["query"], rows["prompt"]
        rows = rows.drop_columns(["query"])
    else:
        columns = row_columns(table, nested, metric, file)
        query, prompt = columns["query"], columns["prompt"]
        rows, slow = rows_table(columns), True
    # the template is stored here, file by file, so that the query and the whole prompts (a
    # base model's few-shot block in every row: most of an import's memory) are let go with
    # their task (``_read_task``), not kept to the end: a paper import's peak memory 1.3 ->
    # 0.8-0.9 GB, a third fewer page faults
    questions, stored = questions_and_prompts(query, prompt)
    rows = rows.set_column(rows.schema.get_field_index("prompt"), "prompt", stored.own)
    return _Unit(
        rows,
        slow,
        questions.keyed,
        questions.displayed,
        has_document_ids(rows["doc_id"]),
        stored.prefix,
        stored.suffix,
    )


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
    """A task's files (or a slice of one file), read and keyed: their rows in ``FILE_COLUMNS``
    plus ``unit`` (the file's number) and ``sample_id``, and the questions lists show, in the same
    row order: the rows of one sample of a (model, task) side by side, in seed order
    (``_by_sample``); each file's prompt template (prefix, suffix) by its number; how many files
    it finishes; and whether it holds every row of its files (``whole``)."""

    rows: pa.Table
    displayed: pa.Array
    templates: dict[int, tuple[str | None, str | None]]
    finished: int
    whole: bool


def _tasks(
    files: list[Path], groups: np.ndarray, sizes: list[int] | None = None
) -> list[list[tuple[int, Path]] | SlicedFile]:
    """The files (numbered in order) cut into tasks of whole groups: a task ends at the first
    group boundary past its budget, a quarter of the bytes not yet in a task within
    ``TASK_BYTES``. A file large enough to be read in slices (``slices.sliced_file``) is read
    apart: a task per slice, in its place (``sizes``: the files' bytes on disk, if known)."""
    least, most = TASK_BYTES
    if sizes is None:
        sizes = [file.stat().st_size for file in files]
    left = sum(sizes)
    tasks: list[list[tuple[int, Path]] | SlicedFile] = []
    size = budget = 0
    previous = None  # the group of the last file put in a task of whole files
    for number, (file, file_size) in enumerate(zip(files, sizes, strict=True)):
        left -= file_size
        sliced = sliced_file(number, file, file_size)
        if sliced is not None:
            tasks.extend([sliced] * sliced.slices)
            continue
        if (
            not tasks
            or not isinstance(tasks[-1], list)
            or (size >= budget and groups[number] != previous)
        ):
            tasks.append([])
            size, budget = 0, min(most, max((left + file_size) // 4, least))
        cast(list[tuple[int, Path]], tasks[-1]).append((number, file))  # a list: checked above
        size += file_size
        previous = groups[number]
    return tasks


def _read_task(files: list[tuple[int, Path]], groups: np.ndarray, metric: str | None) -> _Part:
    read = [read_columns(file) for _, file in files]
    uniform = uniform_rows(read, metric)
    units = [
        (number, _read_unit(file, table, nested, metric, rows))
        for (number, file), (table, nested), rows in zip(files, read, uniform, strict=True)
    ]
    del read, uniform  # the files' whole prompts: each unit keeps only its own parts
    rows, displayed = _keyed(units, groups)
    templates = {number: (u.prefix, u.suffix) for number, u in units}
    return _Part(rows, displayed, templates, len(files), whole=True)


def _read_slice(sliced: SlicedFile, groups: np.ndarray, metric: str | None) -> _Part | None:
    """The next slice of a large file (``slices``), reduced as a whole file is (``_read_unit``)
    and keyed by the whole file's keys; the whole file where its keys are in other shapes (the
    first slice's task reads it); None once all of it is taken."""
    taken = sliced.take()
    if taken is None:
        if sliced.whole and sliced.claim_whole():
            return _read_task([(sliced.number, sliced.file)], groups, metric)
        return None
    table, keys, start, n = taken.table, taken.keys, taken.start, taken.table.num_rows
    uniform = uniform_or_none(table, sliced.layout.nested, metric)
    if uniform is not None:
        columns = from_uniform(uniform.drop_columns(["query"]))
    else:
        columns = row_columns(table, sliced.layout.nested, metric, sliced.file, start + 1)
    del table, uniform
    columns["prompt"] = keys.own.slice(start, n)
    rows = rows_table(columns)
    rows = rows.append_column("unit", pa.array(np.full(n, sliced.number, np.int32)))
    rows = rows.append_column("sample_id", keys.sample_id.slice(start, n))
    templates = {sliced.number: (keys.prefix, keys.suffix)}
    return _Part(rows, keys.displayed.slice(start, n), templates, int(taken.last), whole=False)


READ_AHEAD = 4
"""Tasks read ahead of the one the import is writing: enough to keep both threads busy while the
store writes a batch (2 left them waiting a third of a chat model's import), few enough that the
rows held wait for the writer, not pile up. Slices of a large file (``slices``) are read
``SLICE_READ_AHEAD`` ahead: their decoding takes turns on one file, so more would only wait,
holding their rows (docs/performance.md, Harness imports)."""

SLICE_READ_AHEAD = 2


def _read_tasks(
    tasks: list[list[tuple[int, Path]] | SlicedFile], groups: np.ndarray, metric: str | None
) -> Iterator[_Part | None]:
    """``_read_task`` (``_read_slice``) of each task, in order, on two threads, at most
    ``READ_AHEAD`` tasks beyond the one being consumed; a task's error is raised in its turn, and
    the tasks not started are dropped."""
    pool = ThreadPoolExecutor(max_workers=2)
    pending: deque = deque()
    try:
        for task in tasks:
            sliced = isinstance(task, SlicedFile)
            read: Callable[..., _Part | None] = _read_slice if sliced else _read_task
            pending.append(pool.submit(read, task, groups, metric))
            while len(pending) > (SLICE_READ_AHEAD if sliced else READ_AHEAD):
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
    parts = [rows_table(from_uniform(pa.concat_tables([u.rows for _, u in fast])))] if fast else []
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
    displayed = pa.chunked_array([u.displayed for _, u in units], pa.string())
    return rows.append_column("sample_id", sample_id).take(order), one_array(displayed.take(order))


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

    Yields the normalized table of ``forgetmap.importers.common`` (not validated: the caller does
    that) a task of files at a time (``_tasks``: whole (model, task) groups, every seed of them, a
    few MB on disk), and a large file a slice of rows at a time (``slices``), so that an import
    holds a batch of rows, not a task's or the tree's. A batch of whole files is marked so
    (``common.whole_units``). ``benchmark`` is the raw
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
    group_of: dict[tuple[str | None, str], int] = {}
    groups = np.asarray([group_of.setdefault(p[:2], len(group_of)) for p in planned], np.int64)
    files = [f for _, _, _, f in planned]
    stored = sorted(set(names.values()))
    tasks = pa.array([task for _, task, _, _ in planned], pa.string())
    seeds = pa.array([s for _, _, s, _ in planned], pa.int32())
    model_of_file = pa.array([stored.index(names[m]) for m, _, _, _ in planned], pa.int32())
    done = rows = 0
    waiting: list[_Part] = []
    for part in _read_tasks(_tasks(files, groups), groups, metric):
        if part is None:
            continue
        done += part.finished
        if progress:
            progress("read files", done, len(planned))
        waiting.append(part)
        rows += part.rows.num_rows
        limit = BATCH_BYTES if part.whole else SLICE_BATCH_BYTES
        if sum(p.rows.nbytes for p in waiting) >= limit:
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

SLICE_BATCH_BYTES = 16 << 20
"""``BATCH_BYTES`` of the slices of a large file: half, since the store's copies of a batch add to
the slices read ahead (``SLICE_READ_AHEAD``)."""


def _joined(parts: list[_Part]) -> _Part:
    """Tasks' parts as one."""
    if len(parts) == 1:
        return parts[0]
    return _Part(
        pa.concat_tables([p.rows for p in parts]),
        pa.chunked_array([p.displayed for p in parts], pa.string()),
        {number: t for p in parts for number, t in p.templates.items()},
        sum(p.finished for p in parts),
        all(p.whole for p in parts),
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
    numbers = sorted(part.templates)
    place = np.zeros(numbers[-1] + 1, np.int32)
    place[numbers] = np.arange(len(numbers), dtype=np.int32)
    # the file's place among the part's files
    local = pa.array(place[file.to_numpy(zero_copy_only=False)])
    normalized = build_table(
        {
            "model": pa.DictionaryArray.from_arrays(pc.take(model_of_file, file), stored),
            "seed": pc.take(seeds, file),
            "benchmark": pa.DictionaryArray.from_arrays(local, pc.take(tasks, pa.array(numbers))),
            "sample_id": table["sample_id"],
            "correct": table["correct"],
            "num_choices": table["num_choices"],
            "prompt": table["prompt"],
            "response": table["response"],
            "prediction": table["prediction"],
            "gold": table["gold"],
            "choices": table["choices"],
            "answer_status": table["answer_status"],
            "question": part.displayed,
            **_template_columns([part.templates[n] for n in numbers], local),
        }
    )
    return whole_units(normalized) if part.whole else normalized


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
