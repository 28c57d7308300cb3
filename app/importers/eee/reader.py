"""Reader for Every Eval Ever instance files (``<uuid>_samples.jsonl``, schema 0.3.0).

Each line is one sample of one evaluation (``instance_level_eval.schema.json``)::

    {"schema_version": "0.3.0", "evaluation_id": "...", "model_id": "org/model",
     "evaluation_name": "gsm8k", "evaluation_result_id": "gsm8k/exact_match", "sample_id": "17",
     "interaction_type": "single_turn",
     "input": {"raw": "<question>", "formatted": "<what the model saw>", "reference": ["72"],
               "choices": null},
     "output": {"raw": ["<the completion>"], "reasoning_trace": null},
     "answer_attribution": [{"turn_idx": 0, "source": "output.raw", "extracted_value": "72",
                             "extraction_method": "regex", "is_terminal": true}],
     "evaluation": {"score": 1.0, "is_correct": true},
     "token_usage": {"input_tokens": 80, "output_tokens": 120, "total_tokens": 200},
     "metadata": {"epoch": "1"}}

A line becomes a row: ``model_id`` the model (``--model`` renames), ``evaluation_name`` the
benchmark, ``sample_id`` the sample; ``correct`` is ``evaluation.is_correct`` (else a ``score``
of 0 or 1); ``prediction`` the extracted value of the last terminal ``answer_attribution`` (else
of its last); ``response`` the whole completion (``output.reasoning_trace`` then ``output.raw``,
blank-line separated; the assistant turns of ``messages`` for multi-turn and agentic lines);
``prompt`` what the model saw (``input.formatted``, else ``input.raw``) and ``question`` the
bare input where both are given; ``gold`` the reference (a JSON list where it holds several);
``choices`` and k, their count (none: generative); token counts from ``token_usage``; the seed,
option count, category, ``doc_hash`` and the answer's status from ``metadata``
(``forgetmap.importers.eee.format``; ``_answer_status``).

A file that holds one line per (sample, metric), with one ``evaluation_result_id`` per metric of
an evaluation, imports the lines of one id (``files.chosen_results``). Every file is read twice:
once to check it and to see its ids (``files.survey``), once for its rows, a batch at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from forgetmap.core.answer_status import STATUSES, TRUNCATED
from forgetmap.importers.common import (
    InputError,
    build_table,
    choices_json,
    json_objects,
    json_text,
)
from forgetmap.importers.eee import format as eee
from forgetmap.importers.eee.files import chosen_results, find_instance_files, survey

ROW_COLUMNS = (
    "model",
    "benchmark",
    "sample_id",
    "seed",
    "correct",
    "num_choices",
    "category",
    "prompt",
    "question",
    "response",
    "prediction",
    "gold",
    "choices",
    "doc_hash",
    "prompt_tokens",
    "completion_tokens",
    "answer_status",
)
BATCH_ROWS = 50_000
BATCH_TEXT_CHARS = 64 << 20
"""A batch ends at this many rows, or once its prompts and answers hold this many characters: an
import's memory holds one batch (a reasoning model's answers run to tens of kilobytes each)."""


def iter_eee(
    path: Path,
    *,
    model: str | None = None,
    result_id: str | None = None,
    notice: Callable[[str], None] | None = None,
) -> Iterator[pa.Table]:
    """Normalized tables (``forgetmap.importers.common``, not validated yet) of the instance files
    at ``path``: one file, its aggregate, or a folder of them. ``model`` stores every line under
    that name (refused for files of several models); ``result_id`` chooses the lines of one
    ``evaluation_result_id`` where an evaluation has several. ``notice`` hears which id was
    taken for each such evaluation."""
    files = find_instance_files(Path(path))
    found = survey(files)
    if model is not None and len(found.models) > 1:
        raise InputError(
            f"{path}: holds {len(found.models)} models ({', '.join(found.models)}); --model stores "
            "every line under one name: import one model's files, or leave --model out"
        )
    keep, notices = chosen_results(found.results, result_id)
    for line in notices:
        if notice is not None:
            notice(line)
    any_rows = False
    for instance in files:
        for table in _file_batches(instance.samples, model, keep):
            any_rows = True
            yield table
    if not any_rows:
        raise InputError(f"{path}: the instance files hold no samples")


def read_eee(path: Path, **options) -> pa.Table:
    """``iter_eee``'s tables as one (tests and small tools; imports stream)."""
    return pa.concat_tables(iter_eee(path, **options))


def _file_batches(file: Path, model: str | None, keep: dict[str, str]) -> Iterator[pa.Table]:
    columns: dict[str, list] = {name: [] for name in ROW_COLUMNS}
    chars = 0
    for number, record in json_objects(file, str(file)):
        name = record.get("evaluation_name")
        if name in keep and record.get("evaluation_result_id") != keep[name]:
            continue
        row = line_row(record, model=model, where=f"{file}:{number}")
        for key in ROW_COLUMNS:
            columns[key].append(row[key])
        chars += sum(len(row[k] or "") for k in ("prompt", "question", "response"))
        if len(columns["sample_id"]) >= BATCH_ROWS or chars >= BATCH_TEXT_CHARS:
            yield build_table(columns)
            columns = {key: [] for key in ROW_COLUMNS}
            chars = 0
    if columns["sample_id"]:
        yield build_table(columns)


def line_row(record: dict[str, Any], *, model: str | None, where: str) -> dict[str, Any]:
    """One instance line's normalized row (see the module docstring)."""
    name = _required_text(record, "evaluation_name", where)
    sample_id = record.get("sample_id")
    if isinstance(sample_id, int) and not isinstance(sample_id, bool):
        sample_id = str(sample_id)
    if not isinstance(sample_id, str) or not sample_id.strip():
        raise InputError(
            f"{where}: the line has no sample_id (is this an Every Eval Ever instance file?)"
        )
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InputError(f"{where}: metadata must be an object of strings")
    given = _object(record, "input", where)
    formatted, raw = _text(given.get("formatted")), _text(given.get("raw"))
    choices = _strings(given.get("choices"), "input.choices", where)
    tokens = record.get("token_usage")
    if not isinstance(tokens, dict):
        tokens = {}
    return {
        "model": model if model is not None else _required_text(record, "model_id", where),
        "benchmark": name,
        "sample_id": sample_id.strip(),
        "seed": eee.seed_of(metadata, where),
        "correct": _correct(_object(record, "evaluation", where), where),
        "num_choices": _num_choices(metadata, choices, where),
        "category": _text(metadata.get(eee.CATEGORY)),
        "prompt": formatted or raw,
        "question": raw if formatted else None,
        "response": _response(record, where),
        "prediction": _prediction(record.get("answer_attribution"), where),
        "gold": _one_or_list(_strings(given.get("reference"), "input.reference", where)),
        "choices": choices_json(choices) if choices else None,
        "doc_hash": _text(metadata.get(eee.DOC_HASH)),
        "prompt_tokens": _count(tokens.get("input_tokens")),
        "completion_tokens": _count(tokens.get("output_tokens")),
        "answer_status": _answer_status(metadata, where),
    }


def _required_text(record: dict, key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError(
            f"{where}: the line has no {key} (is this an Every Eval Ever instance file?)"
        )
    return value.strip()


def _object(record: dict, key: str, where: str) -> dict:
    value = record.get(key)
    if not isinstance(value, dict):
        raise InputError(
            f"{where}: {key} must be an object (is this an Every Eval Ever instance file?)"
        )
    return value


def _text(value: Any) -> str | None:
    """A text field as stored: empty and absent are the same (nothing given)."""
    return value if isinstance(value, str) and value != "" else None


def _strings(value: Any, key: str, where: str) -> list[str | None]:
    """A list of texts (a lone text counts as a list of one; a null in a list stays None);
    absent or null: empty."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise InputError(f"{where}: {key} must be a list of texts, got {type(value).__name__}")
    return [v if isinstance(v, str) else json_text(v) for v in value]


def _one_or_list(values: list[str | None]) -> str | None:
    """One text as it is, several as a JSON list, none as nothing."""
    if not values:
        return None
    return values[0] if len(values) == 1 else json_text(values)


def _correct(evaluation: dict, where: str) -> bool:
    is_correct = evaluation.get("is_correct")
    if isinstance(is_correct, bool):
        return is_correct
    score = evaluation.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool) and score in (0, 1):
        return bool(score)
    raise InputError(
        f"{where}: evaluation.is_correct is not true or false and evaluation.score {score!r} is "
        "not 0 or 1; forgetmap counts per-sample 0/1 flips (a file with one line per metric: "
        "choose a binary one with --evaluation-result-id)"
    )


def _num_choices(metadata: dict, choices: list[str | None], where: str) -> int | None:
    """``metadata.num_choices`` where given (what forgetmap writes: options it counted that the
    line may not list), else the options listed, two or more; else generative."""
    given = metadata.get(eee.NUM_CHOICES)
    if given not in (None, ""):
        k = eee.whole_number(given)
        if k is None:
            raise InputError(
                f"{where}: metadata.num_choices is {given!r}; it must be a whole number"
            )
        return k
    return len(choices) if len(choices) >= 2 else None


def _response(record: dict, where: str) -> str | None:
    """The whole completion: reasoning first, then the answer (several completions as a JSON
    list); for conversations, the assistant's turns."""
    output = record.get("output")
    if isinstance(output, dict):
        pieces = _strings(output.get("reasoning_trace"), "output.reasoning_trace", where)
        pieces.append(_one_or_list(_strings(output.get("raw"), "output.raw", where)))
    else:
        messages = record.get("messages")
        pieces = []
        for message in messages if isinstance(messages, list) else []:
            if isinstance(message, dict) and message.get("role") == "assistant":
                pieces += [_text(message.get("reasoning_trace")), _text(message.get("content"))]
    text = "\n\n".join(p for p in pieces if p)
    return text or None


def _prediction(attribution: Any, where: str) -> str | None:
    if attribution is None:
        return None
    if not isinstance(attribution, list) or not all(isinstance(a, dict) for a in attribution):
        raise InputError(f"{where}: answer_attribution must be a list of objects")
    if not attribution:
        return None
    terminal = [a for a in attribution if a.get("is_terminal") is True]
    value = (terminal or attribution)[-1].get("extracted_value")
    return value if isinstance(value, str) else json_text(value)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _answer_status(metadata: dict, where: str) -> str | None:
    """``metadata.answer_status`` (one of ``STATUSES``); else ``truncated`` where forgetmap's
    older ``metadata.truncated`` is "true" or inspect's ``stop_reason`` a token limit; else not
    said (a finished answer may still hold none)."""
    given = metadata.get(eee.ANSWER_STATUS)
    if given not in (None, ""):
        if given not in STATUSES:
            raise InputError(
                f"{where}: metadata.answer_status is {_clipped(given)!r}; it must be one of "
                f"{', '.join(STATUSES)} (or absent)"
            )
        return given
    if metadata.get(eee.TRUNCATED) == eee.flag_text(True):
        return TRUNCATED
    return TRUNCATED if _text(metadata.get(eee.STOP_REASON)) in eee.CUT_OFF_STOPS else None


def _clipped(value: Any) -> Any:
    return value[:60] + "..." if isinstance(value, str) and len(value) > 60 else value
