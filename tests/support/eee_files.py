"""Every Eval Ever files written by hand for the tests, in the datastore's layout
(``data/<benchmark>/<developer>/<model>/<uuid>.json`` beside ``<uuid>_samples.jsonl``), with the
correctness values the tests compute their map from by hand.

- ``toy_mc``: 8 four-option questions, one run per model (seed 0), with a reasoning trace longer
  than an answer the database keeps in its rows, token counts, lm-eval's ``doc_hash`` and an
  answer cut off at the token limit (inspect's ``stop_reason``).
- ``toy_gen``: 4 generated answers, two repeats per model in one file, as inspect writes epochs
  (``metadata.epoch`` 1 and 2: seeds 0 and 1).
- ``toy_helm``: one line per (sample, metric) as HELM's converter writes them, ``exact_match``
  (0/1) and ``f1`` (a fraction), linked to their aggregate results by ``evaluation_result_id``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

BASE = "acme/base-1b"
POST = "acme/base-1b-instruct"
MC_CORRECT = {BASE: [1, 1, 1, 1, 0, 0, 0, 0], POST: [1, 1, 0, 0, 1, 0, 0, 0]}
GEN_CORRECT = {  # (model, epoch)
    (BASE, 1): [1, 1, 0, 0],
    (POST, 1): [1, 0, 1, 0],
    (BASE, 2): [1, 1, 1, 0],
    (POST, 2): [1, 1, 1, 1],
}
HELM_CORRECT = {BASE: [1, 0, 1], POST: [0, 0, 1]}
OPTIONS = ["Paris", "Rome", "Madrid", "Berlin"]
LETTERS = "ABCD"
LONG_THOUGHT = "Let me think about each option in turn. " * 12  # 480 bytes: kept beside the db
UUIDS = {  # (model, benchmark): the run's file uuid (version 4)
    (BASE, "toy_mc"): "0b6f1d52-4c3e-4d8a-9b1f-1a2b3c4d5e61",
    (POST, "toy_mc"): "0b6f1d52-4c3e-4d8a-9b1f-1a2b3c4d5e62",
    (BASE, "toy_gen"): "0b6f1d52-4c3e-4d8a-9b1f-1a2b3c4d5e63",
    (POST, "toy_gen"): "0b6f1d52-4c3e-4d8a-9b1f-1a2b3c4d5e64",
    (BASE, "toy_helm"): "0b6f1d52-4c3e-4d8a-9b1f-1a2b3c4d5e65",
    (POST, "toy_helm"): "0b6f1d52-4c3e-4d8a-9b1f-1a2b3c4d5e66",
}


def evaluation_id(model: str, benchmark: str) -> str:
    return f"{benchmark}/{model}/1750000000"


def line(model: str, benchmark: str, sample_id: str, correct: int, /, **fields) -> dict:
    """One single-turn instance line; ``fields`` replace or add top-level fields."""
    record = {
        "schema_version": "0.3.0",
        "evaluation_id": evaluation_id(model, benchmark),
        "model_id": model,
        "evaluation_name": benchmark,
        "sample_id": sample_id,
        "interaction_type": "single_turn",
        "input": {"raw": f"question {sample_id}", "reference": ["yes"]},
        "output": {"raw": [f"answer {sample_id}"]},
        "answer_attribution": [],
        "evaluation": {"score": float(correct), "is_correct": bool(correct)},
    }
    record.update(fields)
    return record


def mc_lines(model: str) -> list[dict]:
    lines = []
    for i, correct in enumerate(MC_CORRECT[model]):
        gold = LETTERS[i % 4]
        said = gold if correct else LETTERS[(i + 1) % 4]
        thought = [LONG_THOUGHT] if i == 0 else None
        metadata = {"category": "Toy", "doc_hash": f"doc{i}"}
        if i == 7:
            metadata["stop_reason"] = "max_tokens"
        lines.append(
            line(
                model,
                "toy_mc",
                f"mc-{i}",
                correct,
                input={
                    "raw": f"Which city is number {i}?",
                    "formatted": f"Answer with a letter.\n\nWhich city is number {i}?\nAnswer:",
                    "reference": [gold],
                    "choices": OPTIONS,
                },
                output={"raw": [f"The answer is {said}."], "reasoning_trace": thought},
                answer_attribution=[
                    {
                        "turn_idx": 0,
                        "source": "output.raw",
                        "extracted_value": f"{said}.",
                        "extraction_method": "regex",
                        "is_terminal": False,
                    },
                    {
                        "turn_idx": 0,
                        "source": "output.raw",
                        "extracted_value": said,
                        "extraction_method": "regex",
                        "is_terminal": True,
                    },
                ],
                token_usage={"input_tokens": 20 + i, "output_tokens": 5, "total_tokens": 25 + i},
                metadata=metadata,
            )
        )
    return lines


def gen_lines(model: str) -> list[dict]:
    return [
        line(
            model,
            "toy_gen",
            f"gen-{i}",
            correct,
            metadata={"epoch": str(epoch)},
            answer_attribution=[
                {
                    "turn_idx": 0,
                    "source": "output.raw",
                    "extracted_value": str(i + correct),
                    "extraction_method": "exact",
                    "is_terminal": True,
                }
            ],
        )
        for epoch in (1, 2)
        for i, correct in enumerate(GEN_CORRECT[(model, epoch)])
    ]


def helm_lines(model: str) -> list[dict]:
    lines = []
    for i, correct in enumerate(HELM_CORRECT[model]):
        for result_id, score in (("exact_match", float(correct)), ("f1", 0.5)):
            lines.append(
                line(
                    model,
                    "toy_helm",
                    f"h-{i}",
                    correct,
                    evaluation_result_id=result_id,
                    evaluation={"score": score, "is_correct": bool(correct)},
                )
            )
    return lines


def write_run(
    root: Path,
    model: str,
    benchmark: str,
    lines: list[dict],
    *,
    aggregate: bool = True,
    total_rows: int | None = None,
) -> Path:
    """The run's instance file (and its aggregate, naming it) under ``root``; the instance
    file's path."""
    file_uuid = UUIDS[(model, benchmark)]
    developer, short = model.split("/")
    relative = Path("data", benchmark, developer, short)
    folder = root / relative
    folder.mkdir(parents=True, exist_ok=True)
    samples = folder / f"{file_uuid}_samples.jsonl"
    data = "".join(json.dumps(r) + "\n" for r in lines).encode()
    samples.write_bytes(data)
    if aggregate:
        ids = sorted({r.get("evaluation_result_id") or benchmark for r in lines})
        record = {
            "schema_version": "0.3.0",
            "evaluation_id": evaluation_id(model, benchmark),
            "retrieved_timestamp": "1750000001",
            "source_metadata": {
                "source_type": "evaluation_run",
                "source_organization_name": "acme",
                "evaluator_relationship": "first_party",
            },
            "eval_library": {"name": "inspect_ai", "version": "0.3.100"},
            "model_info": {
                "name": short,
                "id": model,
                "developer": developer,
                "additional_details": {
                    "deployment_type": "self_deployed",
                    "model_availability": "open_weights",
                },
            },
            "evaluation_results": [
                {
                    "evaluation_result_id": i,
                    "evaluation_name": benchmark,
                    "source_data": {"dataset_name": benchmark, "source_type": "other"},
                    "metric_config": {"lower_is_better": False},
                    "score_details": {"score": 0.5},
                }
                for i in ids
            ],
            "detailed_evaluation_results": {
                "format": "jsonl",
                "file_path": (relative / samples.name).as_posix(),
                "hash_algorithm": "sha256",
                "checksum": hashlib.sha256(data).hexdigest(),
                "total_rows": len(lines) if total_rows is None else total_rows,
            },
        }
        (folder / f"{file_uuid}.json").write_text(json.dumps(record, indent=2))
    return samples


def write_pair(root: Path) -> Path:
    """Both models' ``toy_mc`` and ``toy_gen`` runs under ``root``."""
    for model in (BASE, POST):
        write_run(root, model, "toy_mc", mc_lines(model))
        write_run(root, model, "toy_gen", gen_lines(model))
    return root


def write_helm(root: Path) -> Path:
    """Both models' ``toy_helm`` runs, one line per (sample, metric), under ``root``."""
    for model in (BASE, POST):
        write_run(root, model, "toy_helm", helm_lines(model))
    return root
