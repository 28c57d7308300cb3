"""`forgetmap export eee MODEL OUT_DIR`: a model's stored results as Every Eval Ever files
(schema 0.3.0, the layout of the coalition's datastore).

One evaluation run per (benchmark, seed), as forgetmap stores them: its aggregate
``<uuid>.json`` (the run's accuracy over its samples) and its instance file
``<uuid>_samples.jsonl`` (one line per sample, by sample id), in
``OUT_DIR/data/<benchmark>/<developer>/<model>/``, the aggregate naming the instance file by its
path there with its sha256 and line count. ``<uuid>`` is derived from (model, benchmark, seed), so
exporting the same results twice names the same files. Each line carries what forgetmap stores of
the sample, where the schema has a place for it and in ``metadata`` (strings) where it has none:
the seed, the option count, the category, lm-eval's ``doc_hash``, whether the answer was cut
off. ``forgetmap import eee`` reads them back into the same rows (app/importers/eee/).

The files are written into a folder beside OUT_DIR and renamed at the end: a failed export
leaves nothing. The rows are read from one snapshot of the database, a page at a time.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from forgetmap.core.answer_status import TRUNCATED
from forgetmap.core.errors import InputError
from forgetmap.core.taxonomy import UNCATEGORIZED
from forgetmap.db import export as export_db
from forgetmap.db.store import Connection, Store
from forgetmap.importers.eee import format as eee

UNSPECIFIED = "unspecified"
"""What fills a required name the store does not know (a model's developer, the organization
that provides the data)."""
RESULT_ID = "accuracy"
EXTRACTION_METHOD = "stored_prediction"
"""forgetmap keeps the answer its source extracted (or, for scored options, the most likely one),
not how it was extracted."""
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


@dataclass(frozen=True)
class ExportSummary:
    model: str
    folder: Path
    runs: int
    rows: int
    benchmarks: int


def export_model(store: Store, model: str, folder: Path) -> ExportSummary:
    """Write every (benchmark, seed) of ``model`` to the new folder ``folder`` (absent or empty)."""
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InputError(f"{folder} already exists and is not an empty folder; choose a new path")
    retrieved = str(int(time.time()))
    with export_db.snapshot(store) as conn:
        found = export_db.model_row(conn, model)
        if found is None:
            known = export_db.model_names(conn)
            shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "") or "none yet"
            raise InputError(f"unknown model {model!r}; the stored models: {shown}")
        units = export_db.model_units(conn, found["id"])
        if not units:
            raise InputError(f"model {model!r} has no stored results to export")
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = folder.with_name(f".{folder.name}.partial-{uuid.uuid4().hex[:12]}")
        staging.mkdir()
        try:
            rows = sum(_write_run(conn, found, unit, staging, retrieved) for unit in units)
            if folder.exists():
                folder.rmdir()
            staging.rename(folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return ExportSummary(model, folder, len(units), rows, len({u.benchmark for u in units}))


def _write_run(
    conn: Connection, model: dict, unit: export_db.ExportUnit, root: Path, retrieved: str
) -> int:
    """One unit's instance file, then its aggregate; the lines written."""
    name = model["name"]
    file_uuid = run_uuid(name, unit.benchmark, unit.seed)
    folder = run_folder(name, unit.benchmark)
    evaluation_id = f"{unit.benchmark}/{name}/seed-{unit.seed}/{retrieved}"
    (root / folder).mkdir(parents=True, exist_ok=True)
    samples_name = f"{file_uuid}{eee.SAMPLES_SUFFIX}"
    digest = hashlib.sha256()
    lines = 0
    with (root / folder / samples_name).open("wb") as out:
        for page in export_db.unit_rows(conn, model["id"], unit):
            chunk = "".join(
                json.dumps(
                    instance_record(row, name, unit, evaluation_id),
                    ensure_ascii=False,
                    allow_nan=False,
                )
                + "\n"
                for row in page
            ).encode("utf-8")
            out.write(chunk)
            digest.update(chunk)
            lines += len(page)
    detailed = {
        "format": "jsonl",
        "file_path": (folder / samples_name).as_posix(),
        "hash_algorithm": "sha256",
        "checksum": digest.hexdigest(),
        "total_rows": lines,
    }
    record = aggregate_record(model, unit, evaluation_id, retrieved, detailed)
    text = json.dumps(record, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    (root / folder / f"{file_uuid}.json").write_text(text, encoding="utf-8")
    return lines


def run_uuid(model: str, benchmark: str, seed: int) -> str:
    """A version-4 UUID (as the datastore requires) drawn from the unit's names, not at random."""
    key = json.dumps([model, benchmark, seed], ensure_ascii=False).encode("utf-8")
    return str(uuid.UUID(bytes=hashlib.sha256(key).digest()[:16], version=4))


def developer_and_model(name: str) -> tuple[str | None, str]:
    """``org/model`` -> (org, model); a name without an organization has no developer."""
    developer, _, rest = name.partition("/")
    return (developer, rest) if rest and developer else (None, name)


def path_part(name: str) -> str:
    """One folder name from a benchmark's or a model's name (slashes and characters no file
    system takes become ``_``); the files themselves keep the names."""
    part = _UNSAFE.sub("_", name).rstrip(". ")
    return part if part not in ("", ".", "..") else "_"


def run_folder(model: str, benchmark: str) -> PurePosixPath:
    """``data/<benchmark>/<developer>/<model>``: the datastore's folder of a run."""
    developer, short = developer_and_model(model)
    return PurePosixPath(
        "data", path_part(benchmark), path_part(developer or UNSPECIFIED), path_part(short)
    )


def instance_record(row: dict, model: str, unit: export_db.ExportUnit, evaluation_id: str) -> dict:
    """One sample's line: the bare input in ``input.raw`` and what the model saw in
    ``input.formatted``; the answer in ``output.raw`` and the extracted one in
    ``answer_attribution``; the rest in ``metadata``."""
    prompt, question = row["prompt"], row["question"]
    raw = question if question is not None else (prompt or "")
    reference = [] if row["gold"] is None else [row["gold"]]
    given: dict = {"raw": raw}
    if prompt is not None:
        given["formatted"] = prompt
    given["reference"] = reference
    choices = _choices(row["choices"])
    if choices is not None:
        given["choices"] = choices
    metadata = {eee.SEED: str(unit.seed)}
    if unit.category != UNCATEGORIZED:  # given to the import, it would name a category
        metadata[eee.CATEGORY] = unit.category
    if row["num_choices"] is not None:
        metadata[eee.NUM_CHOICES] = str(row["num_choices"])
    if row["doc_hash"] is not None:
        metadata[eee.DOC_HASH] = row["doc_hash"]
    if row["answer_status"] is not None:
        metadata[eee.ANSWER_STATUS] = row["answer_status"]
        # a reader of the older metadata still tells a cut-off answer
        metadata[eee.TRUNCATED] = eee.flag_text(row["answer_status"] == TRUNCATED)
    record = {
        "schema_version": eee.SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "model_id": model,
        "evaluation_name": unit.benchmark,
        "evaluation_result_id": RESULT_ID,
        "sample_id": row["sample_id"],
        "sample_hash": eee.sample_hash(raw, reference),
        "interaction_type": "single_turn",
        "input": given,
        "output": {"raw": [] if row["response"] is None else [row["response"]]},
        "answer_attribution": []
        if row["prediction"] is None
        else [
            {
                "turn_idx": 0,
                "source": "output.raw",
                "extracted_value": row["prediction"],
                "extraction_method": EXTRACTION_METHOD,
                "is_terminal": True,
            }
        ],
        "evaluation": {"score": 1.0 if row["correct"] else 0.0, "is_correct": bool(row["correct"])},
    }
    if row["prompt_tokens"] is not None and row["completion_tokens"] is not None:
        record["token_usage"] = {
            "input_tokens": row["prompt_tokens"],
            "output_tokens": row["completion_tokens"],
            "total_tokens": row["prompt_tokens"] + row["completion_tokens"],
        }
    record["metadata"] = metadata
    return record


def _choices(stored: str | None) -> list[str] | None:
    """The options as the schema lists them, from their stored JSON list (None: none, or text
    that is not such a list)."""
    if stored is None:
        return None
    try:
        options = json.loads(stored)
    except json.JSONDecodeError:
        return None
    return [str(o) for o in options] if isinstance(options, list) else None


def aggregate_record(
    model: dict, unit: export_db.ExportUnit, evaluation_id: str, retrieved: str, detailed: dict
) -> dict:
    """The run's aggregate: the model, its accuracy on the unit's samples, the instance file."""
    name = model["name"]
    developer, _ = developer_and_model(name)
    model_details = {"deployment_type": "unknown", "model_availability": "unknown"}
    if model["family"]:
        model_details["family"] = model["family"]
    if model["size_params"]:
        model_details["size_params"] = str(model["size_params"])
    model_info = {"name": name, "id": name}
    if developer is not None:
        model_info["developer"] = developer
    model_info["additional_details"] = model_details
    accuracy = unit.correct / unit.rows
    started = str(int(unit.first_run_at.timestamp()))
    return {
        "schema_version": eee.SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "evaluation_timestamp": started,
        "retrieved_timestamp": retrieved,
        "source_metadata": {
            "source_name": "forgetmap",
            "source_type": "evaluation_run",
            "source_organization_name": UNSPECIFIED,
            "evaluator_relationship": "other",
        },
        "eval_library": {
            "name": "forgetmap",
            "version": _forgetmap_version(),
            "additional_details": {"run_sources": ", ".join(unit.sources)},
        },
        "model_info": model_info,
        "evaluation_results": [
            {
                "evaluation_result_id": RESULT_ID,
                "evaluation_name": unit.benchmark,
                "source_data": {
                    "dataset_name": unit.benchmark,
                    "source_type": "other",
                    "additional_details": {eee.CATEGORY: unit.category},
                },
                "evaluation_timestamp": started,
                "metric_config": {
                    "evaluation_description": "share of the samples answered correctly",
                    "metric_id": "accuracy",
                    "metric_name": "accuracy",
                    "metric_kind": "accuracy",
                    "metric_unit": "proportion",
                    "lower_is_better": False,
                    "score_type": "continuous",
                    "min_score": 0.0,
                    "max_score": 1.0,
                },
                "score_details": {
                    "score": accuracy,
                    "uncertainty": {
                        "standard_error": {
                            "value": math.sqrt(accuracy * (1 - accuracy) / unit.rows),
                            "method": "analytic",
                        },
                        "num_samples": unit.rows,
                    },
                },
                "generation_config": {"additional_details": {eee.SEED: str(unit.seed)}},
            }
        ],
        "detailed_evaluation_results": detailed,
    }


def _forgetmap_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("forgetmap")
    except PackageNotFoundError:  # a source tree that is not installed
        return "unknown"
