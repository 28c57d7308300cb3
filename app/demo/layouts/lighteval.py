"""lighteval details files as lighteval writes them, for the tests and the benchmarks.

Built from the writers' source:

- lighteval ``EvaluationTracker.save`` / ``save_details`` (src/lighteval/logging/
  evaluation_tracker.py) and ``DetailsLogger.Detail`` (src/lighteval/logging/info_loggers.py):
  ``details_<task>_<date_id>.parquet``, ``Dataset.from_list([asdict(detail) ...])`` with the
  columns sorted by name. v0.10 and earlier: the flat ``Detail`` (``example, instruction,
  full_prompt, ..., predictions, choices, gold_index, metrics, specifics``); v0.11+: ``doc``
  (``Doc``), ``model_response`` (``ModelResponse``) and ``metric``. Some versions fell back to
  ``str(value)`` for every column; ``stringify=True`` reproduces that.

Every writer takes per-sample correctness (a sequence of 0/1 or bools; any other number, e.g.
0.5, is written as-is so that refusal of non-binary scores can be tested) and returns the path.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from forgetmap.demo.layouts.common import (
    DEFAULT_TIMESTAMP,
    GSM8K_DOCS,
    LETTERS,
    MC_DOCS,
    choice_loglikelihoods,
    is_right,
    score_value,
)


class SamplingMethod(str, enum.Enum):  # noqa: UP042 (as lighteval defines it)
    """lighteval.tasks.requests.SamplingMethod (v0.11+)."""

    GENERATIVE = "GENERATIVE"
    LOGPROBS = "LOGPROBS"
    PERPLEXITY = "PERPLEXITY"


def lighteval_details_name(task: str, timestamp: str = DEFAULT_TIMESTAMP) -> str:
    return f"details_{task}_{timestamp}.parquet"


def _fake_tokens(text: str, limit: int = 12) -> list[int]:
    return [(ord(c) * 31 + k) % 32000 for k, c in enumerate(text[:limit])]


def _lighteval_mc_parts(i: int, task: str, fewshot: int) -> dict[str, Any]:
    doc = MC_DOCS[i % len(MC_DOCS)]
    subject = doc.subject.replace("_", " ")
    instruction = f"The following are multiple choice questions (with answers) about {subject}.\n\n"
    query = (
        instruction
        + doc.question
        + "\n"
        + "".join(f"{LETTERS[k]}. {c}\n" for k, c in enumerate(doc.choices))
        + "Answer:"
    )
    shots = "".join(
        f"{MC_DOCS[(i + s + 1) % len(MC_DOCS)].question}\nAnswer: "
        f"{LETTERS[MC_DOCS[(i + s + 1) % len(MC_DOCS)].answer]}\n\n"
        for s in range(fewshot)
    )
    return {
        "query": query,
        "instruction": instruction,
        "full_prompt": instruction + shots + query[len(instruction) :],
        "choices": [f" {LETTERS[k]}" for k in range(len(doc.choices))],
        "gold_index": doc.answer,
        "question": doc.question,
    }


def _lighteval_gen_parts(i: int, right: bool, answered: bool = True) -> dict[str, Any]:
    question, _, final = GSM8K_DOCS[i % len(GSM8K_DOCS)]
    said = final if right else str(int(final) + 3)
    query = f"Question: {question}\nAnswer:"
    generated = (
        f" Let's think step by step. Working through the numbers, the final answer is {said}."
    )
    if not answered:  # a chain of thought that ends before its answer: nothing to extract
        generated = " Let's think step by step. First we work out how many there were"
    return {
        "query": query,
        "instruction": "",
        "full_prompt": query,
        "choices": [final],
        "gold_index": 0,
        "generated": generated,
        # extractive metrics leave an empty list where they found no answer
        "extracted": [said] if answered else [],
    }


def _flat_detail(
    i: int,
    value: Any,
    metric: str,
    extra: Mapping[str, Any],
    *,
    kind: str,
    task: str,
    fewshot: int,
    answered: bool = True,
    cut: int = 0,
) -> dict[str, Any]:
    """``asdict(DetailsLogger.Detail)`` of lighteval <= 0.10 (``cut``: tokens lighteval cut from
    the prompt, in every request's ``truncated``)."""
    right = is_right(value)
    metrics = {metric: score_value(value), **{k: score_value(v) for k, v in extra.items()}}
    if kind == "multiple_choice":
        p = _lighteval_mc_parts(i, task, fewshot)
        n = len(p["choices"])
        lls = choice_loglikelihoods(n, p["gold_index"], right, i)
        winner = max(range(n), key=lls.__getitem__)
        return {
            "example": p["query"],
            "instruction": p["instruction"],
            "full_prompt": p["full_prompt"],
            "num_effective_few_shots": fewshot,
            "num_asked_few_shots": fewshot,
            # LoglikelihoodResponse.result = (logprob, argmax_logits_eq_gold) per choice
            "predictions": [(ll, k == winner) for k, ll in enumerate(lls)],
            "prediction_logits": [],
            "input_tokens": [_fake_tokens(p["full_prompt"]) for _ in range(n)],
            "cont_tokens": [_fake_tokens(c) for c in p["choices"]],
            "truncated": [cut] * n,
            "padded": [0] * n,
            "gold": [],
            "pred_logits": [],
            "choices": p["choices"],
            "gold_index": [p["gold_index"]],
            "metrics": metrics,
            "specifics": None,
        }
    p = _lighteval_gen_parts(i, right, answered)
    return {
        "example": p["query"],
        "instruction": p["instruction"],
        "full_prompt": p["full_prompt"],
        "num_effective_few_shots": fewshot,
        "num_asked_few_shots": fewshot,
        "predictions": [p["generated"]],
        "prediction_logits": [],
        "input_tokens": [_fake_tokens(p["full_prompt"])],
        "cont_tokens": [_fake_tokens(p["generated"])],
        "truncated": [cut],
        "padded": [0],
        "gold": [p["choices"][0]],
        "pred_logits": [],
        "choices": [],
        "gold_index": [],
        "metrics": metrics,
        "specifics": {
            "extracted_predictions": p["extracted"],
            "extracted_golds": [p["choices"][0]],
        },
    }


def _nested_detail(
    i: int,
    value: Any,
    metric: str,
    extra: Mapping[str, Any],
    *,
    kind: str,
    task: str,
    fewshot: int,
    with_id: bool,
    answered: bool = True,
    cut: int = 0,
) -> dict[str, Any]:
    """``asdict(DetailsLogger.Detail)`` of lighteval >= 0.11: doc, model_response, metric."""
    right = is_right(value)
    task_name = task.rsplit("|", 1)[0] if task.count("|") >= 2 else task
    base_doc: dict[str, Any] = {
        "instruction": None,
        "images": None,
        "specific": None,
        "unconditioned_query": None,
        "original_query": None,
        "id": str(i) if with_id else "",
        "task_name": task_name,
        "num_asked_few_shots": fewshot,
        "num_effective_few_shots": fewshot,
        "fewshot_samples": [],
        "fewshot_sorting_class": None,
        "generation_size": None,
        "stop_sequences": None,
        "use_logits": False,
        "num_samples": 1,
        "generation_grammar": None,
    }
    if kind == "multiple_choice":
        p = _lighteval_mc_parts(i, task, fewshot)
        n = len(p["choices"])
        lls = choice_loglikelihoods(n, p["gold_index"], right, i)
        doc = {
            "query": p["query"],
            "choices": p["choices"],
            "gold_index": p["gold_index"],
            **base_doc,
            "instruction": p["instruction"],
            "sampling_methods": [SamplingMethod.LOGPROBS],
        }
        winner = max(range(n), key=lls.__getitem__)
        response = {
            "input": p["full_prompt"],
            "input_tokens": _fake_tokens(p["full_prompt"]),
            "text": [],
            "output_tokens": [],
            "text_post_processed": None,
            "reasonings": [],
            "logprobs": lls,
            "argmax_logits_eq_gold": [k == winner for k in range(n)],
            "logits": None,
            "unconditioned_logprobs": None,
            "truncated_tokens_count": cut,
            "padded_tokens_count": 0,
        }
    else:
        p = _lighteval_gen_parts(i, right, answered)
        doc = {
            "query": p["query"],
            "choices": p["choices"],
            "gold_index": p["gold_index"],
            **base_doc,
            "sampling_methods": [SamplingMethod.GENERATIVE],
            # what lighteval's extractive metrics leave in the doc once they have scored it
            "specific": {
                "extracted_predictions": p["extracted"],
                "extracted_golds": [p["choices"][0]],
            },
            "generation_size": 256,
            "stop_sequences": ["Question:", "\n\n"],
        }
        response = {
            "input": p["full_prompt"],
            "input_tokens": _fake_tokens(p["full_prompt"]),
            "text": [p["generated"]],
            "output_tokens": [_fake_tokens(p["generated"])],
            "text_post_processed": None,
            "reasonings": [None],
            "logprobs": [],
            "argmax_logits_eq_gold": [],
            "logits": None,
            "unconditioned_logprobs": None,
            "truncated_tokens_count": cut,
            "padded_tokens_count": 0,
        }
    metrics = {metric: score_value(value), **{k: score_value(v) for k, v in extra.items()}}
    return {"doc": doc, "model_response": response, "metric": metrics}


def write_lighteval_details(
    directory: Path,
    task: str,
    correct: Sequence[Any],
    *,
    schema: str = "nested",
    kind: str = "multiple_choice",
    metric: str | None = None,
    extra_metrics: Mapping[str, Sequence[Any]] | None = None,
    with_ids: bool = True,
    stringify: bool = False,
    shuffle_seed: int | None = None,
    timestamp: str = DEFAULT_TIMESTAMP,
    no_answer: Collection[int] = (),
    prompt_cut: Collection[int] = (),
) -> Path:
    """Write ``details_<task>_<timestamp>.parquet`` in ``directory``.

    ``schema``: ``"nested"`` (lighteval >= 0.11) or ``"flat"`` (<= 0.10). ``kind``:
    ``"multiple_choice"`` (log-likelihood over ``" A"``..``" D"``, MMLU docs, metric ``acc``) or
    ``"generative"`` (gsm8k docs, metric ``extractive_match``). ``with_ids=False`` leaves the
    nested doc ``id`` empty (flat details never have one). ``stringify`` stores every column as
    ``str(value)`` like lighteval's fallback. ``shuffle_seed`` permutes the rows (sample i keeps
    its content and score wherever it lands). ``no_answer``: the generative rows (by number)
    whose text ends before its answer, so that the extractive metric found none (score them 0);
    ``prompt_cut``: the rows whose prompt lighteval cut to fit the context (120 tokens).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if schema not in ("nested", "flat"):
        raise ValueError(f"unknown schema {schema!r}")
    if kind not in ("multiple_choice", "generative"):
        raise ValueError(f"unknown kind {kind!r}")
    metric = metric or ("acc" if kind == "multiple_choice" else "extractive_match")
    last = task.rsplit("|", 1)[-1]
    fewshot = int(last) if task.count("|") >= 2 and last.isdigit() else 0
    extra_metrics = dict(extra_metrics or {})
    details = []
    for i, value in enumerate(correct):
        extra = {k: v[i] for k, v in extra_metrics.items()}
        said: dict[str, Any] = {
            "answered": i not in no_answer,
            "cut": 120 if i in prompt_cut else 0,
        }
        if schema == "flat":
            details.append(
                _flat_detail(i, value, metric, extra, kind=kind, task=task, fewshot=fewshot, **said)
            )
        else:
            details.append(
                _nested_detail(
                    i,
                    value,
                    metric,
                    extra,
                    kind=kind,
                    task=task,
                    fewshot=fewshot,
                    with_id=with_ids,
                    **said,
                )
            )
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(details)
    if stringify:
        details = [{k: str(v) for k, v in d.items()} for d in details]
    table = pa.Table.from_pylist(details)
    table = table.select(sorted(table.column_names))
    path = directory / lighteval_details_name(task, timestamp)
    pq.write_table(table, path)
    return path
