"""lm-eval samples and results files as lm-eval writes them, for the tests and the benchmarks.

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

Every writer takes per-sample correctness (a sequence of 0/1 or bools; any other number, e.g.
0.5, is written as-is so that refusal of non-binary scores can be tested) and returns the path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from forgetmap.demo.layouts.common import (
    DEFAULT_TIMESTAMP,
    GSM8K_DOCS,
    LETTERS,
    MC_DOCS,
    NAVIGATE_DOCS,
    McDoc,
    choice_loglikelihoods,
    is_right,
    mmlu_context,
    score_value,
    sha256_hex,
)


def lm_eval_samples_name(task: str, timestamp: str = DEFAULT_TIMESTAMP) -> str:
    return f"samples_{task}_{timestamp}.jsonl"


def _lm_eval_mc_record(
    i: int, value: Any, metric: str, extra: Mapping[str, Any], *, num_choices: int, style: str
) -> dict[str, Any]:
    doc = MC_DOCS[i % len(MC_DOCS)]
    n = num_choices
    gold = doc.answer % n
    choices = list(doc.choices[:n]) + [f"Option {k}" for k in range(len(doc.choices), n)]
    context = mmlu_context(McDoc(doc.subject, doc.question, tuple(choices), gold), n)
    request_args = [(context, f" {LETTERS[k]}") for k in range(n)]
    lls = choice_loglikelihoods(n, gold, is_right(value), i)
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
        "doc_hash": sha256_hex(json.dumps(stored_doc, indent=2, ensure_ascii=False)),
        "prompt_hash": sha256_hex(context),
        "target_hash": sha256_hex(str(target)),
        metric: score_value(value),
        **{k: score_value(v) for k, v in extra.items()},
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
    answered: bool = True,
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
        said = final if is_right(value) else wrong
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
        said = answer if is_right(value) else ("Yes" if answer == "No" else "No")
        generated = (
            " We start at the origin (0, 0), facing the positive y-axis. Tracking each "
            f"instruction, we end at the position shown. So the answer is {said}."
        )
        filtered = said
    if not answered:  # a text with no number and no "the answer is": every filter finds none
        generated = " Let me think about this carefully before I commit to anything"
        filtered = "[invalid]"  # the regex filters' fallback
    record: dict[str, Any] = {
        "doc_id": i,
        "doc": stored_doc,
        "target": target,
        "arguments": [(context, gen_kwargs)],
        "resps": [[generated]],
        "filtered_resps": [filtered],
        "filter": filter_name,
        "metrics": [metric, *extra],
        "doc_hash": sha256_hex(json.dumps(stored_doc, indent=2, ensure_ascii=False)),
        "prompt_hash": sha256_hex(context),
        "target_hash": sha256_hex(str(target)),
        metric: score_value(value),
        **{k: score_value(v) for k, v in extra.items()},
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
    no_answer: Collection[int] = (),
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
    ``no_answer``: the generated docs (by number) whose text holds no answer, filtered to
    ``[invalid]`` under every filter (score them 0).
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
                            answered=i not in no_answer,
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
    results: dict[str, dict[str, Any]] = {}
    configs: dict[str, Any] = {}
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
