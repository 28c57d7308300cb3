"""The paper's benchmarks as loaders: one dataset split (an iterable of rows) -> ``Item`` objects.

Each loader (``load_mmlu``, ``load_bbh``, ...) is a pure function of rows given as dicts in the
dataset's own column shapes. They never touch the network, so they are tested with hand-written
rows. Ids and option shuffles: ``forgetmap.worker.benchmarks.ids``. k is always
``len(item.choices)``, the number of options shown.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from forgetmap.worker.benchmarks.ids import ItemCollector
from forgetmap.worker.benchmarks.items import LETTERS, MAX_CHOICES, BenchmarkError, Item

__all__ = [
    "BBH_DATASET_CONFIG",
    "Row",
    "Rows",
    "load_arc",
    "load_bbh",
    "load_commonsense_qa",
    "load_gpqa",
    "load_hellaswag",
    "load_mctest",
    "load_mmlu",
    "load_musr",
    "load_piqa",
    "load_salad_bench_mrq",
    "load_social_iqa",
    "load_truthfulqa_mc1",
    "parse_bbh_options",
]

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


def _is_letter(value: Any) -> bool:
    return isinstance(value, str) and len(value.strip()) == 1 and value.strip().isalpha()


def _option_index(
    value: Any, k: int, what: str, where: str, *, letters: bool = False, base: int = 0
) -> int:
    """The index of an option named by a dataset value, checked against the k options shown: an
    integer counted from ``base`` (1: the dataset numbers its options from 1), or with ``letters``
    a single letter A, B, ... as well."""
    if letters and _is_letter(value):
        return _check_index(LETTERS.index(value.strip().upper()), k, what, where)
    shown = f"{what} - {base}" if base else what
    return _check_index(_int(value, what, where) - base, k, shown, where)


def _labeled_choices(row: Row, where: str, hint: str = "") -> tuple[list[str], int, list[str]]:
    """(texts, gold index, labels) of ``choices`` {``text``: [...], ``label``: [...]} and the
    ``answerKey`` label (ARC, CommonsenseQA); ``hint`` ends the message of a key not found."""
    column = _col(row, "choices", where)
    if not isinstance(column, Mapping):
        raise BenchmarkError(f"{where}: column 'choices' must be {{'text': [...], 'label': [...]}}")
    texts = _str_list(_col(column, "text", where), "choices.text", where)
    labels = [str(x) for x in _col(column, "label", where)]
    key = str(_col(row, "answerKey", where)).strip()
    if len(labels) != len(texts) or key not in labels:
        raise BenchmarkError(f"{where}: answerKey {key!r} is not one of the labels {labels}{hint}")
    return texts, labels.index(key), labels


def _add_choice_item(
    out: ItemCollector,
    question: str,
    choices: Sequence[str],
    gold: int,
    *,
    context: str | None = None,
    sample_id: Any = None,
    metadata: dict[str, Any] | None = None,
    hash_of: tuple[str, Sequence[str] | None, str | None] | None = None,
) -> None:
    """Add a multiple-choice item. Without a dataset id its sample id hashes ``hash_of``: by
    default (question, choices, context), the texts the item shows."""
    out.add(
        sample_id=sample_id,
        hash_of=hash_of or (question, choices, context),
        question=question,
        choices=choices,
        gold_index=gold,
        context=context,
        metadata=metadata,
    )


def load_mmlu(
    rows: Rows, benchmark: str = "mmlu:abstract_algebra", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``lighteval/mmlu`` (config = subject, split test): ``question``, ``subject``, ``choices``
    (4 strings), ``answer`` (ClassLabel index 0..3; a letter is accepted too)."""
    out = ItemCollector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        question = _str(row, "question", where)
        choices = _str_list(_col(row, "choices", where), "'choices'", where)
        gold = _option_index(
            _col(row, "answer", where), len(choices), "'answer'", where, letters=True
        )
        metadata = {"subject": row["subject"]} if row.get("subject") else {}
        _add_choice_item(out, question, choices, gold, metadata=metadata)
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
BBH_DATASET_CONFIG = {"causal_judgment": "causal_judgement"}  # the dataset's spelling

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
    out = ItemCollector(benchmark)
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
            gold = folded.index(target.casefold())
            _add_choice_item(out, question, fixed, gold, metadata=metadata, hash_of=hash_of)
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
        _add_choice_item(out, question, options, gold, metadata=metadata, hash_of=hash_of)
    return out.finish(seed=seed, shuffle=shuffle)


def load_arc(
    rows: Rows, benchmark: str = "arc:challenge", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``allenai/ai2_arc`` (``ARC-Easy`` / ``ARC-Challenge``, split test): ``id``, ``question``,
    ``choices`` {``text``: [...], ``label``: [...]}, ``answerKey`` (a label: ``"B"`` or ``"2"``).
    Most questions have 4 options, a few 3 or 5: k follows each question."""
    out = ItemCollector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        question = _str(row, "question", where)
        texts, gold, labels = _labeled_choices(row, where)
        _add_choice_item(
            out, question, texts, gold, sample_id=row.get("id"), metadata={"labels": labels}
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_gpqa(
    rows: Rows, benchmark: str = "gpqa:diamond", *, seed: int = 0, shuffle: bool = True
) -> list[Item]:
    """``Idavidrein/gpqa`` (config ``gpqa_diamond``, split train): ``Question``, ``Correct Answer``,
    ``Incorrect Answer 1..3``, ``Record ID``, ``Subdomain``. The correct answer comes first in the
    dataset, so the options are shuffled with the seed (on by default)."""
    out = ItemCollector(benchmark)
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
        _add_choice_item(
            out, question, choices, 0, sample_id=row.get("Record ID"), metadata=metadata
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_musr(
    rows: Rows, benchmark: str = "musr:murder_mysteries", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``TAUR-Lab/MuSR`` (split = domain): ``narrative``, ``question``, ``choices`` (a Python list
    written as a string, e.g. ``"['Mack', 'Ana']"``), ``answer_index``. k varies per question."""
    out = ItemCollector(benchmark)
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
        gold = _option_index(
            _col(row, "answer_index", where), len(choices), "'answer_index'", where
        )
        _add_choice_item(out, question, choices, gold, context=narrative)
    return out.finish(seed=seed, shuffle=shuffle)


def load_truthfulqa_mc1(
    rows: Rows, benchmark: str = "truthfulqa:mc1", *, seed: int = 0, shuffle: bool = True
) -> list[Item]:
    """``truthfulqa/truthful_qa`` (config ``multiple_choice``, split validation): ``question``,
    ``mc1_targets`` {``choices``: [...], ``labels``: [1, 0, ...]} with exactly one 1. The correct
    answer comes first in the dataset, so the options are shuffled with the seed (on by default).
    k varies per question."""
    out = ItemCollector(benchmark)
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
        _add_choice_item(out, question, choices, labels.index(1))
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
    out = ItemCollector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        activity = _str(row, "activity_label", where)
        ctx_a = _str(row, "ctx_a", where)
        ctx_b = _str(row, "ctx_b", where)
        endings = _str_list(_col(row, "endings", where), "'endings'", where)
        label = _col(row, "label", where)
        if label in ("", None):
            raise BenchmarkError(f"{where}: no label (the test split has none; use validation)")
        gold = _option_index(label, len(endings), "'label'", where)
        context = _hellaswag_clean(f"{activity}: {ctx_a} {ctx_b.capitalize()}")
        ind = row.get("ind")
        _add_choice_item(
            out,
            f"Which ending is the most plausible continuation of this text?\n\n{context}",
            [_hellaswag_clean(e) for e in endings],
            gold,
            sample_id=None if ind is None else str(ind),
            metadata={"source_id": row["source_id"]} if row.get("source_id") else {},
            hash_of=(f"{activity}: {ctx_a} {ctx_b}", endings, None),
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_social_iqa(
    rows: Rows, benchmark: str = "social_iqa", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``allenai/social_i_qa`` (split validation): ``context``, ``question``, ``answerA..C``,
    ``label`` (``"1"``..``"3"``). k = 3."""
    out = ItemCollector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        context = _str(row, "context", where)
        question = _str(row, "question", where)
        choices = [_str(row, f"answer{x}", where) for x in "ABC"]
        gold = _option_index(_col(row, "label", where), 3, "'label'", where, base=1)
        _add_choice_item(out, question, choices, gold, context=context)
    return out.finish(seed=seed, shuffle=shuffle)


def load_mctest(
    rows: Rows, benchmark: str = "mctest", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``sagnikrayc/mctest`` (split test): ``story`` (line breaks written ``\\newline``),
    ``question``, ``answer_options`` {``A``: ..., ``B``: ..., ``C``: ..., ``D``: ...}, ``answer``
    (a letter)."""
    out = ItemCollector(benchmark)
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
        _add_choice_item(
            out,
            question,
            choices,
            keys.index(answer),
            context=story.replace("\\newline", "\n").strip(),
            hash_of=(question, choices, story),
        )
    return out.finish(seed=seed, shuffle=shuffle)


def load_piqa(
    rows: Rows, benchmark: str = "piqa", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``ybisk/piqa`` (split validation): ``goal``, ``sol1``, ``sol2``, ``label`` (0/1). k = 2."""
    out = ItemCollector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        goal = _str(row, "goal", where)
        choices = [_str(row, "sol1", where), _str(row, "sol2", where)]
        gold = _option_index(_col(row, "label", where), 2, "'label'", where)
        _add_choice_item(out, goal, choices, gold)
    return out.finish(seed=seed, shuffle=shuffle)


def load_commonsense_qa(
    rows: Rows, benchmark: str = "commonsense_qa", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``tau/commonsense_qa`` (split validation): ``id``, ``question``, ``question_concept``,
    ``choices`` {``label``: [A..E], ``text``: [...]}, ``answerKey``. k = 5."""
    out = ItemCollector(benchmark)
    for i, row in enumerate(rows):
        where = f"{benchmark} row {i}"
        question = _str(row, "question", where)
        texts, gold, _ = _labeled_choices(
            row, where, " (the test split has no answers; use validation)"
        )
        metadata = {"concept": row["question_concept"]} if row.get("question_concept") else {}
        _add_choice_item(out, question, texts, gold, sample_id=row.get("id"), metadata=metadata)
    return out.finish(seed=seed, shuffle=shuffle)


def load_salad_bench_mrq(
    rows: Rows, benchmark: str = "salad_bench:mrq", *, seed: int = 0, shuffle: bool = False
) -> list[Item]:
    """``walledai/SaladBench`` (config ``mrq``, split train): ``question``, ``choices`` (list),
    ``answers`` (the correct options: 0-based indices, as the paper's task file reads them; option
    letters are accepted too), ``categories``. A multiple-response question: several options can
    be correct; any of them counts as correct (``metadata["gold_letters"]``), as in the paper."""
    out = ItemCollector(benchmark)
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
        ordered = sorted(
            {
                _option_index(a, len(choices), "'answers' entry", where, letters=True)
                for a in answers
            }
        )
        metadata: dict[str, Any] = {"gold_letters": [LETTERS[g] for g in ordered]}
        if row.get("categories"):
            metadata["categories"] = list(row["categories"])
        _add_choice_item(out, question, choices, ordered[0], metadata=metadata)
    return out.finish(seed=seed, shuffle=shuffle)
