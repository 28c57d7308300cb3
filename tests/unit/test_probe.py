"""The probe's pure part (forgetmap.analysis.probe): contexts, the tie rule, the shuffled control
as a derangement, and the report against hand-computed numbers."""

from __future__ import annotations

import math

import pytest
from forgetmap.analysis.probe import (
    FINAL_ANSWER,
    FORCED_ANSWER,
    ProbeItem,
    ProbeOutcome,
    option_labels,
    outcome_of,
    probe_context,
    probe_report,
    regenerated_outcome,
    regeneration_context,
    shuffled_answers,
)
from hypothesis import given, settings
from hypothesis import strategies as st


def _item(i: int, k: int = 4, gold: int = 0) -> ProbeItem:
    return ProbeItem(f"q{i}", f"Question {i}?\nAnswer:", f" answer {i}", k, gold)


def test_the_context_is_prompt_then_answer_then_the_forced_prefix():
    item = _item(3)
    assert probe_context(item) == "Question 3?\nAnswer: answer 3" + FORCED_ANSWER
    assert probe_context(item, " So: (") == "Question 3?\nAnswer: answer 3 So: ("
    assert option_labels(3) == ["A", "B", "C"]


def test_the_gold_option_must_win_outright():
    item = _item(0, k=3, gold=1)
    assert outcome_of(item, [-2.0, -0.5, -1.0]).recovered
    assert outcome_of(item, [-0.1, -0.5, -1.0]).chosen == 0
    tie = outcome_of(item, [-0.5, -0.5, -1.0])
    assert tie.chosen is None and not tie.recovered
    with pytest.raises(ValueError, match="2 scores for 3 options"):
        outcome_of(item, [-1.0, -2.0])


def test_items_out_of_range_are_refused():
    with pytest.raises(ValueError, match="2 to 26 options"):
        ProbeItem("q", "p", "a", 1, 0)
    with pytest.raises(ValueError, match="gold option 4 is not among 4"):
        ProbeItem("q", "p", "a", 4, 4)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 40), seed=st.integers(0, 10**6))
def test_the_shuffled_control_gives_every_item_another_items_answer(n, seed):
    items = [_item(i) for i in range(n)]
    shuffled = shuffled_answers(items, seed)
    if n < 2:
        assert shuffled == []
        return
    assert [s.key for s in shuffled] == [i.key for i in items]  # the same questions, in order
    assert [s.gold for s in shuffled] == [i.gold for i in items]
    assert sorted(s.answer for s in shuffled) == sorted(i.answer for i in items)  # a permutation
    assert all(s.answer != i.answer for s, i in zip(shuffled, items, strict=True))  # none kept
    assert shuffled == shuffled_answers(items, seed)  # seeded


def _outcomes(pattern: str, k: int = 4) -> list[ProbeOutcome]:
    """'1' recovered, '0' another option chosen, 't' a tie."""
    return [
        ProbeOutcome(f"q{i}", {"1": 0, "0": 1, "t": None}[c], 0, k) for i, c in enumerate(pattern)
    ]


def test_the_report_against_hand_counts():
    report = probe_report(
        {
            "flips": _outcomes("1111111100"),  # 8 of 10
            "shuffled": _outcomes("10000t0000"),  # 1 of 10 (a tie is no recovery)
            "kept": _outcomes("11111", k=2),  # 5 of 5, chance 1/2
        }
    )
    arms = report["arms"]
    assert arms["flips"] == {"n": 10, "recovered": 8, "rate": 0.8, "chance": 0.25}
    assert arms["shuffled"]["recovered"] == 1 and arms["shuffled"]["rate"] == 0.1
    assert arms["kept"] == {"n": 5, "recovered": 5, "rate": 1.0, "chance": 0.5}
    assert arms["base"] == {"n": 0, "recovered": 0, "rate": None, "chance": None}
    beyond = report["recovered_beyond_shuffled"]
    half = 1.959963984540054 * math.sqrt(0.8 * 0.2 / 10 + 0.1 * 0.9 / 10)  # 0.3099
    assert beyond["difference"] == pytest.approx(0.7)
    assert beyond["low"] == pytest.approx(0.7 - half) and beyond["high"] == pytest.approx(1.0)
    assert probe_report({"flips": _outcomes("1")})["recovered_beyond_shuffled"] is None
    with pytest.raises(ValueError, match="unknown probe arms"):
        probe_report({"flipz": []})


@pytest.mark.parametrize(
    ("gold", "choices", "k", "expected"),
    [
        ("B", None, 4, 1),
        (" C ", None, 3, 2),
        ("D", None, 3, None),  # a letter past the options
        ("2", None, 4, 2),
        ("7", None, 4, None),
        ("Paris", ["Rome", " Paris", "Oslo"], 3, 1),
        ("Paris", ["Paris", "Paris", "Oslo"], 3, None),  # two options say it: none is gold
        ("Paris", ["Rome", "Oslo"], 3, None),  # the choices do not match the count
        ("A", None, None, None),  # generative
        (None, None, 4, None),
    ],
)
def test_the_gold_option_from_the_stored_row(gold, choices, k, expected):
    from forgetmap.analysis.probe import gold_option

    assert gold_option(gold, choices, k) == expected


def _generative(i: int) -> ProbeItem:
    return ProbeItem(f"g{i}", f"What is {i} + {i}?", f" I think {i + i}.", 0, 0, str(2 * i))


def test_a_generative_item_needs_its_answer_and_gold_zero():
    assert _generative(2).generative and not _item(0).generative
    with pytest.raises(ValueError, match="gold 0 and its answer"):
        ProbeItem("g", "Q", " A", 0, 1, "4")
    with pytest.raises(ValueError, match="gold 0 and its answer"):
        ProbeItem("g", "Q", " A", 0, 0, None)
    assert regeneration_context(_generative(2)) == "What is 2 + 2? I think 4." + FINAL_ANSWER
    right, wrong = (
        regenerated_outcome(_generative(2), True),
        regenerated_outcome(_generative(2), False),
    )
    assert right.recovered and (right.chosen, right.gold, right.num_choices) == (0, 0, 0)
    assert not wrong.recovered and wrong.chosen is None


def test_the_shuffled_control_keeps_the_kinds_apart():
    items = [_item(0), _generative(1), _item(2), _generative(3), _item(4)]
    shuffled = shuffled_answers(items, 3)
    assert [s.key for s in shuffled] == [i.key for i in items]
    by_key = {i.key: i for i in items}
    for s in shuffled:
        own = by_key[s.key]
        assert s.answer != own.answer and s.gold_answer == own.gold_answer
        # a multiple-choice flip shows another multiple-choice answer, a generative one another's
        assert s.answer.startswith(" I think") == own.generative
    # one generative item alone: nothing to swap it with; the multiple-choice ones still are
    lone = shuffled_answers([_item(0), _item(1), _generative(2)], 0)
    assert [s.key for s in lone] == ["q0", "q1"]
    # without generative items the order is the one it always was (the same seeded derangement)
    only = [_item(i) for i in range(6)]
    assert shuffled_answers(only, 5) == shuffled_answers(only + [_generative(9)], 5)[:6]


def test_a_generative_items_chance_is_zero():
    outcomes = [ProbeOutcome("g0", 0, 0, 0), ProbeOutcome("g1", None, 0, 0), *_outcomes("10")]
    report = probe_report({"flips": outcomes})
    assert report["arms"]["flips"]["rate"] == 0.5
    assert report["arms"]["flips"]["chance"] == pytest.approx((0 + 0 + 0.25 + 0.25) / 4)
