"""lighteval output trees in the layout and task names of the paper's released runs.

What the paper's runs look like (its release and ../shared/paper_suite.md), written here exactly:

- lighteval 0.10 "flat" details (``asdict(Detail)``: example, instruction, full_prompt,
  num_effective_few_shots, num_asked_few_shots, predictions, prediction_logits, input_tokens,
  cont_tokens, truncated, padded, gold, pred_logits, choices, gold_index, metrics, specifics;
  columns sorted by name), one parquet per task, rows in a shuffled order;
- ``OUT/details/<org>/<model>/<ts>/details_<suite|task|fewshot>_<ts>.parquet`` and
  ``OUT/results/<org>/<model>/results_<ts>.json`` whose ``config_general.generation_parameters``
  holds the run's seed; one run per seed;
- generative letter tasks scored by ``extractive_match`` (choices are the letters, gold_index the
  answer's position); the base model's query is a few-shot block followed by the question, the
  post model's is a chain-of-thought instruction with the question in quotes, inside a chat
  template in its full prompt.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from forgetmap.core.columns import one_item_lists

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

FEWSHOT_BLOCK = (
    "The following are questions with answers.\n\n"
    "Question: Which planet is known as the red planet?\nA. Venus\nB. Mars\nC. Jupiter\n"
    "Answer: B\n\n"
    "Question: What is the boiling point of water at sea level in Celsius?\nA. 90\nB. 100\nC. 110\n"
    "Answer: B\n\n"
)

COT_TEMPLATE = (
    "\n    Answer the following multiple choice question.\n"
    '    On the very last line, write exactly "Answer: $LETTER" (e.g. "Answer: B").\n'
    "    Think step by step, showing your reasoning.\n"
    '    Question: "{question}"\n    '
)


@dataclass(frozen=True)
class Item:
    """One question: its text, its options, the position of the right one."""

    question: str
    options: tuple[str, ...]
    gold: int


def question_block(item: Item) -> str:
    options = "".join(f"{LETTERS[i]}. {o}\n" for i, o in enumerate(item.options))
    return f"{item.question}\n{options}".rstrip("\n")


def base_query(item: Item) -> str:
    return f"{FEWSHOT_BLOCK}Question: {question_block(item)}\nAnswer:"


def chat_query(item: Item) -> str:
    return COT_TEMPLATE.format(question=question_block(item))


def chat_prompt(query: str) -> str:
    return (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        f"<|im_start|>user\n{query}<|im_end|>\n<|im_start|>assistant\n"
    )


# asdict(Detail) of lighteval 0.10 as pyarrow infers it from the rows, columns sorted by name
DETAILS_SCHEMA = pa.schema(
    [
        ("choices", pa.list_(pa.string())),
        ("cont_tokens", pa.list_(pa.list_(pa.int64()))),
        ("example", pa.string()),
        ("full_prompt", pa.string()),
        ("gold", pa.list_(pa.string())),
        ("gold_index", pa.list_(pa.int64())),
        ("input_tokens", pa.list_(pa.list_(pa.int64()))),
        ("instruction", pa.string()),
        ("metrics", pa.struct([("extractive_match", pa.float64())])),
        ("num_asked_few_shots", pa.int64()),
        ("num_effective_few_shots", pa.int64()),
        ("padded", pa.list_(pa.int64())),
        ("pred_logits", pa.list_(pa.null())),
        ("prediction_logits", pa.list_(pa.null())),
        ("predictions", pa.list_(pa.string())),
        (
            "specifics",
            pa.struct(
                [
                    ("extracted_predictions", pa.list_(pa.string())),
                    ("extracted_golds", pa.list_(pa.string())),
                ]
            ),
        ),
        ("truncated", pa.list_(pa.int64())),
    ]
)


# the same details for a log-likelihood task (MMLU-style ``acc``): a (logprob, is_greedy) pair per
# choice in ``predictions``, as pyarrow stores lighteval's tuples
_LOGLIK_TYPES = {
    "predictions": pa.list_(pa.list_(pa.float64())),
    "metrics": pa.struct([("acc", pa.float64())]),
    "specifics": pa.null(),
}
LOGLIK_SCHEMA = pa.schema(
    [pa.field(f.name, _LOGLIK_TYPES.get(f.name, f.type)) for f in DETAILS_SCHEMA]
)


def _answered(item: Item, correct: bool) -> int:
    """The option a model chose: the gold one when ``correct``, else the next one."""
    return item.gold if correct else (item.gold + 1) % len(item.options)


def loglik_row(item: Item, correct: bool, *, fewshot: int) -> dict:
    """``asdict(Detail)`` of lighteval 0.10 for one question scored by log-likelihood (the base
    model's few-shot prompt; the most likely choice is the gold one iff ``correct``)."""
    query = base_query(item)
    k = len(item.options)
    said = _answered(item, correct)
    scores = [-2.0 - 0.25 * ((i + len(item.question)) % 7) for i in range(k)]
    scores[said] = -0.5
    return {
        "example": query,
        "instruction": "",
        "full_prompt": query,
        "num_effective_few_shots": fewshot,
        "num_asked_few_shots": fewshot,
        "predictions": [[s, 1.0 if i == said else 0.0] for i, s in enumerate(scores)],
        "prediction_logits": [],
        "input_tokens": [[(ord(c) * 7) % 50000 for c in query[:8]] for _ in range(k)],
        "cont_tokens": [[(ord(LETTERS[i]) * 7) % 50000] for i in range(k)],
        "truncated": [0] * k,
        "padded": [0] * k,
        "gold": [],
        "pred_logits": [],
        "choices": [f" {LETTERS[i]}" for i in range(k)],
        "gold_index": [item.gold],
        "metrics": {"acc": 1.0 if correct else 0.0},
        "specifics": None,
    }


def detail_row(item: Item, correct: bool, *, style: str, fewshot: int) -> dict:
    """``asdict(Detail)`` of lighteval 0.10 for one generative letter question (``style`` base or
    chat), or one scored by log-likelihood (``style="loglik"``)."""
    if style == "loglik":
        return loglik_row(item, correct, fewshot=fewshot)
    query = base_query(item) if style == "base" else chat_query(item)
    full_prompt = query if style == "base" else chat_prompt(query)
    said = _answered(item, correct)
    letter = LETTERS[said]
    text = f" {letter}" if style == "base" else f"Let me think.\nAnswer: {letter}"
    choices = [LETTERS[i] for i in range(len(item.options))]
    return {
        "example": query,
        "instruction": "",
        "full_prompt": full_prompt,
        "num_effective_few_shots": fewshot,
        "num_asked_few_shots": fewshot,
        "predictions": [text],
        "prediction_logits": [],
        "input_tokens": [[(ord(c) * 7) % 50000 for c in full_prompt[:8]]],
        "cont_tokens": [[(ord(c) * 7) % 50000 for c in text[:4]]],
        "truncated": [0],
        "padded": [0],
        "gold": [LETTERS[item.gold]],
        "pred_logits": [],
        "choices": choices,
        "gold_index": [item.gold],
        "metrics": {"extractive_match": 1.0 if correct else 0.0},
        "specifics": {"extracted_predictions": [letter], "extracted_golds": [LETTERS[item.gold]]},
    }


def details_table(rows: list[dict], schema: pa.Schema = DETAILS_SCHEMA) -> pa.Table:
    """The rows as lighteval writes them (columns built one by one: fast for large files)."""
    return pa.table(
        {f.name: pa.array([r[f.name] for r in rows], f.type) for f in schema}, schema=schema
    )


CHARS_PER_TOKEN = 4
"""About what a Qwen or Llama tokenizer gives on English text."""

_WORDS = np.array(
    [
        "the",
        "so",
        "option",
        "answer",
        "because",
        "which",
        "means",
        "therefore",
        "first",
        "second",
        "we",
        "check",
        "each",
        "is",
        "not",
        "right",
        "wrong",
        "fact",
        "question",
        "consider",
        "let",
        "me",
        "think",
        "about",
        "this",
        "that",
        "value",
        "it",
        "and",
        "or",
        "if",
        "then",
        "step",
        "one",
        "two",
        "three",
        "compare",
        "with",
        "given",
        "eliminate",
    ]
)


def with_generations(table: pa.Table, tokens: int, rng: np.random.Generator) -> pa.Table:
    """A generative details table as a real chain-of-thought run fills it: each answer
    ``tokens`` long on average (half to one and a half times), its reasoning words put before
    the row's answer line, ``cont_tokens`` holding as many token ids, and ``input_tokens`` the
    prompt's (one id per ``CHARS_PER_TOKEN`` characters). The fixture's own rows hold a short
    answer and a few ids: enough for every reader's test, far lighter than the files the
    paper's runs wrote (up to 32,768 new tokens a question; ``bench/harness_import.py
    --answer-tokens``)."""
    n = table.num_rows
    counts = rng.integers(tokens // 2, tokens * 3 // 2 + 1, size=n)
    words = _WORDS[rng.integers(0, len(_WORDS), size=int(counts.sum()))]
    cuts = np.cumsum(counts)[:-1]
    reasoning = [" ".join(part) for part in np.split(words, cuts)]
    answers = [r[0] for r in table["predictions"].to_pylist()]
    texts = [f"{r}.\n{a}" for r, a in zip(reasoning, answers, strict=True)]
    prompt_chars = np.asarray([len(t) for t in table["full_prompt"].to_pylist()], np.int64)
    prompt_tokens = np.maximum(prompt_chars // CHARS_PER_TOKEN, 1)
    columns = {
        "predictions": one_item_lists(pa.array(texts, pa.string())),
        "cont_tokens": _token_lists(counts, rng),
        "input_tokens": _token_lists(prompt_tokens, rng),
    }
    for name, column in columns.items():
        table = table.set_column(table.schema.get_field_index(name), name, column)
    return table


def _token_lists(counts: np.ndarray, rng: np.random.Generator) -> pa.Array:
    """Per row one list of ``counts[i]`` token ids, as ``list<list<int64>>``."""
    ids = pa.array(rng.integers(0, 151_000, size=int(counts.sum()), dtype=np.int64))
    inner = pa.ListArray.from_arrays(pa.array(np.r_[0, np.cumsum(counts)].astype(np.int32)), ids)
    return pa.ListArray.from_arrays(pa.array(np.arange(len(counts) + 1, dtype=np.int32)), inner)


def write_run(
    out: Path,
    model: str,
    timestamp: str,
    tasks: dict[str, tuple[Sequence[Item], Sequence[bool]]],
    *,
    style: str,
    seed: int | None,
    shuffle_seed: int = 0,
    fewshot: int = 3,
    answer_tokens: int = 0,
) -> Path:
    """Write one lighteval run: details per task plus the results file (``seed=None``: no seed).

    ``model`` is ``org/name``. ``answer_tokens``: generative answers as long as a chain of
    thought (``with_generations``); 0 keeps the short ones. Returns the run's details folder.
    """
    folder = out / "details" / model / timestamp
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(shuffle_seed)
    for task, (items, correct) in tasks.items():
        rows = [
            detail_row(item, bool(c), style=style, fewshot=fewshot)
            for item, c in zip(items, correct, strict=True)
        ]
        rng.shuffle(rows)
        schema = LOGLIK_SCHEMA if style == "loglik" else DETAILS_SCHEMA
        table = details_table(rows, schema)
        if answer_tokens and style != "loglik":
            table = with_generations(
                table, answer_tokens, np.random.default_rng(rng.getrandbits(64))
            )
        pq.write_table(table, folder / f"details_{task}_{timestamp}.parquet")
    results = out / "results" / model
    results.mkdir(parents=True, exist_ok=True)
    generation = {"temperature": 0.6, "top_p": 0.95, "max_new_tokens": 32768}
    if seed is not None:
        generation["seed"] = seed
    document = {
        "config_general": {
            "lighteval_sha": "0.10.0",
            "num_fewshot_seeds": 1,
            "model_name": model,
            "generation_parameters": generation,
        },
        "results": {task: {"extractive_match": 0.5} for task in tasks},
    }
    (results / f"results_{timestamp}.json").write_text(json.dumps(document), encoding="utf-8")
    return folder


def make_items(task: str, n: int, *, options: int = 4) -> list[Item]:
    """``n`` distinct questions for a task (deterministic)."""
    rng = random.Random(task)
    return [
        Item(
            question=f"In {task.split(':')[-1].split('|')[0]} item {i}, which option is right "
            f"about fact {rng.randrange(10**9)}?",
            options=tuple(f"option {i}-{k} {rng.randrange(1000)}" for k in range(options)),
            gold=rng.randrange(options),
        )
        for i in range(n)
    ]
