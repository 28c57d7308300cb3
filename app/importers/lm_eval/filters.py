"""The filter each line of an lm-eval samples file was scored with.

lm-eval 0.4.7 and later name it in every line (``"filter": "strict-match"``). Releases 0.4.3 to
0.4.6 write the same lines without it, so a task scored with several filters (gsm8k's
``strict-match`` and ``flexible-extract``, every chain-of-thought task) holds each document
several times with nothing to tell the lines apart but their order. That order is fixed by
``lm_eval.evaluator.evaluate``: for each filter of the task, in its ``filter_list`` order, one line
per document the rank evaluated; a multi-GPU run's ranks follow one another. The n-th line of a
document is therefore its n-th filter. The filters' names come from the run's
``results_<date_id>.json`` beside the samples file (``configs[task]["filter_list"]``; a task
without one has lm-eval's single filter ``none``). Without that file, or where a document's
count of lines is not the task's count of filters, the import stops and says so: a line given
the wrong filter would count an answer the model did not give.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from forgetmap.core.columns import dictionary_codes
from forgetmap.core.errors import InputError

__all__ = ["RESULTS_MAX_BYTES", "UNNAMED", "line_filters", "read_results", "results_filters"]

UNNAMED = "none"
"""lm-eval's name for a task's only filter when its config lists none (``take_first``)."""

RESULTS_MAX_BYTES = 64 << 20
"""A larger file is not read as an lm-eval results file (they hold kilobytes)."""


def line_filters(
    named: pa.Array | None,
    doc_ids: pa.Array,
    *,
    file: Path,
    task: str,
    results: Path | None,
) -> pa.Array:
    """Per line of one samples file, the filter it was scored with (strings, no nulls).

    ``named``: the lines' own ``filter`` field (None where no line has one); ``doc_ids``: their
    ``doc_id`` (any type, null where a line has none); ``results``: the run's results file, if
    the samples file names its date. Lines that name their filter keep it (a line without one
    takes ``none``). Where none does and a document has several lines, the n-th line of each
    document takes the n-th filter the results file lists for the task. Lines without a
    ``doc_id`` all take ``none``: the reader then names the first such line.
    """
    if named is not None and named.null_count < len(named):
        return pc.fill_null(named.cast(pa.string()), UNNAMED)
    n = len(doc_ids)
    if not n or doc_ids.null_count:
        return pa.array([UNNAMED] * n, pa.string())
    codes, values = dictionary_codes(doc_ids.cast(pa.string()))
    counts = np.bincount(codes, minlength=len(values))
    if counts.max() == 1:
        return pa.array([UNNAMED] * n, pa.string())
    repeated = int(np.argmax(counts))
    example = f"doc_id {values[repeated].as_py()} has {counts[repeated]} lines"
    names = results_filters(results, task) if results is not None else None
    if names is None:
        wanted = results.name if results is not None else "results_<date_id>.json"
        raise InputError(
            f"{file}: task {task!r} holds documents several times ({example}) and its lines do "
            "not name their filter (lm-eval 0.4.3-0.4.6 writes a line per filter without its "
            f"name); keep the run's {wanted} beside the samples file: its filter_list names them"
        )
    assert results is not None  # the names came from it
    wrong = np.flatnonzero(counts != len(names))
    if len(wrong):
        odd = int(wrong[0])
        raise InputError(
            f"{file}: task {task!r} has {len(names)} filters in {results.name} "
            f"({', '.join(names)}) but doc_id {values[odd].as_py()} has {counts[odd]} lines; "
            "a samples file of another run, or a file edited by hand? Import the samples "
            "file with the results file of its own run"
        )
    # a stable sort keeps each document's lines in file order; every document has one line per
    # filter, so its lines sit at len(names) consecutive places from a multiple of len(names)
    order = np.argsort(codes, kind="stable")
    occurrence = np.empty(n, np.int64)
    occurrence[order] = np.arange(n) % len(names)
    return pa.array(names, pa.string()).take(pa.array(occurrence))


def read_results(results: Path) -> dict[str, Any]:
    """The JSON object of an lm-eval results file (a byte-order mark is allowed); InputError
    naming the file and what is wrong where it is not one. The one reader of results files: a
    caller that only looks for them among other JSON files (``lm_eval.legacy``) catches the
    error, one that needs the file lets it stop the import."""
    try:
        size = results.stat().st_size
        if size > RESULTS_MAX_BYTES:
            raise InputError(
                f"{results}: not an lm-eval results file ({size:,} bytes; they hold kilobytes)"
            )
        document = json.loads(results.read_bytes().decode("utf-8-sig"))
    except OSError as exc:
        raise InputError(f"{results}: cannot be read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{results}: not an lm-eval results file ({exc})") from None
    if not isinstance(document, dict):
        raise InputError(
            f"{results}: not an lm-eval results file (a JSON {type(document).__name__}, "
            "not an object)"
        )
    return document


def results_filters(results: Path, task: str) -> list[str] | None:
    """The names of ``task``'s filters, in order, from an lm-eval results file; None where the
    file is absent or does not describe the task's filters; InputError where it is there but
    not a results file (``read_results``)."""
    if not results.is_file():
        return None
    configs = read_results(results).get("configs")
    config = configs.get(task) if isinstance(configs, dict) else None
    if not isinstance(config, dict):
        return None
    listed = config.get("filter_list")
    if listed is None:
        return [UNNAMED]
    if not isinstance(listed, list) or not listed:
        return None
    names = [entry.get("name") if isinstance(entry, dict) else None for entry in listed]
    if not all(isinstance(name, str) and name for name in names) or len(set(names)) < len(names):
        return None
    return cast(list[str], names)  # checked just above: every name a non-empty str
