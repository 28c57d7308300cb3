"""Finding Every Eval Ever instance files, the aggregate each belongs to, and what their lines
hold before any is read for its rows (``survey``).

The schema links the two files of a run three ways: the instance file is
``<uuid>_samples.jsonl`` beside ``<uuid>.json``; the aggregate names it in
``detailed_evaluation_results.file_path`` (a path in the datastore, ``data/<benchmark>/<developer>/
<model>/<uuid>_samples.jsonl``: its last part is the file's name); and every line's
``evaluation_id`` is the aggregate's. An aggregate found by name or by ``file_path`` must agree
with its lines (``evaluation_id``, ``model_id``) and with the file (``total_rows``, and
``checksum`` where it gives one): a sidecar of another run, or a copy cut short, is refused before
anything is read for its rows.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from forgetmap.core.errors import InputError
from forgetmap.importers.common import json_objects
from forgetmap.importers.eee.format import SAMPLES_SUFFIX

EXPECTED = (
    "an Every Eval Ever instance file <uuid>_samples.jsonl (with its aggregate <uuid>.json beside "
    "it, or without), the aggregate itself, or a folder of them"
)
CHECKSUMS = {"sha256": hashlib.sha256, "md5": hashlib.md5}
HASH_CHUNK = 1 << 20


class InstanceFile(NamedTuple):
    samples: Path
    aggregate: Path | None  # the run's aggregate JSON, where one is beside the file


def find_instance_files(path: Path) -> list[InstanceFile]:
    """The instance files at ``path`` (a file, its aggregate, or a folder searched for
    ``*_samples.jsonl``), each with its aggregate when one beside it names it."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder (expected {EXPECTED})")
    if path.is_dir():
        files = sorted(p for p in path.rglob(f"*{SAMPLES_SUFFIX}") if p.is_file())
        if not files:
            raise InputError(
                f"{path}: no instance files (*{SAMPLES_SUFFIX}) below it; expected {EXPECTED}"
            )
        linked: dict[Path, dict[str, Path]] = {}
        return [InstanceFile(f, _linked_aggregates(f.parent, linked).get(f.name)) for f in files]
    if path.suffix == ".json":
        return [InstanceFile(_named_samples(path), path)]
    if path.suffix == ".jsonl":
        return [InstanceFile(path, _linked_aggregates(path.parent, {}).get(path.name))]
    raise InputError(f"{path}: not a .jsonl or .json file; expected {EXPECTED}")


def _linked_aggregates(folder: Path, known: dict[Path, dict[str, Path]]) -> dict[str, Path]:
    """{instance file name: its aggregate} for the aggregates in ``folder`` (read once per
    folder). ``<uuid>.json`` beside ``<uuid>_samples.jsonl`` is its aggregate (a broken one is
    refused); any other JSON object there that names a file in ``detailed_evaluation_results``
    links that file; other JSON files are not the importer's."""
    if folder in known:
        return known[folder]
    links: dict[str, Path] = {}
    for candidate in sorted(folder.glob("*.json")):
        paired = candidate.with_name(candidate.stem + SAMPLES_SUFFIX)
        try:
            named = _samples_name(read_aggregate(candidate))
        except InputError:
            if paired.is_file():
                raise
            continue
        if paired.is_file():
            links[paired.name] = candidate
        if named is not None:
            links.setdefault(named, candidate)
    known[folder] = links
    return links


def _named_samples(aggregate: Path) -> Path:
    name = _samples_name(read_aggregate(aggregate))
    if name is None:
        raise InputError(
            f"{aggregate}: an aggregate without instance-level results (no "
            "detailed_evaluation_results.file_path): nothing per sample to import"
        )
    samples = aggregate.with_name(name)
    if not samples.is_file():
        raise InputError(f"{aggregate}: its instance file {name} is not beside it")
    return samples


def _samples_name(aggregate: dict[str, Any]) -> str | None:
    detailed = aggregate.get("detailed_evaluation_results")
    file_path = detailed.get("file_path") if isinstance(detailed, dict) else None
    return PurePosixPath(file_path).name if isinstance(file_path, str) and file_path else None


def read_aggregate(path: Path) -> dict[str, Any]:
    """An aggregate JSON: an object with an ``evaluation_id``; InputError for anything else."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a JSON aggregate of Every Eval Ever ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("evaluation_id"), str):
        raise InputError(f"{path}: not an Every Eval Ever aggregate (no evaluation_id)")
    return data


@dataclass
class Survey:
    """What the lines of the files to import hold, read before their rows are."""

    models: list[str] = field(default_factory=list)
    # per evaluation_name: its distinct evaluation_result_id values (None: a line without one)
    results: dict[str, list[str | None]] = field(default_factory=dict)


def survey(files: list[InstanceFile]) -> Survey:
    """Read every line once: the models and the result ids per evaluation, each line checked
    against its file's aggregate, each file against what its aggregate says of it."""
    found = Survey()
    models: dict[str, None] = {}
    for instance in files:
        aggregate = read_aggregate(instance.aggregate) if instance.aggregate else None
        rows = 0
        for number, record in json_objects(instance.samples, str(instance.samples)):
            rows += 1
            model = record.get("model_id")
            if isinstance(model, str):
                models.setdefault(model)
            name = record.get("evaluation_name")
            if isinstance(name, str):
                ids = found.results.setdefault(name, [])
                result_id = record.get("evaluation_result_id")
                if result_id not in ids:
                    ids.append(result_id)
            if aggregate is not None:
                _check_line(record, aggregate, instance, f"{instance.samples}:{number}")
        if aggregate is not None:
            _check_file(instance, aggregate, rows)
    found.models = list(models)
    return found


def _check_line(record: dict, aggregate: dict, instance: InstanceFile, where: str) -> None:
    assert instance.aggregate is not None  # what ``aggregate`` was read from
    for key, expected in (
        ("evaluation_id", aggregate["evaluation_id"]),
        ("model_id", (aggregate.get("model_info") or {}).get("id")),
    ):
        if expected is not None and record.get(key) != expected:
            raise InputError(
                f"{where}: {key} {record.get(key)!r} is not its aggregate's ({expected!r}, "
                f"{instance.aggregate.name}): the file belongs to another run"
            )


def _check_file(instance: InstanceFile, aggregate: dict, rows: int) -> None:
    assert instance.aggregate is not None  # what ``aggregate`` was read from
    detailed = aggregate.get("detailed_evaluation_results")
    if not isinstance(detailed, dict):
        return
    name = instance.aggregate.name
    total = detailed.get("total_rows")
    if isinstance(total, int) and total != rows:
        raise InputError(
            f"{instance.samples}: holds {rows} lines, its aggregate {name} says {total}: an "
            "incomplete or edited copy; fetch the run's files again"
        )
    algorithm, checksum = detailed.get("hash_algorithm"), detailed.get("checksum")
    if algorithm in CHECKSUMS and isinstance(checksum, str) and checksum:
        digest = CHECKSUMS[algorithm]()
        with instance.samples.open("rb") as fh:
            while chunk := fh.read(HASH_CHUNK):
                digest.update(chunk)
        if digest.hexdigest() != checksum.lower():
            raise InputError(
                f"{instance.samples}: its {algorithm} is not the checksum its aggregate {name} "
                "gives: an incomplete or edited copy; fetch the run's files again"
            )


def chosen_results(
    results: dict[str, list[str | None]], chosen: str | None
) -> tuple[dict[str, str], list[str]]:
    """Which lines of files with one line per (sample, metric) to import: {evaluation_name:
    the evaluation_result_id kept} for each evaluation whose lines hold several (the others are
    imported whole), and the notices saying so. ``chosen`` is taken for every evaluation that has
    several; none chosen where one has several, or one chosen that such an evaluation (or every
    evaluation) lacks, is refused with the ids there are."""
    several = {name: ids for name, ids in results.items() if len(ids) > 1}
    every_id = sorted({i for ids in results.values() for i in ids if i is not None})
    if chosen is not None and chosen not in every_id:
        listed = (
            ", ".join(every_id) if every_id else "none (the lines have no evaluation_result_id)"
        )
        raise InputError(f"no line has evaluation_result_id {chosen!r}; the ids are: {listed}")
    keep: dict[str, str] = {}
    notices = []
    for name, ids in several.items():
        shown = ", ".join("(none)" if i is None else i for i in ids)
        if chosen is None:
            others = f" ({len(several) - 1} more evaluations are alike)" if len(several) > 1 else ""
            raise InputError(
                f"evaluation {name!r} has one line per sample and metric (evaluation_result_id "
                f"{shown}){others}; choose one with --evaluation-result-id ID"
            )
        if chosen not in ids:
            raise InputError(
                f"evaluation {name!r} has no evaluation_result_id {chosen!r}; its ids are: {shown}"
            )
        keep[name] = chosen
        notices.append(f"{name}: evaluation_result_id {shown}; took {chosen}")
    return keep, notices
