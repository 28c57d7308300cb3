"""inspect_ai eval logs on disk: which files are logs, what their headers say, and their samples,
one at a time.

inspect_ai writes one log per (task, model) run, in one of two formats:

- ``.eval`` (its default): a zip archive whose members are ``header.json`` (the ``EvalLog``
  without samples: ``status``, ``eval``, ``results``, ``error``), one
  ``samples/<id>_epoch_<e>.json`` per sample and epoch, ``summaries.json`` and ``reductions.json``.
  A run that never finished has no ``header.json`` yet, only ``_journal/start.json`` (its ``eval``
  and ``plan``). Members are zstd-compressed; ``zipfile_zstd``, which inspect_ai itself depends on
  below Python 3.14, teaches the standard ``zipfile`` to read them.
- ``.json``: the whole ``EvalLog`` as one JSON object, header fields first, then ``samples``.

Memory holds one sample at a time. inspect_ai's own ``read_eval_log_samples`` streams a ``.eval``
log but reads its header with every ``reductions.json`` entry (each sample's score, answer and
explanation: tens of MB for long answers), and reads a ``.json`` log whole; so the header of a
``.eval`` log is read here from its ``header.json`` member, and the samples of either format one
member (``.eval``) or one array item (``.json``, with ``ijson``, another dependency of
inspect_ai) at a time. Each sample is checked by inspect_ai's own ``EvalSample`` model, given only
the fields an import uses: the transcript (``messages``, ``events``) is never validated.

In a folder, the logs are inspect_ai's own choice (``inspect_ai.log.list_eval_logs``): every
``.eval`` file, and the ``.json`` files whose name starts with a timestamp as inspect_ai names its
logs (so ``logs.json`` and ``listing.json`` beside them are not logs).
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from forgetmap.core.errors import InputError
from forgetmap.importers.common import files_at

MISSING_LIBRARY = "import inspect needs inspect_ai: pip install 'forgetmap[inspect]'"
LOG_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}")
"""The start of a ``.json`` log's name as inspect_ai writes it (its ``log_file_pattern``)."""
EXPECTED = "an inspect_ai log (.eval or .json), or a folder of them"
SAMPLE_FIELDS = (
    "id",
    "epoch",
    "input",
    "choices",
    "target",
    "output",
    "scores",
    "score",
    "error",
    "invalidation",
)
"""The fields of a logged sample an import reads (``score``: the one score of older logs, which
``EvalSample`` moves into ``scores``)."""
UNFINISHED_HEADER = "_journal/start.json"


@dataclass(frozen=True)
class LogHeader:
    """What a log's header says about its run."""

    path: Path
    status: str  # "success", "error", "cancelled" or "started" (never finished)
    error: str | None  # the error that halted the run, for status "error"
    task: str
    model: str
    planned: int | None  # samples times epochs, when the header says

    @property
    def finished(self) -> bool:
        return self.status == "success"


def library() -> ModuleType:
    """``inspect_ai.log``, imported on first use: inspect_ai is an optional extra."""
    try:
        import inspect_ai.log as inspect_log

        if sys.version_info < (3, 14):
            import zipfile_zstd  # noqa: F401 - zstd members for zipfile (see the module docstring)
    except ImportError:
        raise InputError(MISSING_LIBRARY) from None
    return inspect_log


def find_logs(path: Path) -> list[Path]:
    """The logs at ``path``: the file itself, or those below a folder (see the module docstring):
    ``.eval`` files, and ``.json`` ones named as inspect_ai names its logs."""
    return files_at(
        path,
        pattern="*",
        kind="inspect_ai logs",
        one="an inspect_ai log name",
        expected=f"{EXPECTED}: .eval files, or .json logs named <timestamp>_<task>_<id>.json",
        is_one=lambda file: file.suffix in (".eval", ".json"),
        below=lambda file: (
            file.suffix == ".eval" or (file.suffix == ".json" and bool(LOG_NAME.match(file.name)))
        ),
    )


def read_header(path: Path, inspect_log: ModuleType) -> LogHeader:
    """The header of one log; an InputError when the file is not an inspect_ai log."""
    try:
        if path.suffix == ".eval":
            header = _eval_header(path, inspect_log)
        else:
            header = inspect_log.read_eval_log(str(path), header_only=True, format="json")
    except InputError:
        raise
    except Exception as exc:  # zip, JSON, validation: the library's many ways of refusing a file
        raise InputError(f"{path}: not an inspect_ai log ({first_line(exc)})") from None
    spec = header.eval
    epochs = spec.config.epochs or 1
    samples = spec.dataset.samples
    return LogHeader(
        path=path,
        status=header.status,
        error=first_line(header.error.message) if header.error is not None else None,
        task=spec.task,
        model=spec.model,
        planned=samples * epochs if samples is not None else None,
    )


def _eval_header(path: Path, inspect_log: ModuleType) -> Any:
    """A ``.eval`` log's ``EvalLog`` without samples, from ``header.json`` (a finished run) or
    ``_journal/start.json`` (one that never finished: status "started")."""
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        member = "header.json" if "header.json" in names else UNFINISHED_HEADER
        if member not in names:
            raise InputError(f"{path}: not an inspect_ai log (a zip without header.json)")
        with archive.open(member) as fh:
            data = json.load(fh)
    return inspect_log.EvalLog.model_validate(data)


def samples(header: LogHeader, inspect_log: ModuleType) -> Iterator[Any]:
    """The log's samples (``EvalSample``, one per sample and epoch), one at a time."""
    if header.path.suffix == ".eval":
        return _eval_samples(header.path, inspect_log)
    return _json_samples(header.path, inspect_log)


def first_line(error: BaseException | str) -> str:
    """An error's message in one short line (the libraries' run over several)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__ if isinstance(error, BaseException) else ""
    return lines[0][:200]


def _sample(data: Any, path: Path, inspect_log: ModuleType) -> Any:
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise InputError(f"{path}: a sample is not a JSON object (is this an inspect_ai log?)")
    try:
        return inspect_log.EvalSample.model_validate(
            {k: data[k] for k in SAMPLE_FIELDS if k in data}
        )
    except ValidationError as exc:
        where = f"sample {data.get('id')!r} (epoch {data.get('epoch')!r})"
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise InputError(
            f"{path}: {where} is not an inspect_ai sample ({field}: {error['msg']})"
        ) from None


def _eval_samples(path: Path, inspect_log: ModuleType) -> Iterator[Any]:
    with zipfile.ZipFile(path) as archive:
        # a sample logged again (a retried one) is a second member of the same name: the last
        # one counts, as in inspect_ai's reader
        members = {
            info.filename: info
            for info in archive.infolist()
            if info.filename.startswith("samples/") and info.filename.endswith(".json")
        }
        for info in members.values():
            try:
                with archive.open(info) as fh:
                    data = json.load(fh)
            except Exception as exc:  # bad JSON, a damaged archive, a zstd frame cut short
                raise InputError(
                    f"{path}: its member {info.filename} cannot be read ({first_line(exc)})"
                ) from None
            yield _sample(data, path, inspect_log)


def _json_samples(path: Path, inspect_log: ModuleType) -> Iterator[Any]:
    import ijson

    with path.open("rb") as fh:
        try:
            for data in ijson.items(fh, "samples.item", use_float=True):
                yield _sample(data, path, inspect_log)
        except ijson.JSONError as exc:
            raise InputError(
                f"{path}: its samples cannot be read as JSON ({first_line(exc)}); a log with NaN "
                f"or Infinity in its samples reads after `inspect log convert --to eval "
                f"--output-dir DIR {path}`"
            ) from None
