"""One logged inspect_ai sample as a normalized row, its scorer's value read as ``correct``.

A sample is one (sample, epoch) of the run: ``sample.id`` (int or text) is the sample id,
``sample.epoch`` (from 1) gives the seed, ``epoch - 1``. ``sample.scores`` holds one ``Score`` per
scorer of the task; the value of one of them is ``correct`` (``ScorerChoice``):

- ``C`` (correct) is 1; ``I`` (incorrect) and ``N`` (no answer) are 0, as inspect_ai's
  ``accuracy`` counts them: a model that stopped answering what it answered before has lost it;
- ``P`` (partial credit) is refused: a forgetting map counts 1->0 and 0->1 flips, and half a
  point is neither; choose a binary scorer;
- true/false, and the numbers 0 and 1 (``common.parse_binary``); anything else is refused;
- a scorer whose value is a dict (several values per sample) is read at one key:
  ``--scorer NAME:KEY``.

The rest of the row: the prediction is ``score.answer``, the answer the scorer extracted, left
out where it is a long copy of the completion (``match()`` and ``includes()`` give the whole
completion as their answer: the response holds it already, and long text in any column but the
response stays in the database's memory until the import commits, while long responses go to
the answer file, ``forgetmap.db.texts``); the gold is ``sample.target``; the options are
``sample.choices`` (their count is k; none: generative, or the taxonomy's k for a multiple-choice
benchmark whose options are in the prompt, as the lm-eval reader does); the prompt is
``sample.input`` (its last user message the question); the response is
``sample.output.completion``, the whole answer, kept for the drill-down; its status
(``answer_status``) says whether it stopped at the token limit or gave the scorer no answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from forgetmap.core.answer_status import ANSWERED, NO_ANSWER, TRUNCATED
from forgetmap.core.taxonomy import usual_num_choices
from forgetmap.db.texts import LONG_TEXT_BYTES
from forgetmap.importers.common import InputError, choices_json, parse_binary

ROW_COLUMNS = (
    "sample_id",
    "seed",
    "correct",
    "num_choices",
    "prompt",
    "question",
    "response",
    "prediction",
    "gold",
    "choices",
    "prompt_tokens",
    "completion_tokens",
    "answer_status",
)
"""The normalized columns a sample gives (``common.NORMALIZED_SCHEMA``); the reader adds the
model and the benchmark."""
LETTERS = {"C": True, "I": False, "N": False}
NOANSWER = "N"
"""inspect_ai's letter values (``inspect_ai.scorer.CORRECT`` ...) that are a plain 0 or 1."""
PARTIAL = "P"
CUT_OFF = frozenset({"max_tokens", "model_length"})
"""Stop reasons of an answer cut off before its end (``ModelOutput.stop_reason``)."""
NO_ANSWER_REASONS = frozenset({"no_response", "invalid_response_format"})
"""``Score.reason`` of inspect_ai's scorers (recent releases) where they found no answer to grade:
an empty completion, or one without the answer format asked for."""


class ScorerChoice:
    """Which scorer of one log gives ``correct``: settled at its first scored sample, from the
    scorers it has and ``--scorer`` (``NAME`` or ``NAME:KEY``), then required of every sample.

    A log scored by several scorers needs ``--scorer``; a log scored by one scorer takes it, also
    when ``--scorer`` names another (a folder of logs of several tasks: ``notice`` tells it)."""

    def __init__(self, option: str | None, log: str, notice: Callable[[str], None] | None):
        self.option, self.log, self.notice = option, log, notice
        self.name: str | None = None
        self.key: str | None = None

    def _settle(self, names: list[str]) -> None:
        listed = ", ".join(names)
        option = self.option
        if option is None:
            if len(names) > 1:
                raise InputError(
                    f"{self.log}: {len(names)} scorers ({listed}); choose one with --scorer NAME"
                )
            self.name = names[0]
            return
        name, sep, key = option.rpartition(":")
        if option in names:
            self.name = option
        elif sep and name in names:
            self.name, self.key = name, key
        elif len(names) == 1:
            self.name = names[0]
            if self.notice is not None:
                self.notice(
                    f"{self.log}: scored by {names[0]} only; took it (--scorer {option} "
                    "names none of its scorers)"
                )
        else:
            raise InputError(
                f"{self.log}: no scorer {option!r}; its scorers: {listed}; choose one with "
                "--scorer NAME (or NAME:KEY for a scorer with several values)"
            )

    def correct(self, scores: dict[str, Any], where: str) -> tuple[bool, Any]:
        """(correct, the chosen ``Score``) of one sample's scores."""
        if self.name is None:
            self._settle(list(scores))
        name = self.name
        assert name is not None  # _settle chose one or raised
        score = scores.get(name)
        if score is None:
            raise InputError(
                f"{where}: no score from scorer {name!r} (its scores: {', '.join(scores)})"
            )
        value = score.value
        if self.key is not None:
            if not isinstance(value, dict) or self.key not in value:
                keys = ", ".join(value) if isinstance(value, dict) else "none"
                raise InputError(
                    f"{where}: scorer {name!r} has no value {self.key!r} (its keys: {keys})"
                )
            value = value[self.key]
        elif isinstance(value, dict):
            raise InputError(
                f"{where}: scorer {name!r} gives several values ({', '.join(value)}); choose "
                f"one with --scorer {name}:KEY"
            )
        return _binary(value, name, where), score


def _binary(value: Any, scorer: str, where: str) -> bool:
    if isinstance(value, str) and value in LETTERS:
        return LETTERS[value]
    if value == PARTIAL:
        raise InputError(
            f"{where}: scorer {scorer!r} gave partial credit (P); forgetmap counts per-sample "
            "0/1 flips, so choose a binary scorer with --scorer NAME"
        )
    try:
        return parse_binary(value, where=where)
    except InputError:
        raise InputError(
            f"{where}: scorer {scorer!r} has the non-binary value {value!r}; forgetmap counts "
            "per-sample 0/1 flips, choose a binary scorer with --scorer NAME"
        ) from None


def _prompt(value: Any) -> tuple[str, str]:
    """(prompt, question) of a sample's input: a string is both; of a list of chat messages the
    prompt is every message (each after its role when there are several), the question the
    last user message."""
    if isinstance(value, str):
        return value, value
    texts = [message.text for message in value]
    if len(texts) == 1:
        return texts[0], texts[0]
    prompt = "\n\n".join(f"{m.role}: {text}" for m, text in zip(value, texts, strict=True))
    users = [text for m, text in zip(value, texts, strict=True) if m.role == "user"]
    return prompt, (users or texts or [""])[-1]


def _gold(target: str | list[str]) -> str:
    if isinstance(target, str):
        return target
    return target[0] if len(target) == 1 else json.dumps(target, ensure_ascii=False)


def _prediction(answer: str | None, completion: str) -> str | None:
    """The scorer's answer, or None where it is a long copy of the completion (up to case and
    surrounding space; see the module docstring)."""
    if answer is None or len(answer) < LONG_TEXT_BYTES:
        return answer
    return None if answer.strip().casefold() == completion.strip().casefold() else answer


def answer_status(output: Any, score: Any, correct: bool) -> str | None:
    """The status of a sample's answer (``forgetmap.core.answer_status``): none without a model
    output (no choices); ``truncated`` where it stopped at a token limit (``CUT_OFF``); else
    ``no_answer`` where the scorer found no answer in a wrong one: its value ``N``
    (``NOANSWER``), its reason (``NO_ANSWER_REASONS``), or no answer (None or blank, as
    ``choice()`` and ``pattern()`` leave it) beside a completion with text; else ``answered``
    (a correct answer always is: its scorer found it)."""
    if not output.choices:
        return None
    if output.stop_reason in CUT_OFF:
        return TRUNCATED
    if correct:
        return ANSWERED
    answer = score.answer
    if (
        score.value == NOANSWER
        or getattr(score, "reason", None) in NO_ANSWER_REASONS
        or ((answer is None or not str(answer).strip()) and (output.completion or "").strip())
    ):
        return NO_ANSWER
    return ANSWERED


def sample_row(sample: Any, benchmark: str, scorer: ScorerChoice, where: str) -> dict[str, Any]:
    """``ROW_COLUMNS`` of one scored sample (an ``EvalSample``)."""
    correct, score = scorer.correct(sample.scores, where)
    answer = score.answer
    prompt, question = _prompt(sample.input)
    output = sample.output
    usage = output.usage
    choices = sample.choices
    return {
        "sample_id": str(sample.id),
        "seed": sample.epoch - 1,
        "correct": correct,
        "num_choices": len(choices) if choices else usual_num_choices(benchmark),
        "prompt": prompt,
        "question": question,
        "response": output.completion,
        "prediction": _prediction(answer, output.completion),
        "gold": _gold(sample.target),
        "choices": choices_json(choices) if choices else None,
        "prompt_tokens": usage.input_tokens if usage is not None else None,
        "completion_tokens": usage.output_tokens if usage is not None else None,
        "answer_status": answer_status(output, score, correct),
    }
