"""Prompts: the paper's zero-shot chain of thought for chat models, few-shot prompts for base
models, and the choice log-likelihood formulation. Pure module: no I/O, no engine imports.

Chat models (``mode="chat"``) get one user message, rendered by the caller through the engine's
chat template (``Prompt.render(engine.apply_chat_template)``):

* multiple choice: the zero-shot chain-of-thought prompt of simple-evals / lighteval's GPQA task,
  with the letter list adapted to the k options shown (``ABCD`` for 4, ``AB`` for 2, ``A`` .. ``R``
  for 18)::

      Answer the following multiple choice question. The last line of your response should be of
      the following format: 'Answer: $LETTER' (without quotes) where LETTER is one of ABCD. Think
      step by step before answering.

      {question}

      A) {option}
      B) {option}
      ...

* generative (numeric) items: the same shape ending in ``'Answer: $NUMBER'``.

A passage (``item.context``: MuSR narrative, MCTest story, SocialIQa context) comes before the
question, separated by a blank line.

Base models (``mode="base"``) get plain text: answer-only few-shot blocks, MMLU style::

    The following are multiple choice questions (with answers) about anatomy.

    Question: {shot question}
    A. {option}
    B. {option}
    Answer: B

    Question: {question}
    A. {option}
    B. {option}
    Answer:

The shots come from the benchmark's own items, never the item itself (``select_shots``); the paper
gives base models 3 shots (2 for ARC, 1 for MuSR, 5 for GPQA: ``default_num_shots``). The paper's
base-model shots for most tasks carried hand-written reasoning traces that are not published; ours
are answer-only for every task (the paper's MMLU setting). Generation stops at a blank line or the
next ``Question:``.

Choice log-likelihood (``choice_continuations``), for scoring multiple choice without generation:

* ``style="letters"`` (default): context = the base prompt above (shots included), ending in
  ``Answer:``; continuations = ``" A"``, ``" B"``, ... one per option shown. The same options and
  letters as the generative evaluation, so k is the same and the two eval modes are comparable.
* ``style="texts"`` (cloze): context = ``Question: {question}\\nAnswer:`` without the option list;
  continuations = ``" " + option text``. Longer options get lower log-likelihoods; the caller may
  want to normalize by length.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from forgetmap.worker.benchmarks.items import Item

__all__ = [
    "BASE_STOP",
    "CHAT_MC_TEMPLATE",
    "CHAT_NUMERIC_TEMPLATE",
    "Prompt",
    "build_prompt",
    "choice_continuations",
    "default_num_shots",
    "select_shots",
]

CHAT_MC_TEMPLATE = (
    "Answer the following multiple choice question. The last line of your response should be of "
    "the following format: 'Answer: $LETTER' (without quotes) where LETTER is one of {letters}. "
    "Think step by step before answering.\n\n{question}\n\n{options}"
)
"""Zero-shot chain of thought for multiple choice; ``{options}`` = ``A) ...`` lines."""

CHAT_NUMERIC_TEMPLATE = (
    "Solve the following problem. The last line of your response should be of the following "
    "format: 'Answer: $NUMBER' (without quotes) where NUMBER is the final answer. "
    "Think step by step before answering.\n\n{question}"
)
"""Zero-shot chain of thought for generative (numeric) items."""

BASE_STOP: tuple[str, ...] = ("\n\n", "\nQuestion:")
"""Stop strings for base-model few-shot generation: the answer block ends at a blank line."""

Mode = Literal["chat", "base"]


@dataclass(frozen=True)
class Prompt:
    """A prompt ready for an engine.

    Exactly one of ``messages`` (chat: render with the model's chat template) and ``text`` (base:
    feed as is) is set. ``letters`` are the option letters shown (empty for a generative item):
    pass them to the grader. ``stop``: stop strings for generation.
    """

    mode: Mode
    messages: tuple[Mapping[str, str], ...] | None
    text: str | None
    letters: tuple[str, ...]
    stop: tuple[str, ...] = ()

    def render(self, apply_chat_template: Callable[[Sequence[Mapping[str, str]]], str]) -> str:
        """The prompt string: ``text``, or ``messages`` through ``apply_chat_template``
        (``engine.apply_chat_template``)."""
        if self.messages is not None:
            return apply_chat_template(list(self.messages))
        assert self.text is not None
        return self.text


def _body(item: Item) -> str:
    """Question text with its passage, if any."""
    if item.context and item.context.strip():
        return f"{item.context.strip()}\n\n{item.question.strip()}"
    return item.question.strip()


def _chat_text(item: Item) -> str:
    if item.choices is None:
        return CHAT_NUMERIC_TEMPLATE.format(question=_body(item))
    options = "\n".join(f"{x}) {c}" for x, c in zip(item.letters, item.choices, strict=True))
    return CHAT_MC_TEMPLATE.format(
        letters="".join(item.letters), question=_body(item), options=options
    )


def _header(item: Item) -> str:
    if item.choices is None:
        return ""
    subject = item.metadata.get("subject")
    if not subject and item.benchmark.startswith("mmlu:"):
        subject = item.benchmark.partition(":")[2]
    if subject:
        return (
            "The following are multiple choice questions (with answers) about "
            f"{str(subject).replace('_', ' ')}.\n\n"
        )
    return "The following are multiple choice questions (with answers).\n\n"


def _block(item: Item, answer: str | None) -> str:
    """``[passage\\n\\n]Question: ...\\nA. ...\\nAnswer:[ X]``."""
    parts = []
    if item.context and item.context.strip():
        parts.append(f"{item.context.strip()}\n\n")
    parts.append(f"Question: {item.question.strip()}\n")
    if item.choices is not None:
        parts.extend(f"{x}. {c}\n" for x, c in zip(item.letters, item.choices, strict=True))
    parts.append("Answer:" if answer is None else f"Answer: {answer}")
    return "".join(parts)


def _check_shots(item: Item, shots: Sequence[Item]) -> None:
    for shot in shots:
        if shot.benchmark == item.benchmark and shot.sample_id == item.sample_id:
            raise ValueError(f"item {item.sample_id!r} cannot be its own few-shot example")


def _base_text(item: Item, shots: Sequence[Item]) -> str:
    _check_shots(item, shots)
    blocks = [_block(s, s.gold) for s in shots]
    blocks.append(_block(item, None))
    return _header(item) + "\n\n".join(blocks)


def build_prompt(
    item: Item,
    *,
    mode: Mode = "chat",
    shots: Sequence[Item] = (),
    system: str | None = None,
) -> Prompt:
    """The prompt for one item.

    ``mode="chat"``: zero-shot chain of thought as one user message (after an optional
    ``system`` message); ``shots`` must be empty. ``mode="base"``: few-shot plain text with
    ``shots`` (from ``select_shots``; never the item itself).
    """
    if mode == "chat":
        if shots:
            raise ValueError("chat prompts are zero-shot: pass no shots")
        messages: list[Mapping[str, str]] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": _chat_text(item)})
        return Prompt("chat", tuple(messages), None, item.letters)
    if mode == "base":
        if system:
            raise ValueError("base prompts have no system message")
        return Prompt("base", None, _base_text(item, shots), item.letters, BASE_STOP)
    raise ValueError(f"mode must be 'chat' or 'base', got {mode!r}")


def default_num_shots(benchmark: str) -> int:
    """The paper's few-shot count for base models: 2 for ARC, 1 for MuSR, 5 for GPQA, else 3."""
    family = benchmark.partition(":")[0]
    return {"arc": 2, "musr": 1, "gpqa": 5}.get(family, 3)


def select_shots(item: Item, pool: Sequence[Item], n: int, *, seed: int = 0) -> list[Item]:
    """``n`` few-shot examples for ``item`` from ``pool`` (the benchmark's own items).

    Deterministic and independent of the pool's order: the pool is ranked by SHA-256 of
    ``"{seed}\\0{benchmark}\\0{sample_id}"`` and the first ``n`` items other than ``item`` itself
    are taken, so almost every item of a benchmark shares the same shots (good for prefix caching)
    and the shot items themselves get the next one instead. Fewer than ``n`` if the pool is small.
    """
    if n < 0:
        raise ValueError(f"number of shots must be >= 0, got {n}")
    if n == 0:
        return []

    def rank(candidate: Item) -> bytes:
        key = f"{seed}\0{candidate.benchmark}\0{candidate.sample_id}"
        return hashlib.sha256(key.encode()).digest()

    seen: set[tuple[str, str]] = set()
    candidates = []
    for c in sorted(pool, key=rank):
        key = (c.benchmark, c.sample_id)
        if key in seen or (c.benchmark == item.benchmark and c.sample_id == item.sample_id):
            continue
        seen.add(key)
        candidates.append(c)
        if len(candidates) == n:
            break
    return candidates


def choice_continuations(
    item: Item,
    *,
    shots: Sequence[Item] = (),
    style: Literal["letters", "texts"] = "letters",
) -> tuple[str, list[str]]:
    """``(context, continuations)`` for choice log-likelihood scoring (see the module docstring).

    The continuation at index i scores option i; an engine's ``choice_logprobs`` result goes
    straight to ``grading.grade_choice_logprobs``.
    """
    if item.choices is None:
        raise ValueError("a generative item has no choices to score")
    if style == "letters":
        return _base_text(item, shots), [f" {x}" for x in item.letters]
    if style == "texts":
        _check_shots(item, shots)

        def cloze(it: Item, answer: str | None) -> str:
            prefix = f"{it.context.strip()}\n\n" if it.context and it.context.strip() else ""
            tail = "Answer:" if answer is None else f"Answer: {answer}"
            return f"{prefix}Question: {it.question.strip()}\n{tail}"

        blocks = [
            cloze(
                s, s.gold if s.choices is None or s.gold_index is None else s.choices[s.gold_index]
            )
            for s in shots
        ]
        blocks.append(cloze(item, None))
        return "\n\n".join(blocks), [f" {c.strip()}" for c in item.choices]
    raise ValueError(f"style must be 'letters' or 'texts', got {style!r}")
