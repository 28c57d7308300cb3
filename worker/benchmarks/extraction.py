"""Answer extraction: find the letter (multiple choice) or the number (generative) in a response.

Pure module: no I/O, standard library only.

Multiple choice follows the priority order of lighteval's extractive match, file
``src/lighteval/metrics/utils/extractive_match_utils.py`` of huggingface/lighteval at commit
031e09ced1fc754ef4bee603fcbb04d290b30f7c (``lazy_indices_regex`` and ``extract_target_from_pred``;
the earlier 4d8975a20b6f2dca090061c0018fd1a528ba5185 lacks the ``(A)`` wrapping and the
start-of-line pattern). lighteval's regex priorities and the levels reported here:

====  ========  =============================================================================
lvl   lighteval pattern
====  ========  =============================================================================
1     0         ``final answer is X. I hope``
1     50        ``final answer ... is X`` (up to 100 characters between, one line)
2     100       ``answer:`` then X within 50 characters (one line)  -- plus ``\\boxed{X}`` (our
                addition: lighteval only looks for boxed answers in its LaTeX target)
3     150       ``answer`` then X within 50 characters, no colon (``The answer is (C).``)
3     --        ``option X`` / ``choice (x)`` (our addition, tried after the ``answer`` patterns)
4     200       X at the start of the response
4     210       X at the start of a line
5     250/300   X anywhere, as a standalone token (the rightmost)
====  ========  =============================================================================

Patterns are tried in that order, one priority group at a time. Within a group every match of
every pattern is collected and the rightmost wins: lighteval sorts the matches by
``(match.end(), -match.start())`` in reverse and takes the first, so the latest end wins and, on a
tie, the earliest start (the longest match). Matches come from ``finditer``, so they do not overlap
and a lazy ``answer.{0,50}?X`` stops at the *first* X after the anchor.

Where we differ from lighteval, and why:

* ``Answer: A or B`` gives ``A``, as in lighteval (the lazy gap stops at the first letter after the
  anchor). It is a hedge; we keep lighteval's choice so that numbers stay comparable with it.
* A letter token needs a word boundary on both sides (lighteval's last resort, priority 300,
  matches a capital letter anywhere, even inside words); ``I'm``, ``U.S.``, ``B-cell``, ``X/Y``
  do not count. Word characters here are Latin letters, digits and ``_``; CJK text right before a
  letter is a boundary (``答案是B``).
* After the letter, lighteval accepts only ``. , :``, a space or the end of the string; ``$``
  without MULTILINE means the end of the whole text, so ``Answer: B\\n...`` fails there. We accept
  any whitespace or closing punctuation (``)``, ``]``, ``**``, ``}``, ``;``, ``!``, ``?``, quotes).
* Wrappers around the letter: ``(B)``, ``[B]``, ``**B**``, ```B```, ``$B$``, ``\\text{(B)}``,
  ``\\boxed{B}``, full-width ``（Ｂ）``. lighteval only knows ``B`` and ``(B)`` (plus ``**``).
* ``Answer:`` may be followed by blank lines before the letter (``**Answer:**\\n\\n(B)``).
* Lowercase letters (lighteval matches letters case-sensitively): accepted when wrapped
  (``(c)``, ``**c**``, ``\\boxed{c}``), when they end the line (``answer: c``, ``answer: c.``) and,
  at the start of a line, as an enumerator (``c) ...``). Never in level 5 and never as a plain word
  inside a sentence (``the answer is a bit tricky`` is not ``a``).
* English ``A``/``I``: in levels 4 and 5 a bare ``A``/``I`` followed by a lowercase word is the
  article/pronoun (``A good approach``, ``I think``), except before ``is/was/seems/...``; in levels
  1-3 a bare ``I`` followed by ``think/believe/...`` is the pronoun. At the start of a line any bare
  letter followed by a lowercase word (``A is wrong, ...``) is a sentence subject, not an answer
  label, so level 4 skips it (lighteval would take it); level 5 still sees it.
* Option listings: chain of thought often walks through the options one per line (``A. 12 - too
  small`` ... ``D. 21 - too big``) and then concludes in prose (``So B.``). When line-start labels
  followed by more text name two or more different letters, level 4 ignores them (a label alone on
  its line still counts), so the conclusion is found at level 5 instead of the last listed option.
* Full-width characters (``Ａ``, ``（``, ``：``, ``。``) and the Unicode minus are mapped to ASCII
  first; the mapping keeps every character in place, so spans index the original response.

Text handling before the patterns run (ours; lighteval does these outside the metric, with stop
sequences and its ``remove_reasoning_tags`` option):

* Reasoning blocks ``<think>...</think>`` (also ``<thinking>``, ``<reasoning>``; a ``</think>`` with
  no opening tag means everything before it is reasoning; an unclosed ``<think>`` runs to the end)
  are blanked out. If nothing is found outside them, the text inside them is searched instead.
* Base models in few-shot prompts often go on with the next question. The text is cut at the first
  line that starts a new question block (``Question:``, ``Q:``, ``Problem:``, ``Question 3:``,
  ``The following are multiple choice questions``) after some other content, so the answer is
  taken from the first answer block, never from the hallucinated question that follows. A block
  header at the very start of the response (a chat model restating the question) is not a cut.

Numbers (``extract_number``), levels: 1 ``final answer ... is N``; 2 ``\\boxed{N}`` (after the last
``=`` inside the box); 3 ``#### N``; 4 ``answer`` with or without a colon, preferring the number
after the last ``=`` within 100 characters as lighteval's ``equals_re`` does; 5 the last number.
lighteval keeps ``answer:`` (100) and ``answer`` (200) apart; we merge them into one group (the
rightmost wins), because gsm8k-style outputs often say ``Answer: 16 - 3 - 4 = 9 ... The answer is
18`` and the later statement is the answer. A percent sign is ignored (``25%`` -> ``25``: gsm8k
golds are plain numbers), where lighteval divides by 100. Recognized numbers: ``1,234,567.89``
(comma thousands; ``1 234`` is two numbers), ``-3.5``, ``.5``, ``$18.00``/``€12``, ``3/4``,
``1 1/2``, ``\\frac{3}{4}``/``\\dfrac``; a ``-`` right after a word, digit or bracket is a minus,
not a sign (``3-4 hours`` -> ``4``); dotted versions (``1.2.3``) are not numbers. The answer string
is normalized: integers as integers, terminating fractions as decimals without trailing zeros, other
fractions as reduced ``p/q`` (``2/6`` -> ``1/3``); ``numbers_equal`` compares exactly, then with
``math.isclose(rel_tol)``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "Extraction",
    "extract_choice",
    "extract_number",
    "grade_choice",
    "grade_number",
    "normalize_number",
    "numbers_equal",
]


@dataclass(frozen=True)
class Extraction:
    """An extracted answer.

    ``answer``: the letter (as spelled in ``letters``) or the normalized number string.
    ``level``: the priority level that matched (1 = most explicit ... 5 = last resort).
    ``span``: ``(start, end)`` character offsets in the original response of the letter itself, or
    of the number (from its sign, if any, to its last digit or closing brace), for highlighting.
    """

    answer: str
    level: int
    span: tuple[int, int]


# ---------------------------------------------------------------------------------------------
# Text preparation (length-preserving, so that spans index the original response)

_CHAR_MAP: dict[int, int | str] = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)}
_CHAR_MAP.update({0x3000: " ", 0x3001: ",", 0x3002: ".", 0x2212: "-", 0x00A0: " "})

_TAG_NAMES = r"(?:think|thinking|reasoning)"
_THINK_OPEN = re.compile(rf"<{_TAG_NAMES}>", re.IGNORECASE)
_THINK_CLOSE = re.compile(rf"</{_TAG_NAMES}>", re.IGNORECASE)
_THINK_TAG = re.compile(rf"</?{_TAG_NAMES}>", re.IGNORECASE)

# A new question block, as in few-shot prompts ("Question: ...\nAnswer:").
_NEXT_BLOCK = re.compile(
    r"\n[^\S\n]*(?:\*\*|#{1,6}[^\S\n]*)?"
    r"(?:(?:Question|QUESTION|Q|Problem|PROBLEM)(?:[^\S\n]*\d+)?[^\S\n]*(?:\*\*)?[^\S\n]*:"
    r"|The following are multiple choice questions)"
)


def _think_regions(text: str) -> list[tuple[int, int]]:
    regions: list[tuple[int, int]] = []
    pos = 0
    first_open = _THINK_OPEN.search(text)
    first_close = _THINK_CLOSE.search(text)
    if first_close is not None and (first_open is None or first_close.start() < first_open.start()):
        # Chat templates that put "<think>" in the prompt: the output only has the closing tag.
        regions.append((0, first_close.end()))
        pos = first_close.end()
    while True:
        opening = _THINK_OPEN.search(text, pos)
        if opening is None:
            break
        closing = _THINK_CLOSE.search(text, opening.end())
        end = closing.end() if closing is not None else len(text)
        regions.append((opening.start(), end))
        pos = end
    return regions


def _cut_continuation(view: str) -> str:
    first_content = len(view) - len(view.lstrip())
    for m in _NEXT_BLOCK.finditer(view):
        if m.start() > first_content:
            return view[: m.start()]
    return view


def _views(response: str) -> Iterator[str]:
    """Versions of the response to search, in order: outside reasoning blocks, then inside them.

    Blanked parts are replaced by newlines, so every view is a prefix (cut at a hallucinated next
    question) of a string as long as the response and offsets carry over unchanged.
    """
    text = response.translate(_CHAR_MAP)
    regions = _think_regions(text)
    if not regions:
        yield _cut_continuation(text)
        return
    outside: list[str] = []
    inside: list[str] = []
    prev = 0
    for start, end in regions:
        outside.append(text[prev:start])
        outside.append("\n" * (end - start))
        inside.append("\n" * (start - prev))
        inside.append(_THINK_TAG.sub(lambda m: "\n" * len(m.group()), text[start:end]))
        prev = end
    outside.append(text[prev:])
    inside.append("\n" * (len(text) - prev))
    yield _cut_continuation("".join(outside))
    yield _cut_continuation("".join(inside))


def _rightmost(matches: Iterator[re.Match[str]]) -> list[re.Match[str]]:
    # lighteval: sorted(..., key=lambda x: (x.end, -x.start), reverse=True)
    return sorted(matches, key=lambda m: (m.end(), -m.start()), reverse=True)


# ---------------------------------------------------------------------------------------------
# Multiple choice

# Word characters for letter and number boundaries: ASCII and Latin letters, digits, underscore.
# Not CJK, so that "答案是B" and "答案是１２" still have a boundary before the answer.
_W = "0-9A-Za-z_\u00c0-\u024f"
_LEFT = rf"(?<![{_W}\\])(?<![{_W}]['’./-])"
_RIGHT = rf"(?![{_W}/]|['’.\-][{_W}])"
_OPEN = (
    r"(?:\\(?:boxed|fbox|text|textbf|textrm|mathrm|mathbf)[^\S\n]*\{|\\[(\[]|[*_$(\[{`\"'“‘«【<])"
)
_CLOSE = r"(?:\\[)\]]|[*_$)\]}`\"'”’»】>])"
_LOWER_OPEN = r"(?:\*\*|\\(?:boxed|fbox|text|textbf)[^\S\n]*\{|[`\"'“‘])"
_LOWER_CLOSE = r"(?:\*\*|\}|[`\"'”’])"
_END_OF_LINE = r"(?=[.!?;:,)\]*`'\"”’]*[^\S\n]*(?:\n|\Z))"

_PRONOUN_VERBS = (
    r"(?:think|believe|am|was|would|will|need|guess|feel|must|should|could|can|have|had|do|did|"
    r"see|know|choose|chose|pick|picked|select|selected|go|went|say|said|mean|recall|remember|"
    r"suspect|conclude|concluded|got|get|agree|disagree|consider|considered|hope|want|notice)\b"
)
_LETTER_VERBS = r"(?:is|was|seems|appears|looks|matches|fits|because|since)\b"


def _upper_token(letters: tuple[str, ...], mode: str) -> str:
    """Uppercase letter token; ``mode`` is "anchored", "line" or "any"."""
    alts = []
    for letter in letters:
        esc = re.escape(letter)
        if mode == "anchored":
            if letter == "I":
                esc += rf"(?![^\S\n]*,?[^\S\n]+{_PRONOUN_VERBS})"
        elif mode == "line":
            # a bare letter followed by a lowercase word is a sentence subject ("A is wrong")
            esc += r"(?![^\S\n]+[a-z])"
        elif letter in ("A", "I"):
            esc += rf"(?![^\S\n]+(?!{_LETTER_VERBS})[a-z])"
        alts.append(esc)
    return rf"{_LEFT}{_OPEN}{{0,4}}(?P<u>{'|'.join(alts)}){_CLOSE}{{0,4}}{_RIGHT}"


def _lower_tokens(lower: str, line_start: bool) -> list[str]:
    if not lower:
        return []
    cls = f"[{re.escape(lower)}]"
    tokens = [
        rf"{_LEFT}{_LOWER_OPEN}?[(\[](?P<l1>{cls})[)\]]{_LOWER_CLOSE}?{_RIGHT}",
        rf"{_LEFT}{_LOWER_OPEN}(?P<l2>{cls}){_LOWER_CLOSE}{_RIGHT}",
        rf"{_LEFT}(?P<l3>{cls}){_END_OF_LINE}",
    ]
    if line_start:
        tokens.append(rf"(?P<l4>{cls})(?=[.)][^\S\n])")
    return tokens


_LETTER_GROUPS = ("u", "l1", "l2", "l3", "l4", "b")


@lru_cache(maxsize=64)
def _choice_patterns(letters: tuple[str, ...]) -> list[tuple[int, list[re.Pattern[str]]]]:
    upper = tuple(x for x in letters if x == x.upper())
    lower = "".join(x.lower() for x in letters if x.lower() != x)
    anchored = (
        "(?:" + "|".join([_upper_token(upper, "anchored"), *_lower_tokens(lower, False)]) + ")"
    )
    line = "(?:" + "|".join([_upper_token(upper, "line"), *_lower_tokens(lower, True)]) + ")"
    anywhere = _upper_token(upper, "any")
    both = re.escape("".join(letters) + lower)

    groups: list[tuple[int, list[str]]] = [
        # lighteval 0 and 50
        (1, [rf"(?i:final answer is):?\s*{anchored}\.?\s?I hope"]),
        (1, [rf"(?i:final answer)[^\n]{{0,100}}?\s+(?i:is):?\s*{anchored}"]),
        # lighteval 100, plus \boxed{X}
        (
            2,
            [
                rf"(?i:\banswer)[*_]{{0,4}}[^\S\n]{{0,8}}:[*_]{{0,4}}[^\S\n]{{0,8}}(?:\n\s{{0,8}})?"
                rf"[^\n]{{0,50}}?{anchored}",
                r"\\(?:boxed|fbox)[^\S\n]*\{[^\S\n]*(?:\\(?:text|textbf|textrm|mathrm|mathbf)"
                rf"[^\S\n]*\{{[^\S\n]*)?[(\[]?[^\S\n]*(?P<b>[{both}])(?![{_W}'’])",
            ],
        ),
        # lighteval 150
        (3, [rf"(?i:\banswer)[^\n]{{0,50}}?{anchored}"]),
        (3, [rf"(?i:\b(?:option|choice)s?)[*_]*[^\S\n]*(?:(?i:is)[^\S\n]*)?:?[^\S\n]*{anchored}"]),
        # lighteval 200 and 210 (see _drop_option_listing)
        (4, [rf"\A\s*{line}"]),
        (4, [rf"(?<=\n)[^\S\n]*{line}"]),
        # lighteval 250 and 300
        (5, [anywhere]),
    ]
    return [(level, [re.compile(p) for p in pats]) for level, pats in groups]


def _letter_of(m: re.Match[str]) -> tuple[str, tuple[int, int]] | None:
    groups = m.groupdict()
    for name in _LETTER_GROUPS:
        value = groups.get(name)
        if value:
            return value, m.span(name)
    return None


_REST_OF_LINE = re.compile(r"[^\n]*")
_LABEL_PUNCT = " \t.:;,)]}*_`'\"”’"


def _is_enumerator(view: str, m: re.Match[str]) -> bool:
    """A line-start label followed by more text on its line (``B) Paris``), not a lone ``B``."""
    rest = _REST_OF_LINE.match(view, m.end())
    return rest is not None and bool(rest.group().strip(_LABEL_PUNCT))


def _drop_option_listing(view: str, matches: list[re.Match[str]]) -> list[re.Match[str]]:
    """Line-start labels of an option listing are not answers.

    Chain-of-thought often goes through the options one per line (``A) ... wrong``, ``B) ...``);
    the rightmost line-start label would then be the last option discussed. When line-start labels
    followed by text name two or more different letters, those matches are dropped and only labels
    that stand alone on their line stay. (Ours; lighteval's suffix rule happens to reject ``B)``
    but not ``B.`` or ``(B)`` listings.)
    """
    enumerators = [m for m in matches if _is_enumerator(view, m)]
    letters = set()
    for m in enumerators:
        found = _letter_of(m)
        if found is not None:
            letters.add(found[0].upper())
    if len(letters) < 2:
        return matches
    keep = [m for m in matches if not _is_enumerator(view, m)]
    return keep


def _line_start_groups(
    view: str, patterns: list[tuple[int, list[re.Pattern[str]]]]
) -> dict[int, list[re.Match[str]]]:
    """Matches of the level-4 groups (rightmost first), option listings removed."""
    groups = {
        index: _rightmost(m for p in group for m in p.finditer(view))
        for index, (level, group) in enumerate(patterns)
        if level == 4
    }
    kept = {id(m) for m in _drop_option_listing(view, [m for ms in groups.values() for m in ms])}
    return {index: [m for m in ms if id(m) in kept] for index, ms in groups.items()}


def _check_letters(letters: Sequence[str]) -> tuple[str, ...]:
    result = tuple(letters)
    if not result:
        raise ValueError("letters must not be empty")
    for letter in result:
        if not isinstance(letter, str) or len(letter) != 1 or not letter.isalnum():
            raise ValueError(f"each option label must be one letter or digit, got {letter!r}")
    if len({x.upper() for x in result}) != len(result):
        raise ValueError(f"option labels must be unique (case-insensitively): {result!r}")
    return result


def extract_choice(response: str, letters: Sequence[str]) -> Extraction | None:
    """Extract the chosen option letter from ``response``; ``None`` when there is none.

    ``letters`` are the option labels actually shown (``"ABCD"``, ``["A", ..., "R"]``); a letter
    outside them is never returned. The answer is spelled as in ``letters``.
    """
    labels = _check_letters(letters)
    canonical = {x.upper(): x for x in labels}
    patterns = _choice_patterns(tuple(x.upper() for x in labels))
    for view in _views(response):
        line_groups: dict[int, list[re.Match[str]]] | None = None
        for index, (level, group) in enumerate(patterns):
            if level == 4:
                if line_groups is None:
                    line_groups = _line_start_groups(view, patterns)
                matches = line_groups[index]
            else:
                matches = _rightmost(m for p in group for m in p.finditer(view))
            for m in matches:
                found = _letter_of(m)
                if found is not None:
                    letter, span = found
                    return Extraction(canonical[letter.upper()], level, span)
    return None


def grade_choice(
    response: str, letters: Sequence[str], gold_letter: str
) -> tuple[bool, Extraction | None]:
    """``(correct, extraction)``; a response with no extractable answer is wrong."""
    labels = _check_letters(letters)
    if gold_letter.upper() not in {x.upper() for x in labels}:
        raise ValueError(f"gold letter {gold_letter!r} is not one of {labels!r}")
    extraction = extract_choice(response, labels)
    correct = extraction is not None and extraction.answer.upper() == gold_letter.upper()
    return correct, extraction


# ---------------------------------------------------------------------------------------------
# Numbers

_NUM = (
    rf"(?:(?<![{_W})\]}}.])(?P<sign>[-+]))?"
    r"(?:[$€£¥₹][^\S\n]?)?"
    rf"(?<![{_W}./])"
    r"(?P<body>"
    r"\\[dt]?frac[^\S\n]*\{[^\S\n]*(?P<fn>\d+(?:\.\d+)?)[^\S\n]*\}[^\S\n]*"
    r"\{[^\S\n]*(?P<fd>\d+(?:\.\d+)?)[^\S\n]*\}"
    r"|(?P<mw>\d+)[^\S\n]+(?P<mn>\d+)/(?P<md>\d+)(?![\d/])"
    r"|(?P<sn>\d+)/(?P<sd>\d+)(?![\d/])"
    r"|(?P<th>\d{1,3}(?:,\d{3})+(?:\.\d+)?)(?!\d|,\d)"
    r"|(?P<pl>\d+(?:\.\d+)?|\.\d+)"
    r")(?!\d|\.\d)"
)
_NUM_RE = re.compile(_NUM, re.ASCII)
_NUM_FINAL = re.compile(
    rf"(?i:final answer)[^\n]{{0,100}}?\s+(?i:is)\b:?[^\d\n]{{0,20}}?{_NUM}", re.ASCII
)
_NUM_HASH = re.compile(rf"####[^\S\n]*[^\d\n]{{0,5}}?{_NUM}", re.ASCII)
_NUM_ANSWER = re.compile(
    rf"(?i:\banswers?\b)[*_]{{0,4}}[^\S\n]{{0,8}}:?\s{{0,8}}"
    rf"(?:[^\n]{{0,100}}=\s{{0,8}}|[^\n]{{0,50}}?){_NUM}(?!\s*=)",
    re.ASCII,
)
_BOXED = re.compile(r"\\(?:boxed|fbox)[^\S\n]*\{")


def _fraction_of(m: re.Match[str]) -> Fraction | None:
    g = m.groupdict()
    try:
        if g["fn"] is not None:
            value = Fraction(g["fn"]) / Fraction(g["fd"])
        elif g["mw"] is not None:
            value = int(g["mw"]) + Fraction(int(g["mn"]), int(g["md"]))
        elif g["sn"] is not None:
            value = Fraction(int(g["sn"]), int(g["sd"]))
        elif g["th"] is not None:
            value = Fraction(g["th"].replace(",", ""))
        else:
            value = Fraction(g["pl"])
    except (ZeroDivisionError, ValueError):
        return None
    return -value if g["sign"] == "-" else value


def _format_fraction(value: Fraction) -> str:
    """Integers as integers, terminating decimals as decimals, anything else as ``p/q``."""
    num, den = value.numerator, value.denominator
    if den == 1:
        return str(num)
    twos = fives = 0
    rest = den
    while rest % 2 == 0:
        rest //= 2
        twos += 1
    while rest % 5 == 0:
        rest //= 5
        fives += 1
    if rest != 1:
        return f"{num}/{den}"
    k = max(twos, fives)
    digits = str(abs(num) * (10**k // den)).rjust(k + 1, "0")
    text = f"{digits[:-k]}.{digits[-k:]}".rstrip("0").rstrip(".")
    return f"-{text}" if num < 0 else text


def _number_extraction(m: re.Match[str], level: int) -> Extraction | None:
    value = _fraction_of(m)
    if value is None:
        return None
    start = m.start("sign") if m.group("sign") else m.start("body")
    return Extraction(_format_fraction(value), level, (start, m.end("body")))


_BRACES = re.compile(r"[{}]")
_BOX_SCAN = 500  # characters of a box searched for its number


def _boxed_candidates(view: str) -> Iterator[re.Match[str]]:
    """Numbers in ``\\boxed{...}``, rightmost box first (after the last ``=`` inside the box)."""
    openings = list(_BOXED.finditer(view))
    if not openings:
        return
    closing: dict[int, int] = {}
    stack: list[int] = []
    for brace in _BRACES.finditer(view):
        if brace.group() == "{":
            stack.append(brace.start())
        elif stack:
            closing[stack.pop()] = brace.start()
    for opening in reversed(openings):
        start = opening.end()
        line_end = view.find("\n", start)
        end = closing.get(start - 1, len(view) if line_end < 0 else line_end)
        end = min(end, start + _BOX_SCAN)
        eq = view.rfind("=", start, end)
        m = _NUM_RE.search(view, eq + 1 if eq >= 0 else start, end)
        if m is not None:
            yield m


def extract_number(response: str) -> Extraction | None:
    """Extract the final number of a generative (gsm8k-style) response; ``None`` when there is none.

    ``answer`` is normalized: no thousands commas, no trailing zeros, ``3/4`` -> ``"0.75"``,
    ``1/3`` -> ``"1/3"``.
    """
    for view in _views(response):
        levels: list[tuple[int, Iterator[re.Match[str]]]] = [
            (1, iter(_rightmost(_NUM_FINAL.finditer(view)))),
            (2, _boxed_candidates(view)),
            (3, iter(_rightmost(_NUM_HASH.finditer(view)))),
            (4, iter(_rightmost(_NUM_ANSWER.finditer(view)))),
            (5, iter(_rightmost(_NUM_RE.finditer(view)))),
        ]
        for level, candidates in levels:
            for m in candidates:
                found = _number_extraction(m, level)
                if found is not None:
                    return found
    return None


def _parse_number(text: str) -> Fraction | None:
    cleaned = text.strip().translate(_CHAR_MAP)
    cleaned = cleaned.replace(",", "").replace("$", "").replace("%", "").strip()
    try:
        return Fraction(cleaned)
    except (ValueError, ZeroDivisionError):
        pass
    found = extract_number(text)
    if found is None:
        return None
    try:
        return Fraction(found.answer)
    except (ValueError, ZeroDivisionError):
        return None


def normalize_number(text: str) -> str | None:
    """The normalized form of a number written as text (``"1,234.50"`` -> ``"1234.5"``)."""
    value = _parse_number(text)
    return None if value is None else _format_fraction(value)


def numbers_equal(a: str, b: str, rel_tol: float = 1e-6) -> bool:
    """Whether two numbers written as text are equal: exactly, or within ``rel_tol``."""
    x, y = _parse_number(a), _parse_number(b)
    if x is None or y is None:
        return False
    if x == y:
        return True
    try:
        return math.isclose(float(x), float(y), rel_tol=rel_tol, abs_tol=0.0)
    except OverflowError:
        return False


def grade_number(response: str, gold: str) -> tuple[bool, Extraction | None]:
    """``(correct, extraction)``; a response with no number is wrong."""
    extraction = extract_number(response)
    correct = extraction is not None and numbers_equal(extraction.answer, gold)
    return correct, extraction
