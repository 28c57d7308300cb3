"""The demo's procedural benchmark suite and its training corpus (seeded, deterministic, no I/O
except ``write_suite``).

A small made-up world is drawn from the seed: people with a home city and a job, arithmetic
problems, ordering puzzles and word tasks. From it come eight benchmarks in four of the paper's
categories, in the local JSONL benchmark format (``forgetmap.worker.benchmarks.items``):

==================  ======================  =====  ======  =======================================
category            benchmark               k      items   question
==================  ======================  =====  ======  =======================================
Knowledge/QA        demo_world_cities       4      60      In which city does Ravo live?
Knowledge/QA        demo_world_jobs         5      60      What is the job of Ravo?
Math                demo_arith_choice       4      60      What is 7 + 5?
Math                demo_arith_answer       gen    40      What is 13 - 6?  (answer: a number)
Logic               demo_logic_compare      2      60      A is taller than B. ... Is A taller ...?
Logic               demo_logic_oldest       3      50      A is older than B. ... Who is the oldest?
Language            demo_word_pattern       3 / 4  50      Which word comes next: red blue red ...?
Language            demo_word_length        gen    40      How many letters are in the word "cat"?
==================  ======================  =====  ======  =======================================

``scale`` (``Recipe.suite_scale``; 1 by default) multiplies every benchmark's size and grows the
world with it (``scale`` times the people, arithmetic problems, puzzles and words), so the same
suite can be made realistic in size: ``benchmarks(scale)`` gives the sizes. The default suite
(scale 1) is exactly the one in the table; larger scales draw more of the same kinds of items
(wider arithmetic operands, made-up words for the length questions, patterns over more words).

``demo_word_pattern`` mixes 3- and 4-option questions on purpose: the metric adjusts for chance per
option count. Two benchmarks are generative (numeric answers, graded by ``grading.grade``).

The training corpus is written in exactly the surface formats the evaluation prompts use, built
with ``forgetmap.worker.benchmarks.prompts`` itself: a "pretraining document" is a base-model
few-shot prompt (header, answered ``Question: ...\\nA. ...\\nAnswer: X`` blocks of one benchmark)
ending in its answer; a chat example is the chat prompt's user message with the reply ``Answer: X``;
prose documents state the same facts in sentences (for continued pretraining). The tiny models learn
the world by heart from these texts, so what a post-training regime does to that memory is what the
forgetting map then shows.

Coverage is not uniform: pretraining shows every Knowledge/QA, Logic and Language item but only
part of the Math items (``PRETRAIN_COVERAGE``); the Math SFT data covers all of them, so narrow
SFT on Math has something to gain (backward transfer) while it overwrites the rest.
"""

from __future__ import annotations

import hashlib
import json
import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from forgetmap.worker.benchmarks.items import LETTERS, Item
from forgetmap.worker.benchmarks.prompts import build_prompt

__all__ = [
    "BENCHMARKS",
    "CATEGORIES",
    "PRETRAIN_COVERAGE",
    "BenchmarkInfo",
    "benchmark_items",
    "benchmarks",
    "chat_examples",
    "corpus",
    "pretrain_items",
    "suite_records",
    "tokenizer_text",
    "write_suite",
]

CATEGORIES: tuple[str, ...] = ("Knowledge/QA", "Math", "Logic", "Language")


@dataclass(frozen=True)
class BenchmarkInfo:
    name: str
    category: str
    k: int | str | None  # option count; "3/4" when mixed; None = generative
    size: int


BENCHMARKS: tuple[BenchmarkInfo, ...] = (
    BenchmarkInfo("demo_world_cities", "Knowledge/QA", 4, 60),
    BenchmarkInfo("demo_world_jobs", "Knowledge/QA", 5, 60),
    BenchmarkInfo("demo_arith_choice", "Math", 4, 60),
    BenchmarkInfo("demo_arith_answer", "Math", None, 40),
    BenchmarkInfo("demo_logic_compare", "Logic", 2, 60),
    BenchmarkInfo("demo_logic_oldest", "Logic", 3, 50),
    BenchmarkInfo("demo_word_pattern", "Language", "3/4", 50),
    BenchmarkInfo("demo_word_length", "Language", None, 40),
)


def benchmarks(scale: int = 1) -> tuple[BenchmarkInfo, ...]:
    """The suite's benchmarks at ``scale`` (each ``scale`` times its size in ``BENCHMARKS``)."""
    _check_scale(scale)
    return tuple(BenchmarkInfo(b.name, b.category, b.k, b.size * scale) for b in BENCHMARKS)


def _check_scale(scale: int) -> None:
    if not isinstance(scale, int) or isinstance(scale, bool) or not 1 <= scale <= 60:
        raise ValueError(f"suite scale must be an integer in 1..60, got {scale!r}")


PRETRAIN_COVERAGE: dict[str, float] = {
    "Knowledge/QA": 1.0,
    "Math": 0.5,
    "Logic": 1.0,
    "Language": 1.0,
}
"""Share of each category's benchmark items that the pretraining corpus shows."""

JOBS = (
    "baker",
    "pilot",
    "farmer",
    "doctor",
    "tailor",
    "singer",
    "painter",
    "sailor",
    "miner",
    "teacher",
    "hunter",
    "weaver",
)

WORDS = (
    "cat",
    "dog",
    "sun",
    "tree",
    "book",
    "lamp",
    "river",
    "stone",
    "apple",
    "bread",
    "cloud",
    "chair",
    "table",
    "house",
    "garden",
    "window",
    "candle",
    "forest",
    "bottle",
    "pencil",
    "rabbit",
    "button",
    "kitten",
    "mirror",
    "basket",
    "ladder",
    "planet",
    "silver",
    "island",
    "jacket",
    "dragon",
    "pillow",
    "castle",
    "engine",
    "rocket",
    "violin",
    "blanket",
    "harbor",
    "lantern",
    "mountain",
    "umbrella",
    "elephant",
    "sandwich",
    "keyboard",
    "hospital",
    "triangle",
    "notebook",
    "sunflower",
    "butterfly",
    "chocolate",
    "telephone",
    "newspaper",
    "red",
    "blue",
    "green",
    "ink",
    "owl",
    "fox",
    "egg",
    "key",
)

PATTERN_WORDS = (
    "red",
    "blue",
    "green",
    "cat",
    "dog",
    "sun",
    "moon",
    "star",
    "tree",
    "rock",
    "fish",
    "bird",
    "milk",
    "salt",
    "rain",
    "snow",
    "wind",
    "fire",
    "gold",
    "iron",
)

RELATIONS = (("taller", "tallest"), ("older", "oldest"), ("faster", "fastest"))

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def _rng(seed: int, *parts: object) -> random.Random:
    """A private generator for one part of the world: independent of call order."""
    key = "\0".join([str(seed), *map(str, parts)])
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


def _names(rng: random.Random, n: int, syllables: int, taken: set[str]) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        name = "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(syllables))
        if rng.random() < 0.5:
            name += rng.choice("nlrs")
        name = name.capitalize()
        if name not in taken:
            taken.add(name)
            out.append(name)
    return out


def _mc(
    bench: str, idx: int, category: str, question: str, options: Sequence[str], gold: str
) -> dict:
    options = list(options)
    return {
        "id": f"{bench}-{idx:03d}",
        "benchmark": bench,
        "category": category,
        "question": question,
        "choices": options,
        "answer": LETTERS[options.index(gold)],
    }


def _gen(bench: str, idx: int, category: str, question: str, answer: str) -> dict:
    return {
        "id": f"{bench}-{idx:03d}",
        "benchmark": bench,
        "category": category,
        "question": question,
        "answer": answer,
    }


def _shuffled(rng: random.Random, values: Sequence[str]) -> list[str]:
    out = list(values)
    rng.shuffle(out)
    return out


# ---------------------------------------------------------------------------------------------
# The world


@dataclass(frozen=True)
class _World:
    people: tuple[str, ...]
    cities: tuple[str, ...]
    home: dict[str, str]
    job: dict[str, str]
    arith: tuple[tuple[int, str, int], ...]  # eval problems (choice then answer), then extras
    chains: tuple[tuple[str, str, str, int], ...]  # (a, b, c, relation index), a > b > c
    words: tuple[str, ...]  # for the length questions: WORDS, then made-up words at scale > 1
    pattern_words: tuple[str, ...]  # for the pattern questions


_WORLDS: dict[tuple[int, int], _World] = {}


def _operand_limit(problems: int) -> int:
    """The smallest operand bound (at least 21, the default world's) giving ``problems`` distinct
    additions and non-negative subtractions."""
    limit = 21
    while limit * limit + limit * (limit + 1) // 2 < problems:
        limit += 1
    return limit


def _world(seed: int, scale: int = 1) -> _World:
    """The world of a seed; at ``scale`` it has ``scale`` times the people, problems and puzzles
    (scale 1 draws exactly the default world: every extra draw happens after its draws)."""
    _check_scale(scale)
    if (seed, scale) in _WORLDS:
        return _WORLDS[(seed, scale)]
    rng = _rng(seed, "world")
    taken: set[str] = set()
    people = _names(rng, 60 * scale, 2, taken)
    cities = _names(rng, 12, 3, taken)
    home = {p: rng.choice(cities) for p in people}
    job = {p: rng.choice(JOBS) for p in people}
    limit = _operand_limit(200 * scale)
    problems = [
        (a, op, b) for a in range(limit) for b in range(limit) for op in "+-" if op == "+" or a >= b
    ]
    rng.shuffle(problems)
    arith = tuple((a, op, b) for a, op, b in problems[: 200 * scale])
    chain_names = _names(rng, 40 * scale, 2, taken)
    chains = []
    for _ in range(200 * scale):
        a, b, c = rng.sample(chain_names, 3)
        chains.append((a, b, c, rng.randrange(len(RELATIONS))))
    words: tuple[str, ...] = WORDS
    pattern_words: tuple[str, ...] = PATTERN_WORDS
    if scale > 1:
        extra = _rng(seed, "world-words")
        known = {w.capitalize() for w in WORDS}
        made_up = _names(extra, 20 * scale, 2, known) + _names(extra, 20 * scale, 3, known)
        words = WORDS + tuple(w.lower() for w in made_up)
        pattern_words = PATTERN_WORDS + tuple(w for w in WORDS if w not in PATTERN_WORDS)
    world = _World(
        tuple(people), tuple(cities), home, job, tuple(arith), tuple(chains), words, pattern_words
    )
    _WORLDS[(seed, scale)] = world
    return world


def _arith_value(a: int, op: str, b: int) -> int:
    return a + b if op == "+" else a - b


def _arith_question(a: int, op: str, b: int) -> str:
    return f"What is {a} {op} {b}?"


def _compare_item(chain: tuple[str, str, str, int], variant: int) -> tuple[str, str]:
    a, b, c, rel = chain
    word = RELATIONS[rel][0]
    facts = f"{a} is {word} than {b}. {b} is {word} than {c}."
    x, y, yes = [(a, c, True), (c, a, False), (a, b, True), (c, b, False)][variant % 4]
    return f"{facts} Is {x} {word} than {y}?", "yes" if yes else "no"


def _oldest_item(chain: tuple[str, str, str, int]) -> tuple[str, str, list[str]]:
    a, b, c, rel = chain
    word, most = RELATIONS[rel]
    # state the two facts in a scrambled order so the answer is not always the first name
    question = f"{b} is {word} than {c}. {a} is {word} than {b}. Who is the {most}?"
    return question, a, [a, b, c]


# ---------------------------------------------------------------------------------------------
# Benchmarks


def _records(seed: int, scale: int = 1) -> dict[str, list[dict]]:
    w = _world(seed, scale)
    n = {b.name: b.size for b in benchmarks(scale)}
    out: dict[str, list[dict]] = {}

    rng = _rng(seed, "cities")
    bench = "demo_world_cities"
    out[bench] = []
    for i, p in enumerate(w.people):
        others = [c for c in w.cities if c != w.home[p]]
        options = _shuffled(rng, [w.home[p], *rng.sample(others, 3)])
        out[bench].append(
            _mc(bench, i, "Knowledge/QA", f"In which city does {p} live?", options, w.home[p])
        )

    rng = _rng(seed, "jobs")
    bench = "demo_world_jobs"
    out[bench] = []
    for i, p in enumerate(w.people):
        others = [j for j in JOBS if j != w.job[p]]
        options = _shuffled(rng, [w.job[p], *rng.sample(others, 4)])
        out[bench].append(
            _mc(bench, i, "Knowledge/QA", f"What is the job of {p}?", options, w.job[p])
        )

    rng = _rng(seed, "arith_choice")
    bench = "demo_arith_choice"
    out[bench] = []
    for i, (a, op, b) in enumerate(w.arith[: n[bench]]):
        value = _arith_value(a, op, b)
        wrong = rng.sample([v for v in range(value - 5, value + 6) if v >= 0 and v != value], 3)
        options = _shuffled(rng, [str(value), *map(str, wrong)])
        out[bench].append(_mc(bench, i, "Math", _arith_question(a, op, b), options, str(value)))

    bench = "demo_arith_answer"
    out[bench] = [
        _gen(bench, i, "Math", _arith_question(a, op, b), str(_arith_value(a, op, b)))
        for i, (a, op, b) in enumerate(w.arith[60 * scale : 100 * scale])
    ]

    rng = _rng(seed, "compare")
    bench = "demo_logic_compare"
    out[bench] = []
    for i, chain in enumerate(w.chains[: n[bench]]):
        question, gold = _compare_item(chain, rng.randrange(4))
        out[bench].append(_mc(bench, i, "Logic", question, ["yes", "no"], gold))

    rng = _rng(seed, "oldest")
    bench = "demo_logic_oldest"
    out[bench] = []
    for i, chain in enumerate(w.chains[60 * scale : 110 * scale]):
        question, gold, names = _oldest_item(chain)
        out[bench].append(_mc(bench, i, "Logic", question, _shuffled(rng, names), gold))

    rng = _rng(seed, "pattern")
    bench = "demo_word_pattern"
    out[bench] = []
    pairs = [(x, y) for x in w.pattern_words for y in w.pattern_words if x != y]
    for i, (x, y) in enumerate(rng.sample(pairs, n[bench])):
        k = 3 if i % 2 == 0 else 4
        others = [v for v in w.pattern_words if v not in (x, y)]
        options = _shuffled(rng, [y, x, *rng.sample(others, k - 2)])
        question = f"Which word comes next: {x} {y} {x} {y} {x} ...?"
        out[bench].append(_mc(bench, i, "Language", question, options, y))

    rng = _rng(seed, "length")
    bench = "demo_word_length"
    words = _shuffled(rng, w.words)[: n[bench]]
    out[bench] = [
        _gen(bench, i, "Language", f'How many letters are in the word "{word}"?', str(len(word)))
        for i, word in enumerate(words)
    ]

    for info in benchmarks(scale):
        assert len(out[info.name]) == info.size, info.name
    return out


def suite_records(seed: int = 0, scale: int = 1) -> dict[str, list[dict]]:
    """Benchmark name -> its JSONL records (``id, benchmark, category, question, [choices,]
    answer``), in the order of ``BENCHMARKS``."""
    return {name: [dict(r) for r in records] for name, records in _records(seed, scale).items()}


def _item(record: dict) -> Item:
    choices = record.get("choices")
    if choices is None:
        return Item(
            benchmark=record["benchmark"],
            sample_id=record["id"],
            question=record["question"],
            choices=None,
            gold=str(record["answer"]),
            gold_index=None,
            category=record["category"],
        )
    index = LETTERS.index(record["answer"])
    return Item(
        benchmark=record["benchmark"],
        sample_id=record["id"],
        question=record["question"],
        choices=tuple(choices),
        gold=LETTERS[index],
        gold_index=index,
        category=record["category"],
    )


def benchmark_items(seed: int = 0, scale: int = 1) -> dict[str, list[Item]]:
    """Benchmark name -> its items, as ``load_jsonl_benchmark`` reads them from ``write_suite``."""
    return {name: [_item(r) for r in records] for name, records in _records(seed, scale).items()}


def write_suite(out_dir: str | Path, seed: int = 0, scale: int = 1) -> list[Path]:
    """Write one ``<benchmark>.jsonl`` per benchmark into out_dir; returns the paths in order."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, records in _records(seed, scale).items():
        path = out / f"{name}.jsonl"
        text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            tmp = path.with_suffix(".jsonl.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------------
# Training corpus


def _in_pretraining(seed: int, item: Item) -> bool:
    share = PRETRAIN_COVERAGE[item.category or ""]
    if share >= 1.0:
        return True
    digest = hashlib.sha256(f"{seed}\0pretrain\0{item.sample_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 < share


def _extra_math(seed: int, scale: int = 1) -> dict[str, list[Item]]:
    """Arithmetic problems outside the benchmarks (more training data of the same kinds; their
    ids start at 500 * scale, past every benchmark item's)."""
    w = _world(seed, scale)
    rng = _rng(seed, "extra_math")
    choice, answer = [], []
    for i, (a, op, b) in enumerate(w.arith[100 * scale : 200 * scale]):
        value = _arith_value(a, op, b)
        q = _arith_question(a, op, b)
        if i % 2 == 0:
            wrong = rng.sample([v for v in range(value - 5, value + 6) if v >= 0 and v != value], 3)
            options = _shuffled(rng, [str(value), *map(str, wrong)])
            choice.append(
                _item(_mc("demo_arith_choice", 500 * scale + i, "Math", q, options, str(value)))
            )
        else:
            answer.append(_item(_gen("demo_arith_answer", 500 * scale + i, "Math", q, str(value))))
    return {"demo_arith_choice": choice, "demo_arith_answer": answer}


def pretrain_items(seed: int, category: str, scale: int = 1) -> dict[str, list[Item]]:
    """The benchmark items of ``category`` that pretraining shows (``PRETRAIN_COVERAGE``)."""
    items = benchmark_items(seed, scale)
    return {
        name: [it for it in items[name] if _in_pretraining(seed, it)]
        for name in items
        if items[name][0].category == category
    }


def _items_for(seed: int, category: str, kind: str, scale: int) -> dict[str, list[Item]]:
    if kind == "pretrain":
        return pretrain_items(seed, category, scale)
    items = {
        n: list(v) for n, v in benchmark_items(seed, scale).items() if v[0].category == category
    }
    if category == "Math":
        for name, extra in _extra_math(seed, scale).items():
            items[name].extend(extra)
    return items


def _documents(
    seed: int, category: str, kind: str, copies: int, shots: int = 3, scale: int = 1
) -> list[str]:
    """Few-shot documents: each item once per copy, as the last block of a base prompt whose
    shots are other items of its benchmark, followed by its answer."""
    docs = []
    for name, items in _items_for(seed, category, kind, scale).items():
        rng = _rng(seed, "docs", kind, name)
        for _ in range(copies):
            for i, item in enumerate(items):
                # the other items, by index (random.sample draws the same positions from a range
                # as from the list of the others, without building that list per item)
                others = rng.sample(range(len(items) - 1), min(shots, len(items) - 1))
                chosen = [items[j + (j >= i)] for j in others]
                prompt = build_prompt(item, mode="base", shots=chosen)
                assert prompt.text is not None
                docs.append(f"{prompt.text} {item.gold}")
    rng = _rng(seed, "docs-order", kind, category)
    rng.shuffle(docs)
    return docs


def _prose(seed: int, category: str, scale: int = 1) -> list[str]:
    """Sentences stating the facts behind a category (for continued pretraining)."""
    w = _world(seed, scale)
    rng = _rng(seed, "prose", category)
    lines: list[str] = []
    if category == "Knowledge/QA":
        for p in w.people:
            lines.append(
                rng.choice(
                    [
                        f"{p} lives in {w.home[p]} and works as a {w.job[p]}.",
                        f"{p} is a {w.job[p]} from {w.home[p]}.",
                        f"In {w.home[p]} lives {p}, who is a {w.job[p]}.",
                    ]
                )
            )
    elif category == "Math":
        for left, op, right in w.arith:
            lines.append(f"{left} {op} {right} = {_arith_value(left, op, right)}.")
    elif category == "Logic":
        for a, b, c, rel in w.chains[: 110 * scale]:
            word, most = RELATIONS[rel]
            lines.append(
                f"{a} is {word} than {b}, and {b} is {word} than {c}, so {a} is the {most}."
            )
    elif category == "Language":
        for word in w.words:
            lines.append(f'The word "{word}" has {len(word)} letters.')
        for x, y in zip(PATTERN_WORDS[::2], PATTERN_WORDS[1::2], strict=True):
            lines.append(f"{x} {y} {x} {y} {x} {y} {x} {y}")
    else:
        raise ValueError(f"unknown category {category!r}; known: {', '.join(CATEGORIES)}")
    rng.shuffle(lines)
    # paragraphs of about six sentences
    return [" ".join(lines[i : i + 6]) for i in range(0, len(lines), 6)]


def corpus(
    category: str, seed: int = 0, *, kind: str = "pretrain", copies: int = 2, scale: int = 1
) -> list[str]:
    """Training documents for one category.

    ``kind``:

    * ``"pretrain"``: few-shot Q/A documents over the items pretraining covers
      (``PRETRAIN_COVERAGE``), each item ``copies`` times with different shots, plus the category's
      prose documents;
    * ``"sft"``: few-shot Q/A documents over all the category's items (for Math also 100 extra
      problems outside the benchmarks);
    * ``"prose"``: plain sentences stating the category's facts (continued pretraining).

    ``scale``: the suite's scale (its items, and 100 * scale extra Math problems for SFT).
    """
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}; known: {', '.join(CATEGORIES)}")
    if kind == "pretrain":
        return _documents(seed, category, kind, copies, scale=scale) + _prose(seed, category, scale)
    if kind == "sft":
        return _documents(seed, category, kind, copies, scale=scale)
    if kind == "prose":
        return _prose(seed, category, scale)
    raise ValueError(f"kind must be 'pretrain', 'sft' or 'prose', got {kind!r}")


def chat_examples(
    seed: int = 0,
    categories: Sequence[str] = CATEGORIES,
    *,
    share: float = 0.5,
    scale: int = 1,
    reply: Callable[[Item], str] = lambda item: f"Answer: {item.gold}",
) -> list[tuple[str, str]]:
    """(user message, assistant reply) pairs for instruction-format tuning: the chat prompt of
    a seeded ``share`` of each benchmark's items (as ``build_prompt(mode="chat")`` writes it) and
    the reply (``Answer: X``, or ``reply(item)``). The other items stay unseen in chat format."""
    out = []
    for items in benchmark_items(seed, scale).values():
        if items[0].category not in categories:
            continue
        for item in items:
            digest = hashlib.sha256(f"{seed}\0chat\0{item.sample_id}".encode()).digest()
            if int.from_bytes(digest[:4], "big") / 2**32 >= share:
                continue
            prompt = build_prompt(item, mode="chat")
            assert prompt.messages is not None
            out.append((prompt.messages[-1]["content"], reply(item)))
    _rng(seed, "chat-order").shuffle(out)
    return out


def tokenizer_text(seed: int = 0, scale: int = 1) -> list[str]:
    """Text to train the demo tokenizer on: every kind of training document, the chat prompts,
    and the printable ASCII alphabet."""
    lines: list[str] = []
    for category in CATEGORIES:
        lines.extend(corpus(category, seed, kind="sft", copies=1, scale=scale))
        lines.extend(_prose(seed, category, scale))
    for user, reply in chat_examples(seed, share=1.0, scale=scale):
        lines.append(user)
        lines.append(reply)
    lines.append(string.printable)
    return lines
