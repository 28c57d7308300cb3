"""Benchmark items: the typed boundary between benchmark loaders and the rest of the worker.

An ``Item`` is one question of one benchmark, with the options actually shown (``choices``; ``None``
for a generative item) and the gold answer. Everything downstream (prompts, grading, upload) works
on items only, never on raw dataset rows.

Sample ids are stable and never depend on row order: a record's own id when it has one, else a
content hash (``content_hash``): the first 16 hex digits of the SHA-256 of the JSON encoding of
``{"question": ..., "choices": [...] or null}`` (plus ``"context"`` when the item has one), with
sorted keys and without ASCII escaping. Reordering a file never changes an id.

The local JSONL benchmark format (``load_jsonl_benchmark``): one JSON object per line, blank lines
ignored, UTF-8 (a BOM is tolerated). Fields:

=============  ========  ==========================================================================
field          required  meaning
=============  ========  ==========================================================================
``question``   yes       the question text (non-empty string)
``choices``    no        list of 2..26 non-empty option texts; absent or null = generative item
``answer``     yes       multiple choice: an option letter (``"C"``, case-insensitive), a 0-based
                         index (``2``) or the exact text of one option; generative: the answer text
                         or number (``"42"``, ``42``, ``0.5``)
``id``         no        sample id (string or integer); default: the content hash
``category``   no        category shown on the map; default: the taxonomy's, if it knows the name
``benchmark``  no        benchmark name; default: the file name without ``.jsonl``
``context``    no        a passage shown before the question (reading comprehension)
``metadata``   no        an object kept with the item as is
``k``          no        the number of choices (null for a generative item); checked when given
=============  ========  ==========================================================================

Any other field is refused (a misspelled ``"choises"`` would otherwise turn a multiple-choice item
into a generative one without a word). Two records with the same (benchmark, sample id) are
refused, naming both lines.
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forgetmap.core.taxonomy import lookup

__all__ = [
    "LETTERS",
    "MAX_CHOICES",
    "BenchmarkError",
    "Item",
    "content_hash",
    "letters_for",
    "load_jsonl_benchmark",
    "taxonomy_category",
]

LETTERS: str = string.ascii_uppercase
"""Option labels, in order: option i is shown as ``LETTERS[i]``."""

MAX_CHOICES = len(LETTERS)


class BenchmarkError(ValueError):
    """A benchmark cannot be loaded: unknown name, malformed file or row, duplicate sample id."""


def letters_for(k: int) -> tuple[str, ...]:
    """The option letters shown for k options: ``letters_for(4) == ("A", "B", "C", "D")``."""
    if not 1 <= k <= MAX_CHOICES:
        raise ValueError(f"number of options must be in 1..{MAX_CHOICES}, got {k}")
    return tuple(LETTERS[:k])


def content_hash(
    question: str, choices: Sequence[str] | None = None, context: str | None = None
) -> str:
    """16 hex digits of SHA-256 over the item's content (see the module docstring)."""
    payload: dict[str, Any] = {
        "question": question,
        "choices": None if choices is None else list(choices),
    }
    if context is not None:
        payload["context"] = context
    encoded = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Item:
    """One benchmark question.

    Attributes:
        benchmark: benchmark name (canonical taxonomy name for the paper's suite).
        sample_id: stable id within the benchmark (dataset id or content hash).
        question: question text (without the options).
        choices: option texts in the order shown; ``None`` for a generative item.
        gold: multiple choice: the gold letter (``"C"``); generative: the answer text/number.
        gold_index: index of the gold option in ``choices``; ``None`` for a generative item.
        category: map category (``"Science/Tech"``), or ``None`` if unknown.
        context: a passage shown before the question (MuSR narrative, MCTest story, ...).
        metadata: anything else worth keeping (subject, shuffle permutation, raw target ...).
            ``metadata["gold_letters"]``, when present, lists every accepted letter of an item with
            several correct options (SaladBench mrq); ``gold`` is then the first of them.
            Not part of the hash (items are hashable), but part of equality.
    """

    benchmark: str
    sample_id: str
    question: str
    choices: tuple[str, ...] | None
    gold: str
    gold_index: int | None
    category: str | None
    context: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.benchmark, str) or not self.benchmark.strip():
            raise ValueError("benchmark must be a non-empty string")
        if not isinstance(self.sample_id, str) or not self.sample_id:
            raise ValueError("sample_id must be a non-empty string")
        if not isinstance(self.question, str):
            raise ValueError("question must be a string")
        if self.choices is None:
            if self.gold_index is not None:
                raise ValueError("a generative item (choices None) has no gold_index")
            if not isinstance(self.gold, str) or not self.gold.strip():
                raise ValueError("a generative item needs a non-empty gold answer")
            return
        choices = tuple(self.choices)
        object.__setattr__(self, "choices", choices)
        if not 2 <= len(choices) <= MAX_CHOICES:
            raise ValueError(f"an item needs 2..{MAX_CHOICES} choices, got {len(choices)}")
        if any(not isinstance(c, str) for c in choices):
            raise ValueError("choices must be strings")
        if self.gold_index is None or not 0 <= self.gold_index < len(choices):
            raise ValueError(
                f"gold_index {self.gold_index!r} is not an index of {len(choices)} choices"
            )
        if self.gold != LETTERS[self.gold_index]:
            raise ValueError(
                f"gold {self.gold!r} does not match gold_index {self.gold_index} "
                f"({LETTERS[self.gold_index]!r})"
            )
        extra = self.metadata.get("gold_letters")
        if extra is not None:
            letters = set(self.letters)
            if not extra or any(x not in letters for x in extra) or self.gold not in extra:
                raise ValueError(
                    f"gold_letters {extra!r} must be letters of the options, with gold"
                )

    @property
    def k(self) -> int | None:
        """Number of options shown; ``None`` for a generative item."""
        return None if self.choices is None else len(self.choices)

    @property
    def letters(self) -> tuple[str, ...]:
        """Option letters shown (``("A", "B", "C")``); empty for a generative item."""
        return () if self.choices is None else letters_for(len(self.choices))

    @property
    def gold_letters(self) -> tuple[str, ...]:
        """Every accepted letter (usually just ``(gold,)``); empty for a generative item."""
        if self.choices is None:
            return ()
        extra = self.metadata.get("gold_letters")
        return tuple(extra) if extra else (self.gold,)


# ---------------------------------------------------------------------------------------------
# Local JSONL benchmarks

_JSONL_FIELDS = frozenset(
    {"id", "question", "choices", "answer", "category", "benchmark", "context", "metadata", "k"}
)


def _fail(where: str, message: str) -> BenchmarkError:
    return BenchmarkError(f"{where}: {message}")


def _gold_of_answer(answer: Any, choices: tuple[str, ...], where: str) -> int:
    """Gold index of a multiple-choice ``answer``: letter, 0-based index or option text."""
    k = len(choices)
    if isinstance(answer, bool):
        raise _fail(where, f"'answer' must be a letter, an index or an option text, got {answer!r}")
    if isinstance(answer, int):
        if not 0 <= answer < k:
            raise _fail(
                where, f"'answer' index {answer} is out of range for {k} choices (0..{k - 1})"
            )
        return answer
    if isinstance(answer, str):
        text = answer.strip()
        if len(text) == 1 and text.upper() in LETTERS[:k]:
            return LETTERS.index(text.upper())
        matches = [i for i, c in enumerate(choices) if c.strip() == text]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise _fail(where, f"'answer' {answer!r} matches several choices")
        raise _fail(
            where,
            f"'answer' {answer!r} is neither a letter {LETTERS[0]}..{LETTERS[k - 1]}, "
            "an index nor the text of one of the choices",
        )
    raise _fail(where, f"'answer' must be a letter, an index or an option text, got {answer!r}")


def _item_from_record(record: Any, where: str, default_benchmark: str, category_of: Any) -> Item:
    if not isinstance(record, dict):
        raise _fail(where, f"expected a JSON object, got {type(record).__name__}")
    unknown = sorted(set(record) - _JSONL_FIELDS)
    if unknown:
        raise _fail(
            where,
            f"unknown field(s) {', '.join(map(repr, unknown))}; allowed: "
            f"{', '.join(sorted(_JSONL_FIELDS))} (put anything else under 'metadata')",
        )

    question = record.get("question")
    if not isinstance(question, str) or not question.strip():
        raise _fail(where, "'question' must be a non-empty string")

    benchmark = record.get("benchmark", default_benchmark)
    if not isinstance(benchmark, str) or not benchmark.strip():
        raise _fail(where, "'benchmark' must be a non-empty string")
    benchmark = benchmark.strip()

    context = record.get("context")
    if context is not None and not isinstance(context, str):
        raise _fail(where, "'context' must be a string")

    metadata = record.get("metadata", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise _fail(where, "'metadata' must be an object")

    category = record.get("category")
    if category is not None and (not isinstance(category, str) or not category.strip()):
        raise _fail(where, "'category' must be a non-empty string")
    category = category.strip() if category is not None else category_of(benchmark)

    raw_choices = record.get("choices")
    choices: tuple[str, ...] | None
    if raw_choices is None:
        choices = None
    else:
        if not isinstance(raw_choices, list):
            raise _fail(where, "'choices' must be a list of strings")
        if not 2 <= len(raw_choices) <= MAX_CHOICES:
            raise _fail(
                where, f"'choices' must have 2..{MAX_CHOICES} entries, got {len(raw_choices)}"
            )
        if any(not isinstance(c, str) or not c.strip() for c in raw_choices):
            raise _fail(where, "every choice must be a non-empty string")
        choices = tuple(raw_choices)

    if "k" in record and record["k"] != (None if choices is None else len(choices)):
        shown = "a generative item" if choices is None else f"{len(choices)} choices"
        raise _fail(where, f"'k' is {record['k']!r} but the record has {shown}")

    if "answer" not in record or record["answer"] is None:
        raise _fail(where, "'answer' is missing")
    answer = record["answer"]
    if choices is None:
        if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
            raise _fail(
                where, f"'answer' of a generative item must be text or a number, got {answer!r}"
            )
        gold = str(answer).strip()
        if not gold:
            raise _fail(where, "'answer' must not be empty")
        gold_index = None
    else:
        gold_index = _gold_of_answer(answer, choices, where)
        gold = LETTERS[gold_index]

    if "id" in record:
        raw_id = record["id"]
        if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
            raise _fail(where, f"'id' must be a string or an integer, got {raw_id!r}")
        sample_id = str(raw_id).strip()
        if not sample_id:
            raise _fail(where, "'id' must not be empty")
    else:
        sample_id = content_hash(question, choices, context)

    return Item(
        benchmark=benchmark,
        sample_id=sample_id,
        question=question,
        choices=choices,
        gold=gold,
        gold_index=gold_index,
        category=category,
        context=context,
        metadata=dict(metadata),
    )


def taxonomy_category(benchmark: str) -> str | None:
    """The taxonomy's category of a benchmark name, or None for a name it does not know."""
    info = lookup(benchmark)
    return None if info is None else info.category


def load_jsonl_benchmark(path: str | Path, *, benchmark: str | None = None) -> list[Item]:
    """Read a local JSONL benchmark (format in the module docstring), in file order.

    ``benchmark`` replaces the file name as the default benchmark name of records without one.

    Raises ``BenchmarkError`` naming ``file:line`` for a malformed line, and naming both lines for
    a duplicate (benchmark, sample id).
    """
    path = Path(path)
    if not path.is_file():
        raise BenchmarkError(f"{path}: no such benchmark file")
    if benchmark is not None:
        default_benchmark = benchmark
    elif path.name.endswith(".jsonl"):
        default_benchmark = path.name[: -len(".jsonl")]
    else:
        default_benchmark = path.stem
    items: list[Item] = []
    first_line: dict[tuple[str, str], int] = {}
    try:
        fh = path.open(encoding="utf-8-sig")
    except OSError as exc:
        raise BenchmarkError(f"{path}: cannot read: {exc}") from exc
    with fh:
        try:
            lines = list(fh)
        except UnicodeDecodeError as exc:
            raise BenchmarkError(f"{path}: not UTF-8 text: {exc}") from exc
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _fail(where, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
        item = _item_from_record(record, where, default_benchmark, taxonomy_category)
        key = (item.benchmark, item.sample_id)
        if key in first_line:
            if isinstance(record, dict) and "id" in record:
                why = f"duplicate id {item.sample_id!r}"
            else:
                why = (
                    f"duplicate question (same question and choices, content hash "
                    f"{item.sample_id}); give each record a distinct 'id'"
                )
            raise _fail(
                where,
                f"{why} in benchmark {item.benchmark!r}, first seen on line {first_line[key]}",
            )
        first_line[key] = lineno
        items.append(item)
    if not items:
        raise BenchmarkError(f"{path}: no items")
    return items
