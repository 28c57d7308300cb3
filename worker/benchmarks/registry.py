"""The paper's benchmark suite as loaders from Hugging Face datasets, plus local JSONL benchmarks.

Two layers:

* **Loaders** (``load_mmlu``, ``load_bbh``, ...): pure functions from one dataset split, given as an
  iterable of rows (dicts in the dataset's own column shapes), to ``Item`` objects. They never touch
  the network, so they are tested with hand-written rows.
* **The registry** (``load_benchmark``, ``get_benchmark``): resolves a benchmark name (any spelling that
  ``app.taxonomy.canonical_name`` knows, or ``local:<path>``), fetches the split with the
  ``datasets`` package (imported lazily, only when a hub benchmark is asked for) and runs the loader.

Sample ids: the dataset's own id column where it has one (ARC ``id``, CommonsenseQA ``id``,
HellaSwag ``ind``, GPQA ``Record ID``); otherwise ``items.content_hash`` of the row's source text
(question, options and passage as they are in the dataset, before any parsing or shuffling, so that
improving a parser never renumbers a benchmark). Never the row order. Rows whose content hashes
collide (MMLU has a few verbatim duplicate questions) get ``~2``, ``~3`` ... suffixes, assigned in
an order fixed by their content, so the ids do not depend on row order either; colliding dataset
ids are refused.

Option shuffles: ``shuffle_item`` permutes an item's options with a per-item permutation keyed by
``(seed, sample_id)`` (a sort of the option indices by SHA-256 of ``"{seed}\\0{sample_id}\\0{j}"``),
so an item is shuffled the same way whatever else is loaded and in whatever order, on any Python
version. On by default for GPQA (the dataset stores the correct answer first; the paper shuffled
with a seed) and for TruthfulQA mc1 (same reason; the paper's released code did not shuffle it,
which puts every gold answer at ``A``). The permutation is kept in ``metadata["permutation"]``
(``permutation[i]`` = the dataset's index of the option shown at position ``i``).

k is always ``len(item.choices)``, the number of options shown.

Where the rows come from (``load_benchmark``): a local copy first (``<name>.jsonl`` in a benchmark
folder, written by ``forgetmap suite fetch`` with the same ids and unshuffled options, so a copy
gives exactly the hub's items), else the hub through ``worker.benchmarks.sources.load_hub_rows``
(script-based datasets from their Parquet export; gated ones with ``HF_TOKEN``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.taxonomy import (
    canonical_name,
    lookup,
    not_scored_benchmarks,
    scored_benchmarks,
)
from worker.benchmarks.items import (
    LETTERS,
    MAX_CHOICES,
    BenchmarkError,
    Item,
    content_hash,
    load_jsonl_benchmark,
)
from worker.benchmarks.sources import HubSource, load_hub_rows

__all__ = [
    "LOCAL_PREFIX",
    "BenchmarkSpec",
    "HubSource",
    "LoadedBenchmark",
    "copy_file_name",
    "file_sha256",
    "get_benchmark",
    "get_spec",
    "known_benchmarks",
    "load_arc",
    "load_bbh",
    "load_benchmark",
    "load_commonsense_qa",
    "load_gpqa",
    "load_hellaswag",
    "load_hub_rows",
    "load_mctest",
    "load_mmlu",
    "load_musr",
    "load_piqa",
    "load_salad_bench_mrq",
    "load_social_iqa",
    "load_truthfulqa_mc1",
    "parse_bbh_options",
    "permutation",
    "shuffle_item",
]

log = logging.getLogger(__name__)

LOCAL_PREFIX = "local:"

Row = Mapping[str, Any]
Rows = Iterable[Row]


# ---------------------------------------------------------------------------------------------
# Row helpers


def _col(row: Any, key: str, where: str) -> Any:
    if not isinstance(row, Mapping):
        raise BenchmarkError(f"{where}: expected a row mapping, got {type(row).__name__}")
    if key not in row:
        raise BenchmarkError(f"{where}: missing column {key!r} (columns: {sorted(row)})")
    return row[key]


def _str(row: Row, key: str, where: str) -> str:
    value = _col(row, key, where)
    if not isinstance(value, str):
        raise BenchmarkError(f"{where}: column {key!r} must be a string, got {value!r}")
    return value


def _str_list(value: Any, what: str, where: str) -> list[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise BenchmarkError(f"{where}: {what} must be a list of strings, got {value!r}")
    out = list(value)
    if any(not isinstance(x, str) for x in out):
        raise BenchmarkError(f"{where}: {what} must be a list of strings, got {value!r}")
    if not 2 <= len(out) <= MAX_CHOICES:
        raise BenchmarkError(f"{where}: {what} must have 2..{MAX_CHOICES} options, got {len(out)}")
    return out


def _int(value: Any, what: str, where: str) -> int:
    if isinstance(value, bool):
        raise BenchmarkError(f"{where}: {what} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    raise BenchmarkError(f"{where}: {what} must be an integer, got {value!r}")


def _check_index(index: int, k: int, what: str, where: str) -> int:
    if not 0 <= index < k:
        raise BenchmarkError(f"{where}: {what} {index} is out of range for {k} options")
    return index


def _category(benchmark: str) -> str | None:
    info = lookup(benchmark)
    return None if info is None else info.category


class _Collector:
    """Accumulates a loader's items; resolves sample-id collisions order-independently."""

    def __init__(self, benchmark: str) -> None:
        self.benchmark = benchmark
        self._items: list[tuple[Item, bool]] = []
        self.skipped = 0

    def add(
        self,
        *,
        sample_id: str | None,
        hash_of: tuple[str, Sequence[str] | None, str | None],
        question: str,
        choices: Sequence[str] | None,
        gold_index: int | None,
        gold: str | None = None,
        context: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        explicit = sample_id is not None and str(sample_id).strip() != ""
        sid = str(sample_id).strip() if explicit else content_hash(*hash_of)
        if choices is not None:
            assert gold_index is not None
            gold = LETTERS[gold_index]
        assert gold is not None
        item = Item(
            benchmark=self.benchmark,
            sample_id=sid,
            question=question,
            choices=None if choices is None else tuple(choices),
            gold=gold,
            gold_index=gold_index,
            category=_category(self.benchmark),
            context=context,
            metadata=metadata or {},
        )
        self._items.append((item, explicit))

    def skip(self, where: str, why: str) -> None:
        self.skipped += 1
        log.warning("%s: row skipped: %s", where, why)

    def finish(self, *, seed: int, shuffle: bool) -> list[Item]:
        if self.skipped:
            log.warning("%s: %d row(s) skipped", self.benchmark, self.skipped)
        groups: dict[str, list[int]] = {}
        for pos, (item, _) in enumerate(self._items):
            groups.setdefault(item.sample_id, []).append(pos)
        items = [item for item, _ in self._items]
        for sid, positions in groups.items():
            if len(positions) < 2:
                continue
            if any(self._items[p][1] for p in positions):
                raise BenchmarkError(
                    f"{self.benchmark}: the dataset id {sid!r} occurs {len(positions)} times"
                )
            ordered = sorted(positions, key=lambda p: _content_key(items[p]))
            for n, p in enumerate(ordered[1:], start=2):
                items[p] = replace(items[p], sample_id=f"{sid}~{n}")
            log.warning(
                "%s: %d rows share the content hash %s; ids suffixed ~2..",
                self.benchmark,
                len(positions),
                sid,
            )
        if shuffle:
            items = [shuffle_item(it, seed) for it in items]
        return items


def _content_key(item: Item) -> str:
    return json.dumps(
        [item.question, item.choices, item.gold, item.context, item.metadata],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )


# ---------------------------------------------------------------------------------------------
# Seeded option shuffle


def permutation(k: int, seed: int, sample_id: str) -> list[int]:
    """The seeded order of k options of one item: ``perm[i]`` = original index shown at ``i``."""

    def key(j: int) -> bytes:
        return hashlib.sha256(f"{seed}\0{sample_id}\0{j}".encode()).digest()

    return sorted(range(k), key=key)


def shuffle_item(item: Item, seed: int) -> Item:
    """``item`` with its options in the seeded order of ``permutation``; generative items as is.

    ``metadata["permutation"]`` maps shown positions to the dataset's option indices (composed if
    the item was already shuffled). With several gold letters, all are remapped and ``gold`` is
    the first of them in the new order.
    """
    if item.choices is None:
        return item
    assert item.gold_index is not None
    perm = permutation(len(item.choices), seed, item.sample_id)
    shown_at = {old: new for new, old in enumerate(perm)}
    choices = tuple(item.choices[p] for p in perm)
    metadata = dict(item.metadata)
    before = metadata.get("permutation")
    metadata["permutation"] = [before[p] for p in perm] if before else perm
    metadata["shuffle_seed"] = seed
    gold_index = shown_at[item.gold_index]
    if metadata.get("gold_letters"):
        golds = sorted(shown_at[LETTERS.index(x)] for x in metadata["gold_letters"])
        metadata["gold_letters"] = [LETTERS[g] for g in golds]
        gold_index = golds[0]
    return replace(
        item, choices=choices, gold=LETTERS[gold_index], gold_index=gold_index, metadata=metadata
    )


# ---------------------------------------------------------------------------------------------
# Loaders: one dataset split (an iterable of rows) -> items


def load_mmlu(
    rows: Rows, benchmark: str = "mmlu:abstract_algebra", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``lighteval/mmlu`` (config = subject, split test): ``question``, ``subject``, ``choices``
    (4 strings), ``answer`` (ClassLabel index 0..3; a letter is accepted too)."""
    out = _Collector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        question = _str(row, "question", where)
        choices = _str_list(_col(row, "choices", where), "'choices'", where)
        answer = _col(row, "answer", where)
        if isinstance(answer, str) and len(answer.strip()) == 1 and answer.strip().isalpha():
            gold = LETTERS.index(answer.strip().upper())
        else:
            gold = _int(answer, "'answer'", where)
        _check_index(gold, len(choices), "'answer'", where)
        metadata = {"subject": row["subject"]} if row.get("subject") else {}
        out.add(
            sample_id=None,
            hash_of=(question, choices, None),
            question=question,
            choices=choices,
            gold_index=gold,
            metadata=metadata,
        )
    return out.finish(seed=seed, shuffle=shuffle)


# BBH. Option lists for the tasks whose inputs do not list lettered options (as in the paper's
# released task file); everything else is parsed from "Options:\n(A) ...\n(B) ..." in the input.
_BBH_FIXED_OPTIONS: dict[str, tuple[str, ...]] = {
    "boolean_expressions": ("False", "True"),
    "causal_judgment": ("Yes", "No"),
    "formal_fallacies": ("valid", "invalid"),
    "navigate": ("Yes", "No"),
    "sports_understanding": ("yes", "no"),
    "web_of_lies": ("Yes", "No"),
    # counts 1..19 as options (k = 19, as in the paper)
    "object_counting": tuple(str(n) for n in range(1, 20)),
}
_BBH_GENERATIVE_NUMERIC = frozenset({"multistep_arithmetic_two"})
_BBH_DATASET_CONFIG = {"causal_judgment": "causal_judgement"}  # the dataset's spelling

_OPTION_LINE = re.compile(r"^[ \t]*\(([A-Z])\)[ \t]?(.*?)[ \t]*$")
_OPTIONS_HEADER = re.compile(r"^[ \t]*Options:[ \t]*$", re.MULTILINE)
_DASH_OPTIONS_BLOCK = re.compile(r"\n*[ \t]*Options:[ \t]*\n(?:[ \t]*-[^\n]*(?:\n|$))+\s*$")
_LETTER_TARGET = re.compile(r"^\(([A-Z])\)$")


def parse_bbh_options(text: str) -> tuple[str, list[str]] | None:
    """Split a BBH input into (question, option texts) when it lists ``(A) ...`` options.

    The options are the lines after the last ``Options:`` line (or, without one, from the first
    line that starts with ``(A)``); a line that is not an option continues the previous option.
    Letters must run A, B, C ... without gaps. ``None`` when there are no such options.
    """
    lines = text.split("\n")
    headers = list(_OPTIONS_HEADER.finditer(text))
    if headers:
        start_line = text.count("\n", 0, headers[-1].start()) + 1
        question_lines = lines[: start_line - 1]
    else:
        first = next(
            (
                n
                for n, line in enumerate(lines)
                if (m := _OPTION_LINE.match(line)) and m.group(1) == "A"
            ),
            None,
        )
        if first is None:
            return None
        start_line = first
        question_lines = lines[:first]
    options: list[str] = []
    for line in lines[start_line:]:
        m = _OPTION_LINE.match(line)
        if m:
            if len(options) >= MAX_CHOICES or m.group(1) != LETTERS[len(options)]:
                return None  # out-of-order letter: not a clean option list
            options.append(m.group(2))
        elif options and line.strip():
            options[-1] = f"{options[-1]}\n{line.strip()}"
        elif not options and line.strip():
            return None  # text between the header and the first option
    if len(options) < 2:
        return None
    return "\n".join(question_lines).strip(), options


def load_bbh(
    rows: Rows, benchmark: str = "bbh:navigate", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``lighteval/big_bench_hard`` (config = task; ``causal_judgement`` for
    ``bbh:causal_judgment``; split train): ``input``, ``target``.

    Targets like ``(C)`` index the ``(A) ...`` options listed in the input (parsed out of the
    question and shown again as the item's choices); binary tasks get their two options
    (``Yes``/``No``, ``True``/``False``, ``valid``/``invalid``; a trailing ``Options: - Yes - No``
    block is removed from the question); ``object_counting`` gets the counts 1..19;
    ``multistep_arithmetic_two`` is a generative numeric item. A row whose target names no option
    (the dataset has a few malformed ones, e.g. in ``ruin_names``) is skipped with a warning.
    """
    family, _, task = benchmark.partition(":")
    if family != "bbh" or not task:
        raise BenchmarkError(f"{benchmark!r} is not a BBH benchmark (bbh:<task>)")
    out = _Collector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        text = _str(row, "input", where)
        target = _col(row, "target", where)
        target = str(target).strip() if isinstance(target, (str, int)) else None
        if not target:
            raise BenchmarkError(f"{where}: column 'target' must be a non-empty string")
        hash_of = (text, None, None)
        metadata = {"task": task, "target": target}
        if task in _BBH_GENERATIVE_NUMERIC:
            out.add(
                sample_id=None,
                hash_of=hash_of,
                question=text.strip(),
                choices=None,
                gold_index=None,
                gold=target,
                metadata=metadata,
            )
            continue
        fixed = _BBH_FIXED_OPTIONS.get(task)
        if fixed is not None:
            question = _DASH_OPTIONS_BLOCK.sub("", text).strip()
            folded = [o.casefold() for o in fixed]
            if target.casefold() not in folded:
                out.skip(where, f"target {target!r} is not one of {list(fixed)}")
                continue
            out.add(
                sample_id=None,
                hash_of=hash_of,
                question=question,
                choices=fixed,
                gold_index=folded.index(target.casefold()),
                metadata=metadata,
            )
            continue
        parsed = parse_bbh_options(text)
        if parsed is None:
            out.skip(where, "no '(A) ...' options found in the input")
            continue
        question, options = parsed
        m = _LETTER_TARGET.match(target)
        if m and LETTERS.index(m.group(1)) < len(options):
            gold = LETTERS.index(m.group(1))
        else:
            matches = [
                j for j, o in enumerate(options) if o.strip().casefold() == target.casefold()
            ]
            if len(matches) != 1:
                out.skip(where, f"target {target!r} names none of the {len(options)} options")
                continue
            gold = matches[0]
        out.add(
            sample_id=None,
            hash_of=hash_of,
            question=question,
            choices=options,
            gold_index=gold,
            metadata=metadata,
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_arc(
    rows: Rows, benchmark: str = "arc:challenge", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``allenai/ai2_arc`` (``ARC-Easy`` / ``ARC-Challenge``, split test): ``id``, ``question``,
    ``choices`` {``text``: [...], ``label``: [...]}, ``answerKey`` (a label: ``"B"`` or ``"2"``).
    Most questions have 4 options, a few 3 or 5: k follows each question."""
    out = _Collector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        question = _str(row, "question", where)
        choices_col = _col(row, "choices", where)
        if not isinstance(choices_col, Mapping):
            raise BenchmarkError(
                f"{where}: column 'choices' must be {{'text': [...], 'label': [...]}}"
            )
        texts = _str_list(_col(choices_col, "text", where), "choices.text", where)
        labels = [str(x) for x in _col(choices_col, "label", where)]
        key = str(_col(row, "answerKey", where)).strip()
        if len(labels) != len(texts) or key not in labels:
            raise BenchmarkError(f"{where}: answerKey {key!r} is not one of the labels {labels}")
        out.add(
            sample_id=row.get("id"),
            hash_of=(question, texts, None),
            question=question,
            choices=texts,
            gold_index=labels.index(key),
            metadata={"labels": labels},
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_gpqa(
    rows: Rows, benchmark: str = "gpqa:diamond", *, seed: int = 0, shuffle: bool = True
) -> list[Item]:
    """``Idavidrein/gpqa`` (config ``gpqa_diamond``, split train): ``Question``, ``Correct Answer``,
    ``Incorrect Answer 1..3``, ``Record ID``, ``Subdomain``. The correct answer comes first in the
    dataset, so the options are shuffled with the seed (on by default)."""
    out = _Collector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        question = _str(row, "Question", where).strip()
        choices = [
            _str(row, key, where).strip()
            for key in (
                "Correct Answer",
                "Incorrect Answer 1",
                "Incorrect Answer 2",
                "Incorrect Answer 3",
            )
        ]
        metadata = {
            k: row[c]
            for k, c in (("subdomain", "Subdomain"), ("domain", "High-level domain"))
            if row.get(c)
        }
        out.add(
            sample_id=row.get("Record ID"),
            hash_of=(question, choices, None),
            question=question,
            choices=choices,
            gold_index=0,
            metadata=metadata,
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_musr(
    rows: Rows, benchmark: str = "musr:murder_mysteries", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``TAUR-Lab/MuSR`` (split = domain): ``narrative``, ``question``, ``choices`` (a Python list
    written as a string, e.g. ``"['Mack', 'Ana']"``), ``answer_index``. k varies per question."""
    out = _Collector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        narrative = _str(row, "narrative", where)
        question = _str(row, "question", where)
        raw = _col(row, "choices", where)
        if isinstance(raw, str):
            try:
                raw = ast.literal_eval(raw)
            except (ValueError, SyntaxError) as exc:
                raise BenchmarkError(f"{where}: cannot parse 'choices' {raw!r}: {exc}") from None
        choices = _str_list(raw, "'choices'", where)
        gold = _check_index(
            _int(_col(row, "answer_index", where), "'answer_index'", where),
            len(choices),
            "'answer_index'",
            where,
        )
        out.add(
            sample_id=None,
            hash_of=(question, choices, narrative),
            question=question,
            choices=choices,
            gold_index=gold,
            context=narrative,
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_truthfulqa_mc1(
    rows: Rows, benchmark: str = "truthfulqa:mc1", *, seed: int = 0, shuffle: bool = True
) -> list[Item]:
    """``truthfulqa/truthful_qa`` (config ``multiple_choice``, split validation): ``question``,
    ``mc1_targets`` {``choices``: [...], ``labels``: [1, 0, ...]} with exactly one 1. The correct
    answer comes first in the dataset, so the options are shuffled with the seed (on by default).
    k varies per question."""
    out = _Collector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        question = _str(row, "question", where)
        targets = _col(row, "mc1_targets", where)
        if not isinstance(targets, Mapping):
            raise BenchmarkError(
                f"{where}: 'mc1_targets' must be {{'choices': ..., 'labels': ...}}"
            )
        choices = _str_list(_col(targets, "choices", where), "mc1_targets.choices", where)
        labels = [_int(x, "mc1_targets.labels", where) for x in _col(targets, "labels", where)]
        if len(labels) != len(choices) or labels.count(1) != 1:
            raise BenchmarkError(
                f"{where}: mc1_targets.labels must mark exactly one choice: {labels}"
            )
        out.add(
            sample_id=None,
            hash_of=(question, choices, None),
            question=question,
            choices=choices,
            gold_index=labels.index(1),
        )
    return out.finish(seed=seed, shuffle=shuffle)


def _hellaswag_clean(text: str) -> str:
    """lm-eval-harness's HellaSwag preprocessing (WikiHow markup out)."""
    text = text.strip().replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


def load_hellaswag(
    rows: Rows, benchmark: str = "hellaswag", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``Rowan/hellaswag`` (split validation: the test split has no labels): ``ind``,
    ``activity_label``, ``ctx_a``, ``ctx_b``, ``endings`` (4), ``label`` (``"0"``..``"3"``)."""
    out = _Collector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        activity = _str(row, "activity_label", where)
        ctx_a = _str(row, "ctx_a", where)
        ctx_b = _str(row, "ctx_b", where)
        endings = _str_list(_col(row, "endings", where), "'endings'", where)
        label = _col(row, "label", where)
        if label in ("", None):
            raise BenchmarkError(f"{where}: no label (the test split has none; use validation)")
        gold = _check_index(_int(label, "'label'", where), len(endings), "'label'", where)
        context = _hellaswag_clean(f"{activity}: {ctx_a} {ctx_b.capitalize()}")
        ind = row.get("ind")
        out.add(
            sample_id=None if ind is None else str(ind),
            hash_of=(f"{activity}: {ctx_a} {ctx_b}", endings, None),
            question=f"Which ending is the most plausible continuation of this text?\n\n{context}",
            choices=[_hellaswag_clean(e) for e in endings],
            gold_index=gold,
            metadata={"source_id": row["source_id"]} if row.get("source_id") else {},
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_social_iqa(
    rows: Rows, benchmark: str = "social_iqa", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``allenai/social_i_qa`` (split validation): ``context``, ``question``, ``answerA..C``,
    ``label`` (``"1"``..``"3"``). k = 3."""
    out = _Collector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        context = _str(row, "context", where)
        question = _str(row, "question", where)
        choices = [_str(row, f"answer{x}", where) for x in "ABC"]
        gold = _check_index(
            _int(_col(row, "label", where), "'label'", where) - 1, 3, "'label' - 1", where
        )
        out.add(
            sample_id=None,
            hash_of=(question, choices, context),
            question=question,
            choices=choices,
            gold_index=gold,
            context=context,
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_mctest(
    rows: Rows, benchmark: str = "mctest", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``sagnikrayc/mctest`` (split test): ``story`` (line breaks written ``\\newline``),
    ``question``, ``answer_options`` {``A``: ..., ``B``: ..., ``C``: ..., ``D``: ...}, ``answer``
    (a letter)."""
    out = _Collector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        story = _str(row, "story", where)
        question = _str(row, "question", where)
        options = _col(row, "answer_options", where)
        if not isinstance(options, Mapping) or not options:
            raise BenchmarkError(f"{where}: 'answer_options' must map letters to option texts")
        keys = sorted(options)
        if keys != list(LETTERS[: len(keys)]):
            raise BenchmarkError(f"{where}: 'answer_options' keys must be A, B, ...: {keys}")
        choices = _str_list([options[k] for k in keys], "'answer_options'", where)
        answer = str(_col(row, "answer", where)).strip().upper()
        if answer not in keys:
            raise BenchmarkError(f"{where}: 'answer' {answer!r} is not one of {keys}")
        out.add(
            sample_id=None,
            hash_of=(question, choices, story),
            question=question,
            choices=choices,
            gold_index=keys.index(answer),
            context=story.replace("\\newline", "\n").strip(),
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_piqa(
    rows: Rows, benchmark: str = "piqa", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``ybisk/piqa`` (split validation): ``goal``, ``sol1``, ``sol2``, ``label`` (0/1). k = 2."""
    out = _Collector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        goal = _str(row, "goal", where)
        choices = [_str(row, "sol1", where), _str(row, "sol2", where)]
        gold = _check_index(_int(_col(row, "label", where), "'label'", where), 2, "'label'", where)
        out.add(
            sample_id=None,
            hash_of=(goal, choices, None),
            question=goal,
            choices=choices,
            gold_index=gold,
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_commonsense_qa(
    rows: Rows, benchmark: str = "commonsense_qa", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``tau/commonsense_qa`` (split validation): ``id``, ``question``, ``question_concept``,
    ``choices`` {``label``: [A..E], ``text``: [...]}, ``answerKey``. k = 5."""
    out = _Collector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        question = _str(row, "question", where)
        choices_col = _col(row, "choices", where)
        if not isinstance(choices_col, Mapping):
            raise BenchmarkError(
                f"{where}: column 'choices' must be {{'label': [...], 'text': [...]}}"
            )
        texts = _str_list(_col(choices_col, "text", where), "choices.text", where)
        labels = [str(x) for x in _col(choices_col, "label", where)]
        key = str(_col(row, "answerKey", where)).strip()
        if len(labels) != len(texts) or key not in labels:
            raise BenchmarkError(
                f"{where}: answerKey {key!r} is not one of the labels {labels} (the test split has "
                "no answers; use validation)"
            )
        metadata = {"concept": row["question_concept"]} if row.get("question_concept") else {}
        out.add(
            sample_id=row.get("id"),
            hash_of=(question, texts, None),
            question=question,
            choices=texts,
            gold_index=labels.index(key),
            metadata=metadata,
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_salad_bench_mrq(
    rows: Rows, benchmark: str = "salad_bench:mrq", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``walledai/SaladBench`` (config ``mrq``, split train): ``question``, ``choices`` (list),
    ``answers`` (the correct options: 0-based indices, as the paper's task file reads them; option
    letters are accepted too), ``categories``. A multiple-response question: several options can
    be correct; any of them counts as correct (``metadata["gold_letters"]``), as in the paper."""
    out = _Collector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        question = _str(row, "question", where)
        choices = _str_list(_col(row, "choices", where), "'choices'", where)
        answers = _col(row, "answers", where)
        if isinstance(answers, (str, int)) and not isinstance(answers, bool):
            answers = [answers]
        if (
            isinstance(answers, (bytes, Mapping))
            or not isinstance(answers, Sequence)
            or not answers
        ):
            raise BenchmarkError(f"{where}: 'answers' must be a non-empty list, got {answers!r}")
        golds: set[int] = set()
        for a in answers:
            if isinstance(a, str) and len(a.strip()) == 1 and a.strip().isalpha():
                golds.add(LETTERS.index(a.strip().upper()))
            else:
                golds.add(_int(a, "'answers' entry", where))
        for g in golds:
            _check_index(g, len(choices), "'answers' entry", where)
        ordered = sorted(golds)
        metadata: dict[str, Any] = {"gold_letters": [LETTERS[g] for g in ordered]}
        if row.get("categories"):
            metadata["categories"] = list(row["categories"])
        out.add(
            sample_id=None,
            hash_of=(question, choices, None),
            question=question,
            choices=choices,
            gold_index=ordered[0],
            metadata=metadata,
        )
    return out.finish(seed=seed, shuffle=shuffle)


# ---------------------------------------------------------------------------------------------
# The registry


Loader = Callable[..., list[Item]]


@dataclass(frozen=True)
class BenchmarkSpec:
    """A hub benchmark: its canonical name, the splits it pools (usually one), loader and default
    option shuffle."""

    name: str
    sources: tuple[HubSource, ...]
    loader: Loader
    shuffle: bool = False


def _spec(name: str, source: HubSource, loader: Loader, shuffle: bool = False) -> BenchmarkSpec:
    return BenchmarkSpec(name, (source,), loader, shuffle)


def _mctest_spec(name: str) -> BenchmarkSpec:
    info = lookup(name)
    subsets = info.subsets if info is not None and info.subsets else ("mc500",)
    sources = tuple(HubSource("sagnikrayc/mctest", subset, "test") for subset in subsets)
    return BenchmarkSpec(name, sources, load_mctest)


def _spec_for(name: str) -> BenchmarkSpec | None:
    family, _, task = name.partition(":")
    if family == "mmlu" and task:
        return _spec(name, HubSource("lighteval/mmlu", task, "test"), load_mmlu)
    if family == "bbh" and task and task not in ("dyck_languages", "word_sorting"):
        config = _BBH_DATASET_CONFIG.get(task, task)
        return _spec(name, HubSource("lighteval/big_bench_hard", config, "train"), load_bbh)
    if family == "arc" and task in ("easy", "challenge"):
        config = {"easy": "ARC-Easy", "challenge": "ARC-Challenge"}[task]
        return _spec(name, HubSource("allenai/ai2_arc", config, "test"), load_arc)
    if family == "musr" and task:
        return _spec(name, HubSource("TAUR-Lab/MuSR", None, task), load_musr)
    if name == "mctest":
        return _mctest_spec(name)
    gpqa = HubSource("Idavidrein/gpqa", "gpqa_diamond", "train", gated=True)
    truthful = HubSource("truthfulqa/truthful_qa", "multiple_choice", "validation")
    fixed: dict[str, BenchmarkSpec] = {
        "gpqa:diamond": _spec(name, gpqa, load_gpqa, shuffle=True),
        "truthfulqa:mc1": _spec(name, truthful, load_truthfulqa_mc1, shuffle=True),
        "hellaswag": _spec(name, HubSource("Rowan/hellaswag", None, "validation"), load_hellaswag),
        "social_iqa": _spec(
            name, HubSource("allenai/social_i_qa", None, "validation"), load_social_iqa
        ),
        "piqa": _spec(name, HubSource("ybisk/piqa", None, "validation", "plain_text"), load_piqa),
        "commonsense_qa": _spec(
            name, HubSource("tau/commonsense_qa", None, "validation"), load_commonsense_qa
        ),
        "salad_bench:mrq": _spec(
            name, HubSource("walledai/SaladBench", "mrq", "train"), load_salad_bench_mrq
        ),
    }
    return fixed.get(name)


@lru_cache(maxsize=1)
def _registry() -> dict[str, BenchmarkSpec]:
    names = [info.name for info in scored_benchmarks()] + list(not_scored_benchmarks())
    specs = {}
    for name in names:
        spec = _spec_for(name)
        if spec is not None:
            specs[name] = spec
    missing = [info.name for info in scored_benchmarks() if info.name not in specs]
    if missing:  # the taxonomy grew a benchmark this module does not know how to load
        raise RuntimeError(f"no loader for scored benchmark(s): {', '.join(missing)}")
    return specs


def known_benchmarks() -> tuple[str, ...]:
    """Canonical names ``get_benchmark`` loads from the hub: the 94 scored ones plus
    ``bbh:multistep_arithmetic_two`` (generative, not scored)."""
    return tuple(_registry())


def get_spec(name: str) -> BenchmarkSpec | None:
    """The hub spec of a benchmark name (any known spelling), or None."""
    return _registry().get(canonical_name(name))


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _resolve_local_path(raw: str, local_dirs: Sequence[str | Path]) -> Path:
    """The file of ``local:<raw>``. With ``local_dirs``, it must lie inside one of them (a relative
    path is looked up in each, in order); without, any readable path is accepted."""
    if not raw.strip():
        raise BenchmarkError(f"{LOCAL_PREFIX} needs a path: {LOCAL_PREFIX}<file.jsonl>")
    candidate = Path(raw.strip()).expanduser()
    if not local_dirs:
        return candidate
    roots = [Path(d).expanduser().resolve() for d in local_dirs]
    where = ", ".join(map(str, roots))
    if candidate.is_absolute():
        path = candidate.resolve()
        if not any(_inside(path, root) for root in roots):
            raise BenchmarkError(
                f"local benchmark {raw!r} is outside the benchmark directories ({where})"
            )
        if path.is_file():
            return path
        raise BenchmarkError(f"local benchmark {raw!r} not found")
    for root in roots:
        path = (root / candidate).resolve()
        if not _inside(path, root):
            raise BenchmarkError(
                f"local benchmark {raw!r} points outside the benchmark directories"
            )
        if path.is_file():
            return path
    raise BenchmarkError(f"local benchmark {raw!r} not found in {where}")


def _find_local_file(raw: str, canonical: str, local_dirs: Sequence[str | Path]) -> Path | None:
    """A JSONL file named after the benchmark in one of ``local_dirs`` (an offline copy)."""
    names = []
    for n in (raw, canonical, canonical.replace(":", "_"), canonical.replace(":", "__")):
        if n and "/" not in n and "\\" not in n and n not in (".", "..") and n not in names:
            names.append(n)
    for directory in local_dirs:
        for n in names:
            path = Path(directory).expanduser() / f"{n}.jsonl"
            if path.is_file():
                return path
    return None


def _select(items: list[Item], limit: int | None) -> list[Item]:
    """At most ``limit`` items, chosen by a hash of their ids (a fixed pseudo-random subset that
    does not depend on row order), returned in their original order."""
    if limit is None:
        return items
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise BenchmarkError(f"limit must be a positive integer, got {limit!r}")
    if limit >= len(items):
        return items

    def key(pos: int) -> bytes:
        item = items[pos]
        return hashlib.sha256(f"{item.benchmark}\0{item.sample_id}".encode()).digest()

    keep = set(sorted(range(len(items)), key=key)[:limit])
    return [item for pos, item in enumerate(items) if pos in keep]


def copy_file_name(benchmark: str) -> str:
    """The file name of a benchmark's local copy (``suite fetch``): ``bbh:navigate`` ->
    ``bbh_navigate.jsonl``."""
    return f"{canonical_name(benchmark).replace(':', '_')}.jsonl"


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class LoadedBenchmark:
    """A benchmark's items and where they came from."""

    name: str
    items: list[Item]
    source: str
    """``local`` (a JSONL file: a ``suite fetch`` copy or a ``local:`` benchmark) or ``hub``."""
    path: Path | None = None
    sha256: str | None = None
    """SHA-256 of the local file, so that results can name the exact data they saw."""

    def data_record(self) -> dict[str, str]:
        """What a shard's eval config records about its data."""
        if self.path is None:
            return {"source": self.source}
        return {"source": self.source, "file": self.path.name, "sha256": str(self.sha256)}


def _from_file(name: str, path: Path, items: list[Item]) -> LoadedBenchmark:
    return LoadedBenchmark(name, items, "local", path, file_sha256(path))


def load_benchmark(
    name: str,
    *,
    local_dirs: Sequence[str | Path] = (),
    limit: int | None = None,
    seed: int = 0,
    shuffle: bool | None = None,
    fetch: Callable[[HubSource], Iterable[Row]] | None = None,
) -> LoadedBenchmark:
    """The items of one benchmark, and their source.

    ``name``: ``local:<path>`` (a JSONL benchmark; with ``local_dirs`` the path must lie inside one
    of them, relative paths are looked up there), or a benchmark name in any spelling the taxonomy
    knows (``mmlu:anatomy``, ``mmlu_anatomy``, ``leaderboard|mmlu:anatomy|5``). A local copy
    ``copy_file_name(name)`` (``mmlu_anatomy.jsonl``; also ``<name>.jsonl``) in one of
    ``local_dirs`` is used first, the hub only without one.

    ``limit``: keep at most that many items, a fixed pseudo-random subset chosen by hashed sample
    id (independent of row order and of the seed). ``seed``: the option-shuffle seed.
    ``shuffle``: ``None`` = the benchmark's default (on for GPQA and TruthfulQA mc1, off for the
    rest and for ``local:`` files), True/False = force. ``fetch``: replaces ``load_hub_rows``.
    """
    if not isinstance(name, str) or not name.strip():
        raise BenchmarkError("a benchmark name is required")
    raw = name.strip()
    if raw.startswith(LOCAL_PREFIX):
        path = _resolve_local_path(raw[len(LOCAL_PREFIX) :], local_dirs)
        items = load_jsonl_benchmark(path)
        if shuffle:
            items = [shuffle_item(it, seed) for it in items]
        return _from_file(raw, path, _select(items, limit))

    canonical = canonical_name(raw)
    spec = _registry().get(canonical)
    do_shuffle = (spec.shuffle if spec else False) if shuffle is None else shuffle
    local = _find_local_file(raw, canonical, local_dirs)
    if local is not None:
        items = load_jsonl_benchmark(local, benchmark=canonical)
        if do_shuffle:
            items = [shuffle_item(it, seed) for it in items]
        return _from_file(canonical, local, _select(items, limit))

    if spec is None:
        if canonical in not_scored_benchmarks():
            raise BenchmarkError(
                f"benchmark {raw!r} ({canonical}) is not scored by the paper and has no loader"
            )
        known = ", ".join(known_benchmarks())
        raise BenchmarkError(
            f"unknown benchmark {raw!r}; known: {known}; or {LOCAL_PREFIX}<path to a .jsonl file>"
        )
    try:
        rows = [row for source in spec.sources for row in (fetch or load_hub_rows)(source)]
    except BenchmarkError as exc:
        folders = ", ".join(map(str, local_dirs)) or "none configured"
        raise BenchmarkError(
            f"{spec.name}: no local copy {copy_file_name(spec.name)} in the benchmark folders "
            f"({folders}), and {exc}"
        ) from exc
    items = spec.loader(rows, spec.name, seed=seed, shuffle=do_shuffle)
    if not items:
        where = ", ".join(map(str, spec.sources))
        raise BenchmarkError(f"{spec.name}: {where} gave no usable rows")
    return LoadedBenchmark(spec.name, _select(items, limit), "hub")


def get_benchmark(name: str, **options: Any) -> list[Item]:
    """The items of one benchmark (``load_benchmark`` without the source)."""
    return load_benchmark(name, **options).items
