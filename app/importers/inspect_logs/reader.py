"""inspect_ai eval logs into normalized tables, a batch at a time (``iter_inspect``).

A log is one run of one task by one model. Its header names both: the model is ``eval.model``
(e.g. ``openai/gpt-4o``, ``hf/meta-llama/Llama-3.1-8B``; ``--model`` names every log's model
instead) and the benchmark is ``eval.task`` without the package that registers it
(``inspect_evals/gsm8k`` -> ``gsm8k``), then canonicalized like every harness's task names, so
that the taxonomy gives known benchmarks their category and k. Each epoch is a seed: epoch e
(inspect_ai counts from 1) is seed e - 1, so that ``--epochs 1`` gives seed 0 like the other
harnesses' single runs.

What a log holds is imported as it is, and what it lacks is told, never invented (``notice``):

- samples that ended in an error (``sample.error``), have no score, or were invalidated are
  left out; their count is told. They have no answer to count as right or wrong, and the
  pairing counts them as unpaired samples, not as flips;
- a run that did not finish (status ``error``, ``cancelled``, or ``started``: it never wrote its
  header) is imported with the samples it holds, and told: ``inspect eval-retry`` completes it,
  and importing the completed log again adds the rest (an import stores nothing twice).

Two logs of one task for one model (two runs) are refused: import one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
from forgetmap.db.ingest import Progress
from forgetmap.importers.common import InputError, build_table
from forgetmap.importers.inspect_logs.logs import (
    LogHeader,
    find_logs,
    library,
    read_header,
    samples,
)
from forgetmap.importers.inspect_logs.rows import ROW_COLUMNS, ScorerChoice, sample_row

BATCH_ROWS = 4096
BATCH_TEXT_CHARS = 2 << 20
"""A batch ends at this many rows, or once its texts (prompts and answers) pass this many
characters: long answers make short batches, so that memory holds a bounded amount of text."""

Notice = Callable[[str], None]


def benchmark_of(task: str) -> str:
    """The benchmark a task name stands for: the name after its registry package, if any."""
    return task.rpartition("/")[2].strip() or task


def iter_inspect(
    path: Path,
    *,
    model: str | None = None,
    scorer: str | None = None,
    progress: Progress | None = None,
    notice: Notice | None = None,
) -> Iterator[pa.Table]:
    """Read an inspect_ai log, or every log below a folder (``logs.find_logs``).

    Yields the normalized table of ``forgetmap.importers.common`` (not validated: the caller does
    that) in batches of one log's samples. ``scorer``: ``--scorer`` (``rows.ScorerChoice``)."""
    inspect_log = library()
    headers = [read_header(file, inspect_log) for file in find_logs(Path(path))]
    _refuse_two_runs(headers, model)
    total = sum(header.planned or 0 for header in headers)
    read = 0
    any_rows = False
    for header in headers:
        for table, count in _log_batches(header, model, scorer, inspect_log, notice):
            read += count
            if progress is not None:
                progress("read samples", read, max(total, read))
            if table is not None:
                any_rows = True
                yield table
    if not any_rows:
        raise InputError(f"{path}: the inspect_ai logs hold no scored samples")


def _refuse_two_runs(headers: list[LogHeader], model: str | None) -> None:
    seen: dict[tuple[str, str], LogHeader] = {}
    for header in headers:
        key = (model or header.model, benchmark_of(header.task))
        other = seen.setdefault(key, header)
        if other is header:
            continue
        hint = ""
        if model is not None and other.model != header.model:
            hint = f" (they are runs of {other.model} and {header.model}: leave out --model)"
        raise InputError(
            f"{other.path} and {header.path} both hold task {header.task!r} of model "
            f"{key[0]!r}, e.g. two runs; import one of them{hint}"
        )


def _log_batches(
    header: LogHeader,
    model: str | None,
    scorer_option: str | None,
    inspect_log: ModuleType,
    notice: Notice | None,
) -> Iterator[tuple[pa.Table | None, int]]:
    """(batch or None, samples read since the last) of one log, then what it lacked, told."""
    name = model or header.model
    benchmark = benchmark_of(header.task)
    scorer = ScorerChoice(scorer_option, str(header.path), notice)
    columns: dict[str, list[Any]] = {c: [] for c in ROW_COLUMNS}
    left_out = {"ended in an error": 0, "without a score": 0, "invalidated": 0}
    text = read = imported = 0
    for sample in samples(header, inspect_log):
        read += 1
        if sample.error is not None:
            left_out["ended in an error"] += 1
        elif sample.invalidation is not None:
            left_out["invalidated"] += 1
        elif not sample.scores:
            left_out["without a score"] += 1
        else:
            where = f"{header.path}: sample {sample.id!r} (epoch {sample.epoch})"
            row = sample_row(sample, benchmark, scorer, where)
            for column in ROW_COLUMNS:
                columns[column].append(row[column])
            text += sum(len(row[c] or "") for c in ("prompt", "response", "prediction"))
        if len(columns["sample_id"]) >= BATCH_ROWS or text >= BATCH_TEXT_CHARS:
            imported += len(columns["sample_id"])
            yield _table(columns, name, benchmark), read
            columns = {c: [] for c in ROW_COLUMNS}
            text = read = 0
    imported += len(columns["sample_id"])
    yield (_table(columns, name, benchmark) if columns["sample_id"] else None), read
    if notice is None:
        return
    lacking = [f"{count} {why}" for why, count in left_out.items() if count]
    if lacking:
        notice(f"{header.path}: left out {sum(left_out.values())} samples ({', '.join(lacking)})")
    if header.finished:
        return
    if header.status == "started":
        how = "never finished (status started)"
    else:
        how = f"ended with status {header.status}" + (f" ({header.error})" if header.error else "")
    planned = f" of {header.planned} planned" if header.planned else ""
    notice(
        f"{header.path}: the run {how}; imported the {imported} scored samples it holds"
        f"{planned} (`inspect eval-retry` completes it)"
    )


def _table(columns: dict[str, list[Any]], model: str, benchmark: str) -> pa.Table:
    n = len(columns["sample_id"])
    return build_table({"model": [model] * n, "benchmark": [benchmark] * n, **columns})
