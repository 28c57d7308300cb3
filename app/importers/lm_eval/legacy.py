"""lm-eval 0.4.0-0.4.2 output: each task's samples as one JSON array, beside ``results.json``.

Before its evaluation tracker (0.4.3), ``lm_eval --log_samples --output_path OUT`` wrote the run's
results to ``OUT/results.json`` (to OUT itself when it ends in ``.json``) and, for each task of
the results' ``configs``, ``OUT/<model_args>_<task>.jsonl``: ``model_args`` as typed with ``/``
and ``=`` replaced by ``__``, and in the file the task's logged samples as one JSON array
(``json.dumps(samples, indent=2)``, so no line holds a sample of its own). A sample is what later
releases write as a line, less the hashes, the filter and the metric list. The task of a file is
known only through its results file (task names and model arguments both hold underscores), so
a run is found by its results file. The samples are read by the row reader (``lm_eval.rows``);
a task scored with several filters holds each document once per filter, named by the results'
``filter_list`` (``lm_eval.filters``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from forgetmap.core.errors import InputError
from forgetmap.importers.lm_eval.filters import read_results

__all__ = ["LegacyTask", "legacy_records", "legacy_tasks"]


class LegacyTask(NamedTuple):
    task: str
    samples: Path
    results: Path


def legacy_tasks(path: Path) -> list[LegacyTask]:
    """The 0.4.0-0.4.2 samples files at ``path`` (a samples file, a results file, or a folder
    searched below), each with its task and its run's results file, in path order."""
    path = Path(path)
    if path.is_file():
        if path.suffix == ".json":
            return _tasks_of(path)
        return [t for t in _tasks_in_folder(path.parent) if t.samples == path]
    if not path.is_dir():
        return []
    # a run's folder holds a samples file that is not samples_<task>_<date>.jsonl
    folders = {
        p.parent for p in path.rglob("*.jsonl") if p.is_file() and not p.name.startswith("samples_")
    }
    found = [task for folder in sorted(folders) for task in _tasks_in_folder(folder)]
    return sorted(found, key=lambda t: t.samples)


def legacy_records(file: Path) -> list[tuple[int, dict[str, Any]]]:
    """(sample number from 1, sample) of one 0.4.0-0.4.2 samples file: a JSON array of objects."""
    try:
        samples = json.loads(file.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{file}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{file}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "lm-eval 0.4.0-0.4.2 write a task's samples as one JSON array"
        ) from None
    if not isinstance(samples, list):
        raise InputError(f"{file}: expected a JSON array of samples (lm-eval 0.4.0-0.4.2)")
    for number, sample in enumerate(samples, start=1):
        if not isinstance(sample, dict):
            raise InputError(f"{file}:{number}: sample {number} is not a JSON object")
    return list(enumerate(samples, start=1))


def _tasks_in_folder(folder: Path) -> list[LegacyTask]:
    return [task for results in sorted(folder.glob("*.json")) for task in _tasks_of(results)]


def _tasks_of(results: Path) -> list[LegacyTask]:
    """The tasks of one results file whose samples file lies beside it; none for a file that is
    not a 0.4.0-0.4.2 results file."""
    run = _read_results(results)
    if run is None:
        return []
    model_args, tasks = run
    prefix = re.sub("/|=", "__", model_args)
    found = []
    for task in tasks:
        samples = results.parent / f"{prefix}_{task}.jsonl"
        if samples.is_file():
            found.append(LegacyTask(task, samples, results))
    return found


def _read_results(results: Path) -> tuple[str, list[str]] | None:
    """(model_args, task names) of an lm-eval results file, or None for any other JSON file
    (a run is looked for among whatever ``*.json`` files a folder holds)."""
    if not results.is_file():
        return None
    try:
        document = read_results(results)
    except InputError:
        return None
    config, configs = document.get("config"), document.get("configs")
    if not isinstance(config, dict) or not isinstance(configs, dict):
        return None
    model_args = config.get("model_args")
    if not isinstance(model_args, str):
        return None
    return model_args, [task for task in configs if isinstance(task, str)]
