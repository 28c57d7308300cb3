"""Write evaluation-harness output files in the exact formats the tools write, for tests.

Built from the writers' source:

- lm-evaluation-harness ``EvaluationTracker.save_results_samples`` (lm_eval/loggers/
  evaluation_tracker.py) and the ``log_samples`` record built in ``lm_eval/evaluator.py``:
  ``samples_<task>_<date_id>.jsonl``, one JSON line per (doc, filter) with ``doc_id, doc, target,
  arguments, resps, filtered_resps, filter, metrics, doc_hash, prompt_hash, target_hash`` and one
  key per metric. ``arguments`` is rewritten to ``{"gen_args_i": {"arg_j": ...}}`` (0.4.3+; a list
  of argument tuples before), ``resps``/``filtered_resps`` go through ``sanitize_list`` (every
  leaf becomes a string) and ``target`` through ``str``. Hashes are ``hash_string`` = sha256 hex.
  ``filter`` and ``metrics`` arrived in 0.4.7 (``filters_named=False`` leaves them out, as
  0.4.3-0.4.6 do); ``save_results_aggregated`` writes ``results_<date_id>.json`` beside them.
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
import hashlib
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = [
    "DEFAULT_TIMESTAMP",
    "MC_DOCS",
    "NAVIGATE_DOCS",
    "lighteval_details_name",
    "lm_eval_samples_name",
    "write_lighteval_details",
    "write_lm_eval_results",
    "write_lm_eval_samples",
]

DEFAULT_TIMESTAMP = "2024-05-13T16-13-22.123456"
"""``datetime.now().isoformat().replace(":", "-")``, as both tools name their files."""

LETTERS = "ABCDEFGHIJ"


@dataclass(frozen=True)
class McDoc:
    subject: str
    question: str
    choices: tuple[str, ...]
    answer: int


MC_DOCS: tuple[McDoc, ...] = (
    McDoc(
        "anatomy",
        "Which of the following is the body cavity that contains the pituitary gland?",
        ("Abdominal", "Cranial", "Pleural", "Spinal"),
        1,
    ),
    McDoc(
        "anatomy",
        "Which of these branches of the trigeminal nerve contain somatic motor processes?",
        (
            "The supraorbital nerve",
            "The infraorbital nerve",
            "The mental nerve",
            "None of the above",
        ),
        3,
    ),
    McDoc(
        "anatomy",
        "The pleura",
        (
            "have no sensory innervation.",
            "are separated by a 2 mm space.",
            "extend into the neck.",
            "are composed of respiratory epithelium.",
        ),
        2,
    ),
    McDoc(
        "anatomy",
        "In Angle's Class II Div 2 occlusion there is",
        (
            "excess overbite of the upper lateral incisors.",
            "negative overjet of the upper central incisors.",
            "excess overjet of the upper lateral incisors.",
            "excess overjet of the upper central incisors.",
        ),
        2,
    ),
    McDoc(
        "anatomy",
        "Which of the following is the most common site of a berry aneurysm?",
        (
            "Anterior communicating artery",
            "Basilar artery",
            "Posterior cerebral artery",
            "Vertebral artery",
        ),
        0,
    ),
    McDoc(
        "anatomy",
        "The chordae tendineae are found in the",
        ("atria.", "ventricles.", "aorta.", "pulmonary veins."),
        1,
    ),
)
"""MMLU-style documents (subject, question, 4 choices, answer index); cycled for longer runs."""

NAVIGATE_DOCS: tuple[tuple[str, str], ...] = (
    (
        "If you follow these instructions, do you return to the starting point? Always face "
        "forward. Take 1 step backward. Take 9 steps left. Take 2 steps backward. Take 6 steps "
        "forward. Take 4 steps forward. Take 4 steps backward. Take 3 steps right.\nOptions:\n"
        "- Yes\n- No",
        "No",
    ),
    (
        "If you follow these instructions, do you return to the starting point? Take 8 steps. "
        "Take 1 step. Turn left. Turn left. Take 9 steps.\nOptions:\n- Yes\n- No",
        "Yes",
    ),
    (
        "If you follow these instructions, do you return to the starting point? Always face "
        "forward. Take 6 steps left. Take 7 steps right. Take 2 steps left. Take 10 steps "
        "right.\nOptions:\n- Yes\n- No",
        "No",
    ),
    (
        "If you follow these instructions, do you return to the starting point? Turn around. "
        "Take 3 steps. Turn around. Take 3 steps.\nOptions:\n- Yes\n- No",
        "Yes",
    ),
)
"""BIG-Bench Hard ``navigate`` documents (input, target); cycled for longer runs."""

GSM8K_DOCS: tuple[tuple[str, str, str], ...] = (
    (
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
        "in May. How many clips did Natalia sell altogether in April and May?",
        "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 "
        "clips altogether in April and May.\n#### 72",
        "72",
    ),
    (
        "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of "
        "babysitting. How much did she earn?",
        "Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\nWorking 50 minutes, she earned "
        "0.2 x 50 = $<<0.2*50=10>>10.\n#### 10",
        "10",
    ),
    (
        "James writes a 3-page letter to 2 different friends twice a week. How many pages "
        "does he write a year?",
        "He writes each friend 3*2=<<3*2=6>>6 pages a week\nSo he writes 6*2=<<6*2=12>>12 "
        "pages every week\nThat means he writes 12*52=<<12*52=624>>624 pages a year\n#### 624",
        "624",
    ),
)


def _hash(text: str) -> str:
    """lm-eval's ``hash_string``: sha256 hex digest."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _score(value: Any) -> float:
    return float(value)


def _is_right(value: Any) -> bool:
    return float(value) >= 0.5


def _lls(n: int, gold: int, right: bool, i: int) -> list[float]:
    """Per-choice log-likelihoods whose argmax is ``gold`` iff ``right``."""
    base = [-2.5 - 0.37 * ((i + j) % 5) for j in range(n)]
    winner = gold if right else (gold + 1) % n
    base[winner] = -0.4 - 0.01 * (i % 7)
    return [round(v, 6) for v in base]


def _mmlu_context(doc: McDoc, n: int) -> str:
    subject = doc.subject.replace("_", " ")
    lines = [f"The following are multiple choice questions (with answers) about {subject}.", ""]
    lines.append(doc.question.strip())
    for letter, choice in zip(LETTERS, doc.choices[:n], strict=False):
        lines.append(f"{letter}. {choice}")
    lines.append("Answer:")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# lm-evaluation-harness
# --------------------------------------------------------------------------------------------


def lm_eval_samples_name(task: str, timestamp: str = DEFAULT_TIMESTAMP) -> str:
    return f"samples_{task}_{timestamp}.jsonl"


def _lm_eval_mc_record(
    i: int, value: Any, metric: str, extra: Mapping[str, Any], *, num_choices: int, style: str
) -> dict[str, Any]:
    doc = MC_DOCS[i % len(MC_DOCS)]
    n = num_choices
    gold = doc.answer % n
    choices = list(doc.choices[:n]) + [f"Option {k}" for k in range(len(doc.choices), n)]
    context = _mmlu_context(McDoc(doc.subject, doc.question, tuple(choices), gold), n)
    request_args = [(context, f" {LETTERS[k]}") for k in range(n)]
    lls = _lls(n, gold, _is_right(value), i)
    resps = [[(ll, False)] for ll in lls]
    filtered = [(ll, False) for ll in lls]
    stored_doc = {
        "question": doc.question,
        "subject": doc.subject,
        "choices": choices,
        "answer": gold,
    }
    target = gold
    record: dict[str, Any] = {
        "doc_id": i,
        "doc": stored_doc,
        "target": target,
        "arguments": request_args,
        "resps": resps,
        "filtered_resps": filtered,
        "filter": "none",
        "metrics": [metric, *extra],
        "doc_hash": _hash(json.dumps(stored_doc, indent=2, ensure_ascii=False)),
        "prompt_hash": _hash(context),
        "target_hash": _hash(str(target)),
        metric: _score(value),
        **{k: _score(v) for k, v in extra.items()},
    }
    return _lm_eval_saved(record, style)


def _lm_eval_gen_record(
    i: int,
    value: Any,
    metric: str,
    extra: Mapping[str, Any],
    *,
    filter_name: str,
    flavor: str,
    style: str,
) -> dict[str, Any]:
    if flavor == "gsm8k":
        question, answer, final = GSM8K_DOCS[i % len(GSM8K_DOCS)]
        stored_doc = {"question": question, "answer": answer}
        context = f"Question: {question}\nAnswer:"
        gen_kwargs = {
            "until": ["Question:", "</s>", "<|im_end|>"],
            "do_sample": False,
            "temperature": 0.0,
        }
        target = answer
        wrong = str(int(final) + 3)
        said = final if _is_right(value) else wrong
        generated = f" Let me work it out step by step.\nThe answer is {said}.\n#### {said}"
        filtered = said if filter_name == "strict-match" else f"{said}."
    else:  # BIG-Bench Hard navigate, chain-of-thought few-shot
        text, answer = NAVIGATE_DOCS[i % len(NAVIGATE_DOCS)]
        stored_doc = {"input": text, "target": answer}
        context = (
            "Given a series of navigation instructions, determine whether one would end up "
            f"back at the starting point.\n\nQ: {text}\nA: Let's think step by step."
        )
        gen_kwargs = {
            "max_gen_toks": 1024,
            "until": ["</s>", "Q", "\n\n"],
            "do_sample": False,
            "temperature": 0.0,
        }
        target = answer
        said = answer if _is_right(value) else ("Yes" if answer == "No" else "No")
        generated = (
            " We start at the origin (0, 0), facing the positive y-axis. Tracking each "
            f"instruction, we end at the position shown. So the answer is {said}."
        )
        filtered = said
    record: dict[str, Any] = {
        "doc_id": i,
        "doc": stored_doc,
        "target": target,
        "arguments": [(context, gen_kwargs)],
        "resps": [[generated]],
        "filtered_resps": [filtered],
        "filter": filter_name,
        "metrics": [metric, *extra],
        "doc_hash": _hash(json.dumps(stored_doc, indent=2, ensure_ascii=False)),
        "prompt_hash": _hash(context),
        "target_hash": _hash(str(target)),
        metric: _score(value),
        **{k: _score(v) for k, v in extra.items()},
    }
    return _lm_eval_saved(record, style)


def _sanitize_list(sub: Any) -> Any:
    """lm-eval's ``sanitize_list``: nested lists/tuples kept, every leaf turned into ``str``."""
    if isinstance(sub, list):
        return [_sanitize_list(item) for item in sub]
    if isinstance(sub, tuple):
        return tuple(_sanitize_list(item) for item in sub)
    return str(sub)


def _lm_eval_saved(sample: dict[str, Any], style: str) -> dict[str, Any]:
    """What ``save_results_samples`` does to a logged sample before ``json.dumps``."""
    if style == "dict":  # lm-eval >= 0.4.3
        arguments: dict[str, Any] = {}
        for i, arg in enumerate(sample["arguments"]):
            arguments[f"gen_args_{i}"] = {}
            for j, tmp in enumerate(arg):
                arguments[f"gen_args_{i}"][f"arg_{j}"] = tmp
        sample["resps"] = _sanitize_list(sample["resps"])
        sample["filtered_resps"] = _sanitize_list(sample["filtered_resps"])
        sample["arguments"] = arguments
        sample["target"] = str(sample["target"])
    elif style == "list":  # older releases: the raw lists, tuples dumped as JSON arrays
        sample["arguments"] = [list(a) for a in sample["arguments"]]
    else:
        raise ValueError(f"unknown arguments style {style!r}")
    return sample


def write_lm_eval_samples(
    directory: Path,
    task: str,
    correct: Sequence[Any] | Mapping[str, Sequence[Any]],
    *,
    kind: str = "multiple_choice",
    metric: str | None = None,
    extra_metrics: Mapping[str, Sequence[Any]] | None = None,
    num_choices: int = 4,
    arguments_style: str = "dict",
    gen_flavor: str | None = None,
    timestamp: str = DEFAULT_TIMESTAMP,
    filters_named: bool = True,
    ranks: int = 1,
    legacy_model_args: str | None = None,
) -> Path:
    """Write ``samples_<task>_<timestamp>.jsonl`` in ``directory``.

    ``kind``: ``"multiple_choice"`` (loglikelihood requests, one per option; MMLU-style docs,
    metric ``acc`` by default) or ``"generate_until"`` (one generation request; metric
    ``exact_match`` by default; BBH navigate docs, or gsm8k docs when ``gen_flavor="gsm8k"`` or
    the task name starts with ``gsm8k``). ``correct`` is a list of per-sample scores, or for
    ``generate_until`` a mapping filter name -> scores to write one line per filter and doc, in
    lm-eval's order (all docs of the first filter, then the next). A single list uses filter
    ``none`` (MC) or ``get-answer`` (generation). ``extra_metrics``: more metric keys per line.
    ``filters_named=False`` writes the lines of lm-eval 0.4.3-0.4.6, which carry neither
    ``filter`` nor ``metrics`` (the run's results file names the filters:
    ``write_lm_eval_results``). ``ranks``: the order of a run on that many GPUs, each rank's lines
    (its documents ``rank, rank + ranks, ...`` for each filter in turn) after the previous rank's.
    ``legacy_model_args``: write as lm-eval 0.4.0-0.4.2 do, ``<model_args>_<task>.jsonl`` (``/``
    and ``=`` as ``__``) holding the samples as one JSON array (``json.dumps(indent=2)``), each
    as ``evaluate`` logged it: raw argument lists and ``(ll, is_greedy)`` pairs, no hashes, no
    filter or metric list (``write_lm_eval_results`` writes the run's ``results.json``).
    """
    if legacy_model_args is not None:
        arguments_style, filters_named = "list", False
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    extra_metrics = dict(extra_metrics or {})
    lines: list[dict[str, Any]] = []
    if kind == "multiple_choice":
        metric = metric or "acc"
        if isinstance(correct, Mapping):
            raise ValueError("multiple_choice samples have the single filter 'none'")
        for i, value in enumerate(correct):
            extra = {k: v[i] for k, v in extra_metrics.items()}
            lines.append(
                _lm_eval_mc_record(
                    i, value, metric, extra, num_choices=num_choices, style=arguments_style
                )
            )
    elif kind == "generate_until":
        metric = metric or "exact_match"
        flavor = gen_flavor or ("gsm8k" if task.startswith("gsm8k") else "navigate")
        per_filter = (
            dict(correct)
            if isinstance(correct, Mapping)
            else {("strict-match" if flavor == "gsm8k" else "get-answer"): correct}
        )
        # lm_eval.evaluator.evaluate: each rank logs, for each filter, its documents; the
        # ranks' logs are gathered one after another
        for rank in range(ranks):
            for filter_name, values in per_filter.items():
                for i in range(rank, len(values), ranks):
                    extra = {k: v[i] for k, v in extra_metrics.items()}
                    lines.append(
                        _lm_eval_gen_record(
                            i,
                            values[i],
                            metric,
                            extra,
                            filter_name=filter_name,
                            flavor=flavor,
                            style=arguments_style,
                        )
                    )
    else:
        raise ValueError(f"unknown kind {kind!r}")
    if not filters_named:  # lm-eval < 0.4.7
        for line in lines:
            del line["filter"], line["metrics"]
    if legacy_model_args is not None:  # lm-eval 0.4.0-0.4.2: no hashes, one JSON array
        for line in lines:
            del line["doc_hash"], line["prompt_hash"], line["target_hash"]
        path = directory / f"{re.sub('/|=', '__', legacy_model_args)}_{task}.jsonl"
        path.write_text(json.dumps(lines, indent=2, ensure_ascii=False), encoding="utf-8")
        return path
    path = directory / lm_eval_samples_name(task, timestamp)
    with path.open("w", encoding="utf-8") as fh:
        for sample in lines:
            fh.write(json.dumps(sample, ensure_ascii=False) + "\n")
    return path


def write_lm_eval_results(
    directory: Path,
    filters: Mapping[str, Sequence[str] | None],
    *,
    timestamp: str = DEFAULT_TIMESTAMP,
    legacy_model_args: str | None = None,
) -> Path:
    """Write the run's ``results_<timestamp>.json`` beside its samples, as lm-eval's
    ``EvaluationTracker.save_results_aggregated`` does: per task its scores under
    ``"<metric>,<filter>"`` and its config (``TaskConfig.to_dict``: None fields left out, so a
    task without ``filter_list`` has none). ``filters``: per task, its filter names in its
    ``filter_list`` order, or None for a task that lists none. ``legacy_model_args``: lm-eval
    0.4.0-0.4.2's ``results.json``, whose ``config.model_args`` names the samples files."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    results, configs = {}, {}
    for task, names in filters.items():
        results[task] = {"alias": task}
        for name in names or ["none"]:
            results[task][f"exact_match,{name}"] = 0.5
            results[task][f"exact_match_stderr,{name}"] = 0.05
        config: dict[str, Any] = {
            "task": task,
            "dataset_path": task,
            "output_type": "generate_until",
            "num_fewshot": 0,
            "metric_list": [{"metric": "exact_match", "aggregation": "mean"}],
            "metadata": {"version": 3.0},
        }
        if names is not None:
            config["filter_list"] = [
                {"name": name, "filter": [{"function": "take_first"}]} for name in names
            ]
        configs[task] = config
    document = {
        "results": results,
        "group_subtasks": {task: [] for task in filters},
        "configs": dict(sorted(configs.items())),
        "versions": {task: 3.0 for task in filters},
        "n-shot": {task: 0 for task in filters},
        "config": {
            "model": "hf",
            "model_args": legacy_model_args or "pretrained=org/model",
            "batch_size": "auto",
        },
        "date": 1715617000.0,
    }
    name = "results.json" if legacy_model_args is not None else f"results_{timestamp}.json"
    path = directory / name
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# lighteval
# --------------------------------------------------------------------------------------------


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


def _lighteval_gen_parts(i: int, right: bool) -> dict[str, Any]:
    question, _, final = GSM8K_DOCS[i % len(GSM8K_DOCS)]
    said = final if right else str(int(final) + 3)
    query = f"Question: {question}\nAnswer:"
    return {
        "query": query,
        "instruction": "",
        "full_prompt": query,
        "choices": [final],
        "gold_index": 0,
        "generated": (
            f" Let's think step by step. Working through the numbers, the final answer is {said}."
        ),
        "extracted": said,
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
) -> dict[str, Any]:
    """``asdict(DetailsLogger.Detail)`` of lighteval <= 0.10."""
    right = _is_right(value)
    metrics = {metric: _score(value), **{k: _score(v) for k, v in extra.items()}}
    if kind == "multiple_choice":
        p = _lighteval_mc_parts(i, task, fewshot)
        n = len(p["choices"])
        lls = _lls(n, p["gold_index"], right, i)
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
            "truncated": [0] * n,
            "padded": [0] * n,
            "gold": [],
            "pred_logits": [],
            "choices": p["choices"],
            "gold_index": [p["gold_index"]],
            "metrics": metrics,
            "specifics": None,
        }
    p = _lighteval_gen_parts(i, right)
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
        "truncated": [0],
        "padded": [0],
        "gold": [p["choices"][0]],
        "pred_logits": [],
        "choices": [],
        "gold_index": [],
        "metrics": metrics,
        "specifics": {
            "extracted_predictions": [p["extracted"]],
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
) -> dict[str, Any]:
    """``asdict(DetailsLogger.Detail)`` of lighteval >= 0.11: doc, model_response, metric."""
    right = _is_right(value)
    task_name = task.rsplit("|", 1)[0] if task.count("|") >= 2 else task
    base_doc = {
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
        lls = _lls(n, p["gold_index"], right, i)
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
            "truncated_tokens_count": 0,
            "padded_tokens_count": 0,
        }
    else:
        p = _lighteval_gen_parts(i, right)
        doc = {
            "query": p["query"],
            "choices": p["choices"],
            "gold_index": p["gold_index"],
            **base_doc,
            "sampling_methods": [SamplingMethod.GENERATIVE],
            # what lighteval's extractive metrics leave in the doc once they have scored it
            "specific": {
                "extracted_predictions": [p["extracted"]],
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
            "truncated_tokens_count": 0,
            "padded_tokens_count": 0,
        }
    metrics = {metric: _score(value), **{k: _score(v) for k, v in extra.items()}}
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
) -> Path:
    """Write ``details_<task>_<timestamp>.parquet`` in ``directory``.

    ``schema``: ``"nested"`` (lighteval >= 0.11) or ``"flat"`` (<= 0.10). ``kind``:
    ``"multiple_choice"`` (log-likelihood over ``" A"``..``" D"``, MMLU docs, metric ``acc``) or
    ``"generative"`` (gsm8k docs, metric ``extractive_match``). ``with_ids=False`` leaves the
    nested doc ``id`` empty (flat details never have one). ``stringify`` stores every column as
    ``str(value)`` like lighteval's fallback. ``shuffle_seed`` permutes the rows (sample i keeps
    its content and score wherever it lands).
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
        if schema == "flat":
            details.append(
                _flat_detail(i, value, metric, extra, kind=kind, task=task, fewshot=fewshot)
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
