"""The demo's procedural benchmark suite and training corpus (fast: no model is trained)."""

from __future__ import annotations

import hashlib

import pytest
from forgetmap.demo import suite
from forgetmap.worker.benchmarks.items import load_jsonl_benchmark
from forgetmap.worker.benchmarks.prompts import build_prompt
from forgetmap.worker.benchmarks.registry import get_benchmark

from tests.support.services import require_modules


def _digest(paths) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def test_write_suite_is_deterministic_and_loads(tmp_path):
    a = suite.write_suite(tmp_path / "a", seed=0)
    b = suite.write_suite(tmp_path / "b", seed=0)
    c = suite.write_suite(tmp_path / "c", seed=1)
    assert [p.name for p in a] == [f"{info.name}.jsonl" for info in suite.BENCHMARKS]
    assert _digest(a) == _digest(b)
    assert _digest(a) != _digest(c)

    ks: set = set()
    for info, path in zip(suite.BENCHMARKS, a, strict=True):
        items = load_jsonl_benchmark(path)
        assert len(items) == info.size and 40 <= info.size <= 80
        assert {it.benchmark for it in items} == {info.name}
        assert {it.category for it in items} == {info.category}
        assert info.category in suite.CATEGORIES
        assert len({it.question for it in items}) == len(items), "questions are unique"
        item_ks = {it.k for it in items}
        ks |= item_ks
        if info.k is None:
            assert item_ks == {None}
            assert all(it.gold.lstrip("-").isdigit() for it in items)
        elif info.k == "3/4":
            assert item_ks == {3, 4}
        else:
            assert item_ks == {info.k}
        if info.k is not None:
            # gold letters are spread over the options, not always "A"
            assert len({it.gold for it in items}) >= 2
        # the worker reads the same file through its registry
        via_registry = get_benchmark(f"local:{path.name}", local_dirs=[tmp_path / "a"])
        assert [it.sample_id for it in via_registry] == [it.sample_id for it in items]
    assert {2, 3, 4, 5, None} <= ks
    assert {info.category for info in suite.BENCHMARKS} == set(suite.CATEGORIES)


def test_items_match_the_jsonl_files(tmp_path):
    paths = suite.write_suite(tmp_path, seed=3)
    items = suite.benchmark_items(seed=3)
    for path in paths:
        loaded = load_jsonl_benchmark(path)
        assert loaded == items[path.stem]


def _block(item) -> str:
    """The answered block of an item, as a base few-shot prompt shows it."""
    text = build_prompt(item, mode="base").text
    assert text is not None
    start = text.index("Question:")
    return f"{text[start:]} {item.gold}"


def test_corpus_uses_the_prompt_format_and_coverage():
    items = suite.benchmark_items(seed=0)
    pretrain = "\n\n".join(d for c in suite.CATEGORIES for d in suite.corpus(c, 0))
    sft_math = "\n\n".join(suite.corpus("Math", 0, kind="sft"))
    for name, its in items.items():
        seen = [_block(it) in pretrain for it in its]
        if its[0].category == "Math":
            # pretraining covers part of Math; the Math SFT data covers all of it
            assert 0.3 < sum(seen) / len(seen) < 0.7, name
            assert all(_block(it) in sft_math for it in its), name
        else:
            assert all(seen), name
            assert not any(_block(it) in sft_math for it in its), name
    # prose states facts in sentences, without the Q/A format
    for category in suite.CATEGORIES:
        prose = suite.corpus(category, 0, kind="prose")
        assert prose and not any("Answer:" in d for d in prose)
    # deterministic
    assert suite.corpus("Logic", 0) == suite.corpus("Logic", 0)
    assert suite.corpus("Logic", 0) != suite.corpus("Logic", 1)
    with pytest.raises(ValueError):
        suite.corpus("Cooking", 0)
    with pytest.raises(ValueError):
        suite.corpus("Math", 0, kind="novel")


def test_chat_examples_are_the_chat_prompts():
    items = {it.question: it for its in suite.benchmark_items(0).values() for it in its}
    chats = suite.chat_examples(0, share=0.5)
    assert 0.35 < len(chats) / len(items) < 0.65
    for user, reply in chats:
        question = next(q for q in items if f"\n\n{q}" in user)
        item = items[question]
        assert user == build_prompt(item, mode="chat").messages[-1]["content"]
        assert reply == f"Answer: {item.gold}"


def test_option_letters_are_single_tokens():
    """The fast log-likelihood path of forgetmap.demo.evaluate relies on it."""
    require_modules("tokenizers", "torch")
    from forgetmap.demo import trainer

    tok = trainer.build_tokenizer(suite.tokenizer_text(0))
    for letter in "ABCDE":
        assert len(tok.encode(f" {letter}", add_special_tokens=False)) == 1
    text = tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert text == "<|bos|><|user|>\nhi<|eos|>\n<|assistant|>\n"
