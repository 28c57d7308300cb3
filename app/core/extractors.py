"""Extractors: a stored answer read again, by rules of our choosing instead of the harness's.

Harness extractors differ: one model's GSM8K score moves from 80% to 2% with the extractor alone
(issue 51). ``forgetmap rescore`` (``forgetmap.services.rescore``) runs one of these over the
stored responses and keeps what it finds as a named score set beside the harness's own scores.
Pure: standard library only (``math`` loads ``math_verify`` when first used).

Every extractor answers an ``Extracted`` per response: the prediction (an option's letter, the
parsed math answer, a user extractor's text; None when nothing was found), whether it is right,
its status (``answered`` or ``no_answer``, forgetmap.core.answer_status) and the rule that fired.
It answers None when the row cannot be graded (no gold it can read, or a row of a kind it does
not score).

``lenient`` (multiple choice). The response is prepared first: full-width characters as ASCII,
the text after the last closing reasoning tag (``</think>``, ``</thinking>``, ``</reasoning>``)
when some follows it, and cut at a line that starts a new question block (``Question:``, ``Q:``,
``Problem:``) after some content (a base model going on with the next few-shot question). Then
these rules are tried in order; the first that names an option wins:

1. ``statement``: the last "answer is (X)" style statement: ``answer`` followed by ``is``,
   ``would be``, ``should be``, ``:`` or ``=`` (``The answer is (C)``, ``**Answer: (C)**``,
   ``Final answer: B``), ``option`` / ``choice`` followed by ``is`` (``The correct option is B.``),
   or ``\\boxed{B}``.
2. ``bare_line``: the last non-empty line is an option alone: ``B``, ``(B)``, ``B.``, ``B)``,
   ``**B**``, ``[B]``.
3. ``letter``: the last standalone option letter (capital, word boundaries on both sides: not
   ``I'm``, ``U.S.``, ``B-cell``).
4. ``option_text``: the text of exactly one option occurs in the answer (case-insensitive, whole
   words, an occurrence inside a longer option's occurrence not counted); options of one
   character and numeric options are left to rules 3 and 5.
5. ``number``: the last number of the answer equals the value of exactly one option (an option
   whose text holds exactly one number: ``12``, ``$1,200``, ``3/4``, ``12 apples``).

What no rule counts: a bare ``A`` or ``I`` followed by a lowercase word (``A good approach``,
``I think``; ``A is ...`` still counts); a letter in a hedge between letters (``A or B``); a
letter said to be wrong (``B is incorrect``, ``B is not``); and, in rules 3 to 5, the lines of
an option listing (two or more lines that start with different labels followed by text,
``A. 12 - too small`` ... ``D. 21``), so that ``A. 12 ... D. 21`` then ``So B`` is ``B``.
Lowercase letters count only in rules 1 and 2, wrapped (``(c)``, ``**c**``) or ending the line.

``math`` (generative): ``math_verify.parse`` on the response and on the gold (the text after
``####`` when the gold is a GSM8K solution), ``math_verify.verify`` between them.

User extractors: the entry point group ``forgetmap.extractors``; each names a function
``(response, choices, gold) -> str | None`` (``choices``: the option texts or None). Its text is
graded here: for multiple choice the option it names (a letter, ``(B)``, an index, or an
option's text) against the gold option; otherwise equal to the gold up to case and spaces, or as
numbers. A function may also answer an ``Extracted`` of its own.
"""

from __future__ import annotations

import json
import re
import string
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from importlib import metadata
from typing import Any

from forgetmap.core.answer_status import ANSWERED, NO_ANSWER
from forgetmap.core.errors import InputError

ENTRY_POINT_GROUP = "forgetmap.extractors"
LENIENT = "lenient"
MATH = "math"
BUILT_IN = (LENIENT, MATH)
RULES = ("statement", "bare_line", "letter", "option_text", "number")
"""The rules of ``lenient``, in the order they are tried."""
MATH_RULE = "math_verify"
LABELS = string.ascii_uppercase


@dataclass(frozen=True)
class Extracted:
    """What an extractor made of one response."""

    prediction: str | None
    correct: bool
    status: str  # ANSWERED or NO_ANSWER (forgetmap.core.answer_status)
    rule: str | None = None


@dataclass(frozen=True)
class Choice:
    """An option found in a response: its index (0 = A) and the rule that found it."""

    index: int
    rule: str


@dataclass(frozen=True)
class Extractor:
    """A named extractor. ``multiple_choice`` / ``generative``: the kinds of rows it scores;
    ``score(response, choices, gold, num_choices)`` answers None for a row it cannot grade."""

    name: str
    multiple_choice: bool
    generative: bool
    score: Callable[[str, list[str] | None, str | None, int | None], Extracted | None]

    def scores(self, num_choices: int | None) -> bool:
        return self.multiple_choice if num_choices else self.generative


# ---------------------------------------------------------------------------------------------
# Preparing the text

_CHAR_MAP: dict[int, int | str] = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)}
_CHAR_MAP.update({0x3000: " ", 0x3001: ",", 0x3002: ".", 0x2212: "-", 0x00A0: " "})
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_THINK_TAG = re.compile(r"</?(?:think|thinking|reasoning)>", re.IGNORECASE)
_NEXT_BLOCK = re.compile(
    r"\n[^\S\n]*(?:\*\*|#{1,6}[^\S\n]*)?(?:Question|QUESTION|Q|Problem|PROBLEM)(?:[^\S\n]*\d+)?"
    r"[^\S\n]*(?:\*\*)?[^\S\n]*:"
)


def prepare(response: str) -> str:
    """The part of a response the rules read (see the module docstring)."""
    text = response.translate(_CHAR_MAP)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes and text[closes[-1].end() :].strip():
        text = text[closes[-1].end() :]
    else:
        text = _THINK_TAG.sub(" ", text)
    content = len(text) - len(text.lstrip())
    for m in _NEXT_BLOCK.finditer(text):
        if m.start() > content:
            return text[: m.start()]
    return text


# ---------------------------------------------------------------------------------------------
# Letters

_W = "0-9A-Za-z_"
_LEFT = rf"(?<![{_W}\\])(?<![{_W}]['’./-])"
_RIGHT = rf"(?![{_W}]|['’.\-/][{_W}])"
_WRAP_OPEN = r"[(\[*_`$\"'“‘]"
_WRAP_CLOSE = r"[)\]*_`$\"'”’]"
_TOKEN = (
    rf"{_LEFT}(?P<open>{_WRAP_OPEN}{{0,4}})(?P<letter>[A-Za-z])"
    rf"(?P<close>{_WRAP_CLOSE}{{0,4}}){_RIGHT}"
)
_GAP = r"[^\S\n]*+[*_]{0,4}[^\S\n]*+"
_STATEMENT = re.compile(
    r"(?:(?i:\b(?:final[^\S\n]+)?answers?\b)"
    rf"{_GAP}(?:(?i:is|would[^\S\n]+be|will[^\S\n]+be|should[^\S\n]+be|must[^\S\n]+be)\b{_GAP}:?|[:=])"
    r"|(?i:\b(?:option|choice)s?\b)"
    rf"{_GAP}(?i:is|would[^\S\n]+be|will[^\S\n]+be|should[^\S\n]+be|must[^\S\n]+be)\b:?)"
    r"[^\S\n]*+[*_]{0,4}[^\S\n]*+(?:\n\s{0,8})?(?:(?i:option|choice|letter)[^\S\n]+)?" + _TOKEN
)
_BOXED = re.compile(
    r"\\(?:boxed|fbox)[^\S\n]*+\{[^\S\n]*+(?:\\text(?:bf)?[^\S\n]*+\{[^\S\n]*+)?[(\[]?[^\S\n]*+"
    r"(?P<letter>[A-Za-z])[^\S\n]*+[)\]]?[^\S\n]*+\}"
)
_BARE_LINE = re.compile(
    r"[^\S\n]*+[*_`$]{0,4}[(\[]?[^\S\n]*+(?P<letter>[A-Za-z])[^\S\n]*+[)\]]?[.:]?[*_`$]{0,4}\.?[^\S\n]*+"
)
_ANY_LETTER = re.compile(_TOKEN)
_LISTING_LINE = re.compile(
    r"^[^\S\n]*(?:[-*•][^\S\n]+)?[*_]{0,2}[(\[]?(?P<letter>[A-Z])[)\].:][*_]{0,2}[^\S\n]+\S",
    re.MULTILINE,
)
_NEXT_WORD = re.compile(r"[^\S\n]+([a-z]+)")
_LETTER_VERBS = frozenset(
    "is was seems appears looks matches fits because since would could should must".split()
)
_HEDGE_AFTER = re.compile(r"[^\S\n]*[,/]?[^\S\n]*(?:or|and/or)[^\S\n]+[(\[*]{0,2}[A-Z]\b")
_HEDGE_BEFORE = re.compile(r"\b[A-Z][)\]*]{0,2}[^\S\n]*,?[^\S\n]+or[^\S\n]+[(\[*]{0,2}$")
_DENIED = re.compile(
    r"[^\S\n]+(?:is|are|was|seems)[^\S\n]+(?:not|wrong|incorrect|false|ruled out|eliminated)\b"
    r"|[^\S\n]+(?:isn't|can't|cannot)\b"
)
_END_OF_LINE = re.compile(r"[.!?;:,)\]*`'\"”’]*[^\S\n]*(?:\n|$)")


def _labels(num_choices: int | None, choices: Sequence[str] | None) -> str:
    k = num_choices or (len(choices) if choices else 0)
    return LABELS[:k] if 2 <= k <= len(LABELS) else ""


def _is_option_letter(text: str, m: re.Match[str], labels: str, *, lowercase: bool) -> bool:
    """Whether a letter token names an option (see the module docstring's exceptions)."""
    letter = m.group("letter")
    if letter.upper() not in labels:
        return False
    wrapped = "(" in m.group("open") or "[" in m.group("open") or "*" in m.group("open")
    if letter.islower():
        if not lowercase:
            return False
        if not wrapped and not _END_OF_LINE.match(text, m.end()):
            return False
    if letter in "AI" and not m.group("open") and not m.group("close"):
        word = _NEXT_WORD.match(text, m.end())
        if word and word.group(1) not in _LETTER_VERBS:
            return False  # the article or the pronoun
    start = m.start("letter")
    if _HEDGE_AFTER.match(text, m.end()) or _HEDGE_BEFORE.search(text[max(0, start - 24) : start]):
        return False
    return not _DENIED.match(text, m.end())


def _listing_spans(text: str, labels: str) -> list[tuple[int, int]]:
    """The lines of an option listing: lines starting with a label and more text, when two or
    more different labels start such lines."""
    lines = [m for m in _LISTING_LINE.finditer(text) if m.group("letter") in labels]
    if len({m.group("letter") for m in lines}) < 2:
        return []
    spans = []
    for m in lines:
        end = text.find("\n", m.start())
        spans.append((m.start(), len(text) if end < 0 else end))
    return spans


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    parts, prev = [], 0
    for start, end in spans:
        parts.append(text[prev:start])
        parts.append(" " * (end - start))
        prev = end
    parts.append(text[prev:])
    return "".join(parts)


def _statement(text: str, labels: str) -> int | None:
    found: list[tuple[int, int]] = []
    for m in _STATEMENT.finditer(text):
        if _is_option_letter(text, m, labels, lowercase=True):
            found.append((m.end("letter"), labels.index(m.group("letter").upper())))
    for m in _BOXED.finditer(text):
        if m.group("letter").upper() in labels:
            found.append((m.end("letter"), labels.index(m.group("letter").upper())))
    return max(found)[1] if found else None


def _bare_line(text: str, labels: str) -> int | None:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    m = _BARE_LINE.fullmatch(lines[-1])
    if m is None or m.group("letter").upper() not in labels:
        return None
    return labels.index(m.group("letter").upper())


def _last_letter(text: str, labels: str) -> int | None:
    for m in reversed(list(_ANY_LETTER.finditer(text))):
        if _is_option_letter(text, m, labels, lowercase=False):
            return labels.index(m.group("letter"))
    return None


# ---------------------------------------------------------------------------------------------
# Option texts and numbers

_SPACES = re.compile(r"\s+")
_NUMBER = re.compile(
    r"\\[dt]?frac\{(?P<fn>\d+(?:\.\d+)?)\}\{(?P<fd>\d+(?:\.\d+)?)\}"
    r"|(?:(?<![\w.])(?P<sign>-))?\$?(?<![\w.])"
    r"(?:(?P<sn>\d+)/(?P<sd>\d+)(?![\d/])"
    r"|(?P<th>\d{1,3}(?:,\d{3})+(?:\.\d+)?)(?!\d|,\d)|(?P<pl>\d+(?:\.\d+)?|\.\d+))(?![\d.]\d)",
    re.ASCII,
)


def _normal(text: str) -> str:
    return _SPACES.sub(" ", text).strip().rstrip(".").strip().casefold()


def _value(m: re.Match[str]) -> Fraction | None:
    g = m.groupdict()
    try:
        if g["fn"] is not None:
            return Fraction(g["fn"]) / Fraction(g["fd"])
        if g["sn"] is not None:
            value = Fraction(int(g["sn"]), int(g["sd"]))
        elif g["th"] is not None:
            value = Fraction(g["th"].replace(",", ""))
        else:
            value = Fraction(g["pl"])
    except (ValueError, ZeroDivisionError):
        return None
    return -value if g["sign"] else value


def number_value(text: str) -> Fraction | None:
    """The value of a text that holds exactly one number (``12``, ``$1,200``, ``3/4 cup``)."""
    found = list(_NUMBER.finditer(text.translate(_CHAR_MAP)))
    return _value(found[0]) if len(found) == 1 else None


def _option_text(text: str, choices: Sequence[str]) -> int | None:
    lowered = text.casefold()
    spans: dict[int, list[tuple[int, int]]] = {}
    for i, choice in enumerate(choices):
        norm = _normal(choice)
        if len(norm) < 2 or number_value(norm) is not None:
            continue
        words = r"\s+".join(re.escape(w) for w in norm.split(" "))
        pattern = re.compile(rf"(?<![{_W}]){words}(?![{_W}])", re.IGNORECASE)
        found = [m.span() for m in pattern.finditer(lowered)]
        if found:
            spans[i] = found
    counted = [
        i
        for i, own in spans.items()
        if any(
            not any(
                s <= a and b <= e and (s, e) != (a, b)
                for j, o in spans.items()
                if j != i
                for s, e in o
            )
            for a, b in own
        )
    ]
    return counted[0] if len(counted) == 1 else None


def _number(text: str, choices: Sequence[str]) -> int | None:
    numbers = list(_NUMBER.finditer(text))
    if not numbers:
        return None
    last = _value(numbers[-1])
    if last is None:
        return None
    hits = [i for i, c in enumerate(choices) if number_value(c) == last]
    return hits[0] if len(hits) == 1 else None


# ---------------------------------------------------------------------------------------------
# lenient


def lenient_choice(
    response: str, choices: Sequence[str] | None, num_choices: int | None = None
) -> Choice | None:
    """The option a response names by the ``lenient`` cascade (module docstring), or None."""
    labels = _labels(num_choices, choices)
    text = prepare(response)
    if labels:
        for rule, find in (("statement", _statement), ("bare_line", _bare_line)):
            index = find(text, labels)
            if index is not None:
                return Choice(index, rule)
    listed = _blank(text, _listing_spans(text, labels)) if labels else text
    if labels:
        index = _last_letter(listed, labels)
        if index is not None:
            return Choice(index, "letter")
    if choices:
        for rule, find_choice in (("option_text", _option_text), ("number", _number)):
            index = find_choice(listed, choices)
            if index is not None:
                return Choice(index, rule)
    return None


def gold_options(
    gold: str | None, choices: Sequence[str] | None, num_choices: int | None
) -> frozenset[int]:
    """The options a stored gold names: an option's text, a letter (``B``, ``(B)``), an index
    (``1``), or a JSON list of those (any of them is right); empty when it names none."""
    if gold is None or not gold.strip():
        return frozenset()
    text = gold.strip()
    if text.startswith("["):
        try:
            many = json.loads(text)
        except ValueError:
            many = None
        if isinstance(many, list):
            return frozenset(i for g in many for i in gold_options(str(g), choices, num_choices))
    return option_named(text, choices, num_choices)


def option_named(
    text: str, choices: Sequence[str] | None, num_choices: int | None
) -> frozenset[int]:
    """The options a short text names: the options whose text it is (case-insensitive), else
    the letter it is (``B``, ``(B)``, ``B.``), else the index it is (``1`` = B)."""
    norm = _normal(text)
    if choices:
        same = frozenset(i for i, c in enumerate(choices) if _normal(c) == norm)
        if same:
            return same
    labels = _labels(num_choices, choices)
    m = _BARE_LINE.fullmatch(text.strip())
    if m is not None and m.group("letter").upper() in labels:
        return frozenset({labels.index(m.group("letter").upper())})
    if norm.isdigit() and int(norm) < len(labels):
        return frozenset({int(norm)})
    return frozenset()


def score_lenient(
    response: str, choices: list[str] | None, gold: str | None, num_choices: int | None
) -> Extracted | None:
    golds = gold_options(gold, choices, num_choices)
    if not golds:
        return None
    found = lenient_choice(response, choices, num_choices)
    if found is None:
        return Extracted(None, False, NO_ANSWER, None)
    return Extracted(LABELS[found.index], found.index in golds, ANSWERED, found.rule)


# ---------------------------------------------------------------------------------------------
# math


@lru_cache(maxsize=1)
def _math_verify() -> Any:
    try:
        import math_verify
    except ImportError as exc:  # pragma: no cover - a dependency; absent only in a broken install
        raise InputError(
            "the math extractor needs the math-verify package: pip install math-verify"
        ) from exc
    return math_verify


MATH_TIMEOUT_SECONDS = 5
"""math_verify's own limit per parse and comparison; it uses SIGALRM, so only on the main thread
(a command the app runs for a client runs on another: there without a limit)."""


def _math_gold_texts(gold: str) -> list[str]:
    text = gold.strip()
    if text.startswith("["):
        try:
            many = json.loads(text)
        except ValueError:
            many = None
        if isinstance(many, list):
            return [t for g in many for t in _math_gold_texts(str(g))]
    if "####" in text:
        text = text.rsplit("####", 1)[1].strip()
    return [text] if text else []


def _parse(mv: Any, text: str, limit: int | None) -> list[Any]:
    try:
        return list(mv.parse(text, parsing_timeout=limit))
    except Exception:  # noqa: BLE001 - math_verify raises what sympy raises: nothing extracted
        return []


def score_math(
    response: str, choices: list[str] | None, gold: str | None, num_choices: int | None
) -> Extracted | None:
    del choices, num_choices  # graded against the gold alone
    if gold is None:
        return None
    mv = _math_verify()
    limit = MATH_TIMEOUT_SECONDS if threading.current_thread() is threading.main_thread() else None
    golds = [g for text in _math_gold_texts(gold) for g in _parse(mv, text, limit)]
    if not golds:
        return None
    parsed = _parse(mv, response, limit)
    if not parsed:
        return Extracted(None, False, NO_ANSWER, None)
    prediction = str(parsed[-1] if isinstance(parsed[-1], str) else parsed[0])
    try:
        correct = bool(mv.verify(golds, parsed, timeout_seconds=limit))
    except Exception:  # noqa: BLE001 - a comparison sympy cannot make is not a match
        correct = False
    return Extracted(prediction, correct, ANSWERED, MATH_RULE)


# ---------------------------------------------------------------------------------------------
# user extractors


def grade_text(
    prediction: str | None, choices: list[str] | None, gold: str | None, num_choices: int | None
) -> Extracted | None:
    """A user extractor's text graded against the gold (module docstring); None without one."""
    if num_choices:
        golds = gold_options(gold, choices, num_choices)
        if not golds:
            return None
        if prediction is None or not prediction.strip():
            return Extracted(None, False, NO_ANSWER, None)
        named = option_named(prediction, choices, num_choices)
        return Extracted(prediction, bool(named) and named <= golds, ANSWERED, None)
    if gold is None or not gold.strip():
        return None
    if prediction is None or not prediction.strip():
        return Extracted(None, False, NO_ANSWER, None)
    return Extracted(prediction, _texts_equal(prediction, gold), ANSWERED, None)


def _texts_equal(prediction: str, gold: str) -> bool:
    golds = _math_gold_texts(gold)
    if _normal(prediction) in {_normal(g) for g in golds}:
        return True
    value = number_value(prediction)
    return value is not None and any(number_value(g) == value for g in golds)


def _user_score(
    name: str, func: Callable[..., Any]
) -> Callable[[str, list[str] | None, str | None, int | None], Extracted | None]:
    def score(
        response: str, choices: list[str] | None, gold: str | None, num_choices: int | None
    ) -> Extracted | None:
        answer = func(response, choices, gold)
        if isinstance(answer, Extracted):
            return answer
        if answer is not None and not isinstance(answer, str):
            raise InputError(
                f"extractor {name} answered {type(answer).__name__}; it must answer a str or None"
            )
        graded = grade_text(answer, choices, gold, num_choices)
        if graded is not None and graded.status == ANSWERED:
            return Extracted(graded.prediction, graded.correct, graded.status, name)
        return graded

    return score


def entry_point_names() -> list[str]:
    return sorted({ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)})


def extractor(name: str) -> Extractor:
    """The extractor called ``name``: ``lenient``, ``math``, or an entry point of the group
    ``forgetmap.extractors``."""
    if name == LENIENT:
        return Extractor(LENIENT, True, False, score_lenient)
    if name == MATH:
        return Extractor(MATH, False, True, score_math)
    points = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not points:
        known = ", ".join([*BUILT_IN, *entry_point_names()])
        raise InputError(
            f"no extractor {name!r}: choose among {known} (or install a package with an entry "
            f"point in the group {ENTRY_POINT_GROUP})"
        )
    try:
        func = points[0].load()
    except Exception as exc:  # noqa: BLE001 - whatever the user's package raises on import
        raise InputError(f"extractor {name} ({points[0].value}) failed to load: {exc}") from exc
    if not callable(func):
        raise InputError(f"extractor {name} ({points[0].value}) is not a function")
    return Extractor(name, True, True, _user_score(name, func))


LOGLIKELIHOOD_START = re.compile(r"\s*\[\s*(?:[-+\d.]|-?Infinity|NaN|\])")


def is_loglikelihood(response: str) -> bool:
    """Whether a stored response is a log-likelihood choice's scores (a JSON list of numbers,
    ``forgetmap.importers.common.logprob_lists_json``): nothing to extract from."""
    if not LOGLIKELIHOOD_START.match(response):
        return False
    try:
        values = json.loads(response)
    except ValueError:
        return False
    return isinstance(values, list) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    )
