"""The Every Eval Ever format as JSON Schemas (draft 7), written here by hand from a reading of
the project's own schemas: evaleval/every_eval_ever at commit
9bce4136e789ec006c62582f5f9d107d20f8b398 (August 2026), ``every_eval_ever/schemas/
eval.schema.json`` and ``instance_level_eval.schema.json``, both version 0.3.0, and the link its
datastore gate checks between the two files (same uuid and folder, ``file_path``, ``checksum``,
``total_rows``, the lines' ``evaluation_id`` and ``model_id``).

What forgetmap's export writes is checked against these with the ``jsonschema`` library: every
required field, the closed top level, the types and enums, the path pattern of the instance file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath

from jsonschema import Draft7Validator

STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
STRINGS = {"type": "array", "items": {"type": "string"}}
COUNT = {"type": "integer", "minimum": 0}
UUID4 = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-4[0-9A-Fa-f]{3}-[89ABab][0-9A-Fa-f]{3}-[0-9A-Fa-f]{12}"
BOUND = {"oneOf": [{"type": "number"}, {"enum": ["Infinity", "-Infinity"]}, {"type": "null"}]}

MODEL_INFO = {
    "type": "object",
    "required": ["name", "id", "additional_details"],
    "properties": {
        "name": {"type": "string"},
        "id": {"type": "string"},
        "developer": {"type": "string"},
        "inference_platform": {"type": "string"},
        "inference_engine": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
        },
        "additional_details": {
            "type": "object",
            "required": ["deployment_type", "model_availability"],
            "properties": {
                "deployment_type": {"enum": ["self_deployed", "externally_managed", "unknown"]},
                "model_availability": {"enum": ["open_weights", "closed_weights", "unknown"]},
            },
            "additionalProperties": {"type": "string"},
        },
    },
}

SOURCE_DATA = {
    "oneOf": [
        {
            "type": "object",
            "required": ["dataset_name", "source_type", "url"],
            "properties": {
                "dataset_name": {"type": "string"},
                "source_type": {"const": "url"},
                "url": {**STRINGS, "minItems": 1},
                "additional_details": STRING_MAP,
            },
        },
        {
            "type": "object",
            "required": ["dataset_name", "source_type"],
            "properties": {
                "dataset_name": {"type": "string"},
                "source_type": {"const": "hf_dataset"},
                "hf_repo": {"type": "string"},
                "hf_split": {"type": "string"},
                "samples_number": {"type": "integer"},
                "sample_ids": STRINGS,
                "additional_details": STRING_MAP,
            },
        },
        {
            "type": "object",
            "required": ["dataset_name", "source_type"],
            "properties": {
                "dataset_name": {"type": "string"},
                "source_type": {"const": "other"},
                "additional_details": STRING_MAP,
            },
        },
    ]
}

METRIC_CONFIG = {
    "type": "object",
    "required": ["lower_is_better"],
    "properties": {
        "evaluation_description": {"type": "string"},
        "metric_id": {"type": "string"},
        "metric_name": {"type": "string"},
        "metric_kind": {"type": "string"},
        "metric_unit": {"type": "string"},
        "lower_is_better": {"type": "boolean"},
        "score_type": {"enum": ["binary", "continuous", "levels"]},
        "level_names": STRINGS,
        "has_unknown_level": {"type": "boolean"},
        "min_score": BOUND,
        "max_score": BOUND,
        "additional_details": STRING_MAP,
    },
    # a continuous score names its range; levels name themselves
    "allOf": [
        {
            "if": {
                "required": ["score_type"],
                "properties": {"score_type": {"const": "continuous"}},
            },
            "then": {"required": ["min_score", "max_score"]},
        },
        {
            "if": {"required": ["score_type"], "properties": {"score_type": {"const": "levels"}}},
            "then": {"required": ["level_names", "has_unknown_level"]},
        },
    ],
}

SCORE_DETAILS = {
    "type": "object",
    "required": ["score"],
    "properties": {
        "score": {"type": "number"},
        "details": STRING_MAP,
        "uncertainty": {
            "type": "object",
            "properties": {
                "standard_error": {
                    "type": "object",
                    "required": ["value"],
                    "properties": {"value": {"type": "number"}, "method": {"type": "string"}},
                },
                "confidence_interval": {
                    "type": "object",
                    "required": ["lower", "upper"],
                    "properties": {
                        "lower": {"type": "number"},
                        "upper": {"type": "number"},
                        "confidence_level": {"type": "number", "minimum": 0, "maximum": 1},
                        "method": {"type": "string"},
                    },
                },
                "standard_deviation": {"type": "number"},
                "num_samples": {"type": "integer"},
                "num_bootstrap_samples": {"type": "integer"},
            },
        },
    },
}

AGGREGATE = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": [
        "schema_version",
        "evaluation_id",
        "retrieved_timestamp",
        "source_metadata",
        "model_info",
        "eval_library",
        "evaluation_results",
    ],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"type": "string"},
        "evaluation_id": {"type": "string"},
        "evaluation_timestamp": {"type": "string"},
        "retrieved_timestamp": {"type": "string"},
        "source_metadata": {
            "type": "object",
            "required": ["source_type", "source_organization_name", "evaluator_relationship"],
            "properties": {
                "source_name": {"type": "string"},
                "source_type": {"enum": ["documentation", "evaluation_run"]},
                "source_organization_name": {"type": "string"},
                "source_organization_url": {"type": "string"},
                "evaluator_relationship": {
                    "enum": ["first_party", "third_party", "collaborative", "other"]
                },
                "additional_details": STRING_MAP,
            },
        },
        "eval_library": {
            "type": "object",
            "required": ["name", "version"],
            "properties": {
                "name": {"type": "string"},
                "version": {"type": "string"},
                "additional_details": STRING_MAP,
            },
        },
        "model_info": MODEL_INFO,
        "evaluation_results": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["evaluation_name", "source_data", "metric_config", "score_details"],
                "properties": {
                    "evaluation_result_id": {"type": "string"},
                    "evaluation_name": {"type": "string"},
                    "source_data": SOURCE_DATA,
                    "evaluation_timestamp": {"type": "string"},
                    "metric_config": METRIC_CONFIG,
                    "score_details": SCORE_DETAILS,
                    "generation_config": {
                        "type": "object",
                        "properties": {
                            "generation_args": {"type": "object"},
                            "additional_details": STRING_MAP,
                        },
                    },
                },
            },
        },
        "detailed_evaluation_results": {
            "type": "object",
            "required": ["format", "file_path"],
            "properties": {
                "format": {"enum": ["jsonl"]},
                "file_path": {
                    "type": "string",
                    "pattern": rf"^data/[^/]+/[^/]+/[^/]+/{UUID4}_samples\.jsonl$",
                },
                "hash_algorithm": {"enum": ["sha256", "md5"]},
                "checksum": {"type": "string"},
                "total_rows": {"type": "integer"},
                "additional_details": STRING_MAP,
            },
        },
    },
}

INSTANCE = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": [
        "schema_version",
        "evaluation_id",
        "model_id",
        "evaluation_name",
        "sample_id",
        "interaction_type",
        "input",
        "answer_attribution",
        "evaluation",
    ],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"type": "string"},
        "evaluation_id": {"type": "string"},
        "model_id": {"type": "string"},
        "evaluation_name": {"type": "string"},
        "evaluation_result_id": {"type": "string"},
        "sample_id": {"type": "string"},
        "sample_hash": {"type": ["string", "null"]},
        "interaction_type": {"enum": ["single_turn", "multi_turn", "agentic"]},
        "input": {
            "type": "object",
            "required": ["raw", "reference"],
            "properties": {
                "raw": {"type": "string"},
                "formatted": {"type": ["string", "null"]},
                "reference": STRINGS,
                "choices": {"type": ["array", "null"], "items": {"type": "string"}},
            },
        },
        "output": {
            "type": ["object", "null"],
            "required": ["raw"],
            "properties": {
                "raw": STRINGS,
                "reasoning_trace": {"type": ["array", "null"], "items": {"type": "string"}},
            },
        },
        "messages": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "required": ["turn_idx", "role"],
                "properties": {
                    "turn_idx": COUNT,
                    "role": {"type": "string"},
                    "content": {"type": ["string", "null"]},
                    "reasoning_trace": {"type": ["string", "null"]},
                    "tool_calls": {"type": ["array", "null"]},
                    "tool_call_id": {"type": ["array", "null"], "items": {"type": "string"}},
                },
            },
        },
        "answer_attribution": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "turn_idx",
                    "source",
                    "extracted_value",
                    "extraction_method",
                    "is_terminal",
                ],
                "properties": {
                    "turn_idx": COUNT,
                    "source": {"type": "string"},
                    "extracted_value": {"type": "string"},
                    "extraction_method": {"type": "string"},
                    "is_terminal": {"type": "boolean"},
                },
            },
        },
        "evaluation": {
            "type": "object",
            "required": ["score", "is_correct"],
            "properties": {
                "score": {"type": "number"},
                "is_correct": {"type": "boolean"},
                "num_turns": {"type": ["integer", "null"], "minimum": 1},
                "tool_calls_count": {"type": ["integer", "null"], "minimum": 0},
            },
        },
        "token_usage": {
            "type": ["object", "null"],
            "required": ["input_tokens", "output_tokens", "total_tokens"],
            "properties": {
                "input_tokens": COUNT,
                "output_tokens": COUNT,
                "total_tokens": COUNT,
                "input_tokens_cache_write": {"type": ["integer", "null"], "minimum": 0},
                "input_tokens_cache_read": {"type": ["integer", "null"], "minimum": 0},
                "reasoning_tokens": {"type": ["integer", "null"], "minimum": 0},
            },
        },
        "performance": {"type": ["object", "null"]},
        "error": {"type": ["string", "null"]},
        "metadata": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
    },
    # a single turn has an output and no transcript; a conversation the other way round
    "allOf": [
        {
            "if": {"properties": {"interaction_type": {"const": "single_turn"}}},
            "then": {
                "required": ["output"],
                "properties": {"output": {"type": "object"}, "messages": {"type": "null"}},
            },
        },
        {
            "if": {"properties": {"interaction_type": {"enum": ["multi_turn", "agentic"]}}},
            "then": {
                "required": ["messages"],
                "properties": {"output": {"type": "null"}, "messages": {"type": "array"}},
            },
        },
    ],
}

Draft7Validator.check_schema(AGGREGATE)
Draft7Validator.check_schema(INSTANCE)


def problems(record: dict, schema: dict) -> list[str]:
    """Where ``record`` breaks ``schema``, one line each (none: it validates)."""
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in Draft7Validator(schema).iter_errors(record)
    ]


def check_export(folder: Path) -> list[Path]:
    """Validate every file of an export: each aggregate and each instance line against its
    schema, and the link between them as the datastore's gate checks it (one uuid and folder,
    ``file_path``, sha256, line count, the lines' ``evaluation_id`` and ``model_id``). Returns
    the aggregates; raises AssertionError naming the first problem."""
    aggregates = sorted(folder.rglob("*.json"))
    samples = sorted(folder.rglob("*_samples.jsonl"))
    assert aggregates and len(samples) == len(aggregates), (aggregates, samples)
    for path in aggregates:
        aggregate = json.loads(path.read_text(encoding="utf-8"))
        assert not problems(aggregate, AGGREGATE), (path, problems(aggregate, AGGREGATE))
        detailed = aggregate["detailed_evaluation_results"]
        instance = path.with_name(path.stem + "_samples.jsonl")
        assert PurePosixPath(detailed["file_path"]) == PurePosixPath(
            instance.relative_to(folder).as_posix()
        )
        data = instance.read_bytes()
        assert detailed["checksum"] == hashlib.sha256(data).hexdigest()
        lines = data.decode("utf-8").splitlines()
        assert detailed["total_rows"] == len(lines) > 0
        for line in lines:
            record = json.loads(line)
            assert not problems(record, INSTANCE), (instance, problems(record, INSTANCE))
            assert record["evaluation_id"] == aggregate["evaluation_id"]
            assert record["model_id"] == aggregate["model_info"]["id"]
    return aggregates
