"""The extractors `forgetmap rescore` runs (forgetmap.core.extractors), on answers written as chat
models write them: which rule of the lenient cascade fires, and which answers no rule names."""

from __future__ import annotations

import pytest
from forgetmap.core import extractors
from forgetmap.core.answer_status import ANSWERED, NO_ANSWER
from forgetmap.core.errors import InputError
from forgetmap.core.extractors import (
    Extracted,
    extractor,
    gold_options,
    is_loglikelihood,
    lenient_choice,
    score_lenient,
    score_math,
)

NUMBERS = ["12", "15", "18", "21"]
CAPITALS = ["London", "Paris", "Berlin", "Madrid"]

# (response, choices, the option it names, the rule that fires)
NAMED = [
    # 1. statements: the last one wins
    (
        "Let's work through it. The shop sells 5 boxes of 3, so 15 items in all.\n\n"
        "**Answer: (C)**",
        None,
        "C",
        "statement",
    ),
    ("The correct option is B.", None, "B", "statement"),
    (
        "I first thought the answer is A, but rechecking the units, the answer is (D).",
        None,
        "D",
        "statement",
    ),
    ("Final Answer: The final answer is (C). I hope it is correct.", None, "C", "statement"),
    ("**Answer:**\n\n(B)", None, "B", "statement"),
    ("Therefore the answer would be c.", None, "C", "statement"),
    ("So, we get $\\boxed{B}$.", None, "B", "statement"),
    (
        "<think>Maybe A? No, the derivative is negative.</think>\nThe answer is D.",
        None,
        "D",
        "statement",
    ),
    ("Answer: A", None, "A", "statement"),
    # 2. the last line alone
    ("Mitochondria produce ATP through oxidative phosphorylation.\n\nB", None, "B", "bare_line"),
    (
        "Comparing the remaining two, the second fits the data better.\n**(D)**",
        None,
        "D",
        "bare_line",
    ),
    ("All three conditions hold for the second case.\n\nC.", None, "C", "bare_line"),
    # a base model going on with the next few-shot question: cut there
    ("B\n\nQuestion: What is the boiling point of water?\nAnswer: C", None, "B", "bare_line"),
    # 3. the last standalone letter
    (
        "A. 12 - too small\nB. 15 - matches 3 x 5\nC. 18 - too big\nD. 21 - too big\nSo B",
        NUMBERS,
        "B",
        "letter",
    ),
    ("A good first step is to rule out the extremes. I think it's C", None, "C", "letter"),
    (
        "Option A is wrong because the sign flips. B is incorrect too. That leaves C.",
        None,
        "C",
        "letter",
    ),
    ("Looking at the U.S. data, I'm fairly sure D fits best", None, "D", "letter"),
    # 4. one option's text
    ('The capital of France is "Paris".', CAPITALS, "B", "option_text"),
    ("It is most likely paris, given the river mentioned.", CAPITALS, "B", "option_text"),
    ("That describes Paris, Texas.", ["Paris", "Paris, Texas", "Rome", "Oslo"], "B", "option_text"),
    # 5. the last number equal to one option's value
    ("There are 3 boxes with 5 apples each, so 3 * 5 = 15 apples.", NUMBERS, "B", "number"),
    ("A. 12\nB. 15\nC. 18\nD. 21\nAdding 6 to 12 gives 18.", NUMBERS, "C", "number"),
    ("Half of 42 is $21.", ["$12", "$15", "$18", "$21"], "D", "number"),
    ("The rate is 3/4 of the original.", ["1/4", "1/2", "3/4", "1"], "C", "number"),
]

# responses no rule names an option in
UNNAMED = [
    ("It depends on the specific numbers, which the question does not give.", NUMBERS),
    ("The answer is either A or B, depending on the convention.", None),
    ("I'm not sure; the question seems ambiguous.", None),
    ("A good question. I would need more context.", None),
    ("The answer is a bit tricky to pin down.", None),
    ("B is incorrect.", None),
    ("Both London and Paris are large capitals.", CAPITALS),
    ("There are 7 of them.", NUMBERS),
    ("A. 12 - too small\nB. 15 - too small\nC. 18 - too big\nD. 21 - too big", NUMBERS),
]


@pytest.mark.parametrize(("response", "choices", "letter", "rule"), NAMED)
def test_the_lenient_cascade_names_the_option_by_its_rule(response, choices, letter, rule):
    found = lenient_choice(response, choices, 4)
    assert found is not None, response
    assert ("ABCD"[found.index], found.rule) == (letter, rule)


@pytest.mark.parametrize(("response", "choices"), UNNAMED)
def test_answers_no_rule_names_stay_none(response, choices):
    assert lenient_choice(response, choices, 4) is None


def test_rules_are_tried_in_the_documented_order():
    assert extractors.RULES == ("statement", "bare_line", "letter", "option_text", "number")
    # a statement beats a later bare letter line and a later number
    found = lenient_choice("The answer is (A).\nOr maybe 18?\nD", NUMBERS, 4)
    assert found == extractors.Choice(0, "statement")
    # the letters past the options shown are not options
    assert lenient_choice("The answer is E.", None, 4) is None
    assert lenient_choice("The answer is E.", None, 5) == extractors.Choice(4, "statement")


def test_lenient_grades_against_the_gold_option():
    assert score_lenient("**Answer: (C)**", CAPITALS, "Berlin", 4) == Extracted(
        "C", True, ANSWERED, "statement"
    )
    assert score_lenient("The answer is B.", CAPITALS, "Berlin", 4) == Extracted(
        "B", False, ANSWERED, "statement"
    )
    assert score_lenient("Hard to say.", CAPITALS, "Berlin", 4) == Extracted(
        None, False, NO_ANSWER, None
    )
    assert score_lenient("The answer is B.", CAPITALS, None, 4) is None  # nothing to grade against


@pytest.mark.parametrize(
    ("gold", "choices", "expected"),
    [
        ("Paris", CAPITALS, {1}),  # an option's text (lighteval)
        (" paris ", CAPITALS, {1}),
        (" B", [" A", " B", " C", " D"], {1}),  # letters as the options' texts
        ("B", None, {1}),  # a letter (inspect)
        ("(B)", None, {1}),
        ("2", None, {2}),  # an index
        ('["Paris", "Berlin"]', CAPITALS, {1, 2}),  # several golds: any is right
        ("Oslo", CAPITALS, set()),
        ("", CAPITALS, set()),
        (None, CAPITALS, set()),
    ],
)
def test_the_gold_option_is_read_from_every_harness_spelling(gold, choices, expected):
    assert gold_options(gold, choices, 4) == frozenset(expected)


@pytest.mark.parametrize(
    ("response", "gold", "prediction", "correct"),
    [
        ("So the probability is $\\boxed{\\frac{1}{2}}$.", "0.5", "\\frac{1}{2}", True),
        ("Each of the 3 friends gets 24 / 3 = 8 cookies. The answer is 8.", "8", "8", True),
        (
            "She sold 48 + 24 = 72 clips.\n#### 72",
            "Natalia sold 48/2 = 24 clips in May.\nNatalia sold 48+24 = 72 clips.\n#### 72",
            "72",
            True,
        ),
        ("The total comes to $\\boxed{1,234}$ dollars.", "1234", "1,234", True),
        ("The answer is 70.", "72", "70", False),
    ],
)
def test_math_verify_compares_with_the_gold(response, gold, prediction, correct):
    assert score_math(response, None, gold, None) == Extracted(
        prediction, correct, ANSWERED, "math_verify"
    )


def test_math_without_an_answer_or_a_gold():
    assert score_math("It depends on the specific numbers.", None, "3", None) == Extracted(
        None, False, NO_ANSWER, None
    )
    assert score_math("The answer is 3.", None, None, None) is None


def test_each_extractor_scores_its_kind_of_row():
    lenient, math = extractor("lenient"), extractor("math")
    assert lenient.scores(4) and not lenient.scores(None)
    assert math.scores(None) and not math.scores(4)


def test_log_likelihood_scores_are_not_responses():
    assert is_loglikelihood("[-1.25,-3,-0.00001]")
    assert is_loglikelihood("[-Infinity,-2.5]")
    assert not is_loglikelihood("[B] is the answer")
    assert not is_loglikelihood("The answer is 3")


class _EntryPoint:
    def __init__(self, name, func):
        self.name, self.value, self.group = name, f"tests:{name}", extractors.ENTRY_POINT_GROUP
        self._func = func

    def load(self):
        return self._func


def _last_word(response, choices, gold):
    del choices, gold
    words = response.split()
    return words[-1].strip(".") if words else None


def test_a_user_extractor_is_an_entry_point(monkeypatch):
    points = [_EntryPoint("last_word", _last_word)]
    monkeypatch.setattr(
        extractors.metadata,
        "entry_points",
        lambda group: points if group == extractors.ENTRY_POINT_GROUP else [],
    )
    mine = extractor("last_word")
    assert mine.name == "last_word" and mine.scores(4) and mine.scores(None)
    # multiple choice: the text names an option (a letter or an option's text)
    assert mine.score("I pick Paris.", CAPITALS, "Paris", 4) == Extracted(
        "Paris", True, ANSWERED, "last_word"
    )
    assert mine.score("I pick B.", CAPITALS, "Berlin", 4) == Extracted(
        "B", False, ANSWERED, "last_word"
    )
    # generative: equal to the gold up to case and spaces, or as numbers
    assert mine.score("so it is 18.0", None, "#### 18", None).correct
    assert mine.score("", None, "18", None) == Extracted(None, False, NO_ANSWER, None)
    with pytest.raises(InputError, match="choose among lenient, math, last_word"):
        extractor("first_word")


def test_a_user_extractor_must_answer_text(monkeypatch):
    points = [_EntryPoint("bad", lambda response, choices, gold: 3)]
    monkeypatch.setattr(extractors.metadata, "entry_points", lambda group: points)
    with pytest.raises(InputError, match="must answer a str or None"):
        extractor("bad").score("x", None, "3", None)
