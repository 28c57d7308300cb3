"""Grading: is a response (or a choice log-likelihood vector) correct for an item? Pure module.

* Multiple choice: ``extraction.extract_choice`` over the letters actually shown; correct when the
  extracted letter is a gold letter (one, or several for multiple-response items such as
  SaladBench mrq). No extractable letter = wrong.
* Generative with a numeric gold (the gold is a number and nothing else: ``42``, ``-3.5``,
  ``1,234``, ``3/4``, ``$18``, ``25%``): ``extraction.grade_number`` (final number, normalized).
* Generative with a non-numeric gold: the text after the last ``Answer:`` (else the last non-empty
  line), compared case-insensitively with surrounding whitespace, quotes, ``**`` and a final period
  removed.
* ``grade_choice_logprobs``: the argmax option (the first on a tie) against the gold letters.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from forgetmap.worker.benchmarks.extraction import extract_choice, grade_number
from forgetmap.worker.benchmarks.items import Item

__all__ = ["Graded", "grade", "grade_choice_logprobs"]


@dataclass(frozen=True)
class Graded:
    """The verdict on one response.

    ``prediction``: the extracted letter or normalized answer (``None`` when nothing was found).
    ``span``: ``(start, end)`` of the prediction in the response, for highlighting (``None`` when
    not applicable). ``level``: the extraction priority level that matched (1 = most explicit).
    """

    correct: bool
    prediction: str | None
    span: tuple[int, int] | None
    level: int | None = None


_ANSWER_LINE = re.compile(r"(?im)^[^\S\n]*\**answer\**[^\S\n]*:\**[^\S\n]*(?P<text>[^\n]*)$")
_STRIP = " \t\r\n\"'`*"


def _is_number(text: str) -> bool:
    cleaned = text.strip().replace(",", "").removeprefix("$").removesuffix("%").strip()
    try:
        Fraction(cleaned)
    except (ValueError, ZeroDivisionError):
        return False
    return True


def _normalize_text(text: str) -> str:
    text = text.strip(_STRIP)
    text = text.rstrip(".").strip(_STRIP)
    return " ".join(text.split()).casefold()


def _grade_text(response: str, gold: str) -> Graded:
    matches = list(_ANSWER_LINE.finditer(response))
    if matches:
        m = matches[-1]
        start, end = m.span("text")
    else:
        lines = [m for m in re.finditer(r"[^\n]+", response) if m.group().strip()]
        if not lines:
            return Graded(False, None, None)
        start, end = lines[-1].span()
    raw = response[start:end]
    prediction = _normalize_text(raw)
    if not prediction:
        return Graded(False, None, None)
    # span of the stripped answer inside the response
    lead = len(raw) - len(raw.lstrip(_STRIP))
    trail = len(raw) - len(raw.rstrip(_STRIP + "."))
    span = (start + lead, max(start + lead, end - trail))
    return Graded(prediction == _normalize_text(gold), prediction, span)


def grade(item: Item, response: str) -> Graded:
    """Grade one generated response for ``item``."""
    if not isinstance(response, str):
        raise TypeError(f"response must be a string, got {type(response).__name__}")
    if item.choices is not None:
        extraction = extract_choice(response, item.letters)
        if extraction is None:
            return Graded(False, None, None)
        golds = {x.upper() for x in item.gold_letters}
        return Graded(
            extraction.answer.upper() in golds, extraction.answer, extraction.span, extraction.level
        )
    if _is_number(item.gold):
        correct, extraction = grade_number(response, item.gold)
        if extraction is None:
            return Graded(False, None, None)
        return Graded(correct, extraction.answer, extraction.span, extraction.level)
    return _grade_text(response, item.gold)


def grade_choice_logprobs(item: Item, logprobs: Sequence[float]) -> Graded:
    """Grade a choice log-likelihood vector (one value per option shown): argmax vs gold."""
    if item.choices is None:
        raise ValueError("a generative item cannot be graded by choice log-likelihoods")
    values = [float(x) for x in logprobs]
    if len(values) != len(item.choices):
        raise ValueError(f"expected {len(item.choices)} log-likelihoods, got {len(values)}")
    if any(math.isnan(v) for v in values):
        raise ValueError(f"log-likelihoods contain NaN: {values}")
    best = max(range(len(values)), key=lambda i: (values[i], -i))
    letter = item.letters[best]
    return Graded(letter in item.gold_letters, letter, None)
