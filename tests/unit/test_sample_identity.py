"""Sample identity across prompt templates: shared affixes, normalization, keys, text links."""

from __future__ import annotations

import pyarrow as pa

from app.sample_identity import (
    AMBIGUOUS_MARK,
    link_candidates,
    normalize,
    normalize_text,
    question_keys,
    question_texts,
    shared_affixes,
)


def test_shared_affixes_stop_at_whitespace():
    queries = [
        "Shots...\nQuestion: What is red?\nAnswer:",
        "Shots...\nQuestion: What was blue?\nAnswer:",
    ]
    start, end = shared_affixes(queries)
    # "What " is shared too, but "Wh" + "at" must not cut "was"/"is" apart
    assert queries[0][start : len(queries[0]) - end] == "is red?"
    assert queries[1][start : len(queries[1]) - end] == "was blue?"


def test_one_query_is_all_question():
    assert shared_affixes(["only one"]) == (0, 0)
    assert shared_affixes(["same", "same"]) == (0, 0)
    assert question_texts(pa.array(["  Question: x\nAnswer:"])).to_pylist() == [
        "Question: x\nAnswer:"
    ]


def test_question_texts_of_two_templates_normalize_alike():
    fewshot = pa.array(
        [f"Q: 1+1?\nA: 2\n\nQuestion: {q}\nAnswer:" for q in ("Is it red?", "Is it blue?")]
    )
    chat = pa.array(
        [f'<user>Think.\n  Question: "{q}"\n</user>' for q in ("Is it red?", "Is it blue?")]
    )
    a = normalize(question_texts(fewshot)).to_pylist()
    b = normalize(question_texts(chat)).to_pylist()
    assert a == b == ["red?", "blue?"]


def test_normalize_quotes_space_case():
    assert normalize(pa.array(["  “Hello”\n\t 'World'  "])).to_pylist() == ["hello world"]
    assert normalize_text("  “Hello”\n\t 'World'  ") == "hello world"


def test_keys_shared_within_a_unit_are_ambiguous():
    table = pa.table(
        {
            "unit": [0, 0, 0, 1],
            "question": ["a", "a", "b", "a"],
            "choices_key": ["x", "x", "x", "x"],
            "gold_key": ["0", "0", "0", "0"],
        }
    )
    ids = question_keys(table).to_pylist()
    assert ids[0].endswith(f"{AMBIGUOUS_MARK}1") and ids[1].endswith(f"{AMBIGUOUS_MARK}2")
    assert ids[2].startswith("q:") and AMBIGUOUS_MARK not in ids[2]
    # the same question in another unit (another task or run) is not ambiguous
    assert ids[3] == ids[0].split(AMBIGUOUS_MARK)[0]
    # gold and options are part of the key
    other_gold = question_keys(table.set_column(3, "gold_key", pa.array(["1"] * 4))).to_pylist()
    assert other_gold[2] != ids[2]


def test_links_only_when_unique_both_ways():
    q1 = "Which river flows through the city of Vienna?"
    q2 = "Which river flows through the city of Budapest?"
    base = [("b1", q1, f"shots\n{q1}\nAnswer:"), ("b2", q2, f"shots\n{q2}\nAnswer:")]
    post = [("p1", f'"{q1}"', f"<chat>{q1}</chat>"), ("p2", "short?", "<chat>short?</chat>")]
    assert link_candidates(base, post) == [("b1", "p1")]
    # a post question found in two base prompts links to neither
    both = [("b1", "x", f"{q1} {q2}"), ("b2", "y", f"{q1}")]
    assert link_candidates(both, [("p1", q1, "nothing")]) == []
