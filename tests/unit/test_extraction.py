"""Answer extraction of the evaluation worker: tables of real-looking model responses."""

from __future__ import annotations

import time
import unicodedata

import pytest
from forgetmap.worker.benchmarks.extraction import (
    Extraction,
    extract_choice,
    extract_number,
    grade_choice,
    grade_number,
    normalize_number,
    numbers_equal,
)

ABCD = "ABCD"
LETTERS_18 = [chr(ord("A") + i) for i in range(18)]  # A..R (reasoning_about_colored_objects)
LETTERS_6 = "ABCDEF"

COT_PAPER = """Let's work through this step by step.

The question asks which organelle is responsible for producing ATP in eukaryotic cells.
(A) The nucleus stores genetic material; it does not produce ATP.
(B) The ribosome synthesizes proteins.
(C) The mitochondrion carries out oxidative phosphorylation, producing most of the cell's ATP.
(D) The Golgi apparatus modifies and packages proteins.

Answer: C"""

ECHO_PROMPT = """The last line of my response should be of the form 'Answer: $LETTER' where LETTER \
is one of ABCD.

Okay. Mercury is the planet closest to the Sun, and the options list it second.

Answer: B"""

BASE_MMLU = """ B

Question: Which of the following is a prime number?
A. 4
B. 6
C. 7
D. 9
Answer: C"""

BASE_BBH = """ Let's think step by step.
The sentence says the meeting was moved from Tuesday to two days later, which is Thursday.
So the answer is (B).

Q: Today is Christmas Eve of 1937. What is the date tomorrow in MM/DD/YYYY?
Options:
(A) 12/11/1937
(B) 12/25/1937
A: Let's think step by step. So the answer is (A)."""

THINK_AFTER = """<think>
The user asks about the boiling point. Maybe A? Answer: A would be 50 C, too low.
Actually at sea level water boils at 100 C, which is option C.
</think>

The correct option is **C**."""

THINK_UNCLOSED = """<think>
Let me compare the two dates. 03/05 is earlier than 04/05, so the answer is B"""

THINK_CLOSE_ONLY = """Okay, the statement contradicts itself, so it cannot be valid. Answer: A \
seems tempting
but A assumes the premise.
</think>

Answer: D"""

THINK_NOTHING_AFTER = """<think>
Penguins listed: Louis, Bernard, Vincent, Gwen. The oldest is Bernard. Answer: B
</think>
"""

CHAT_RESTATES_QUESTION = """Question: What is the capital of Australia?

Many people think Sydney, but the capital is Canberra.

Answer: B"""

CHAT_ANSWER_THEN_CONTINUES = """Answer: C

Question: What is the boiling point of water at sea level in Fahrenheit?
A. 100
B. 180
C. 212
D. 32
Answer: C"""

OPTION_LISTING = """Let's check each option:
A. 12 - too small
B. 15 - matches the total
C. 18 - too big
D. 21 - too big
So B."""

CODE_BLOCK = """Here is the result of running the snippet:

```
Answer: D
```"""

CODE_BLOCK_PROGRAM = """```python
def pick():
    return 'B'
print(pick())
```
The program prints B."""


# (id, response, letters, expected letter or None, expected level or None)
CHOICE_CASES = [
    ("paper_chat_format", COT_PAPER, ABCD, "C", 2),
    ("answer_is_paren_period", "The answer is (C).", ABCD, "C", 3),
    (
        "markdown_bold_answer",
        "Looking at the data, the trend is increasing.\n\n**Answer:** (B)",
        ABCD,
        "B",
        2,
    ),
    ("boxed", "So the best match is the third option, i.e. $\\boxed{C}$.", ABCD, "C", 2),
    ("text_paren_latex", "Answer: $\\text{(B)}$", ABCD, "B", 2),
    ("boxed_text", "Therefore $\\boxed{\\text{D}}$", ABCD, "D", 2),
    (
        "final_answer_i_hope",
        "Final Answer: The final answer is B. I hope it is correct.",
        ABCD,
        "B",
        1,
    ),
    ("final_answer_loose", "The final answer to this question is (D).", ABCD, "D", 1),
    (
        "final_beats_answer",
        "Answer: A\nWait, that ignores friction. The final answer is B",
        ABCD,
        "B",
        1,
    ),
    ("several_letters", "A is wrong, B is wrong, so the answer is C", ABCD, "C", 3),
    # lighteval: the lazy gap after "Answer:" stops at the first letter, so a hedge counts as A.
    ("answer_a_or_b", "Answer: A or B", ABCD, "A", 2),
    # lighteval-compatible limitation: the first letter after the anchor, even when negated.
    ("answer_is_not_a", "The answer is not A; it is D.", ABCD, "A", 3),
    (
        "rightmost_answer_wins",
        "Answer: B\nHmm, let me double check the units.\nAnswer: D",
        ABCD,
        "D",
        2,
    ),
    ("lowercase_end_of_line", "After simplifying, answer: c", ABCD, "C", 2),
    ("lowercase_paren", "I would go with choice (d).", ABCD, "D", 3),
    (
        "lowercase_word_then_paren",
        "The answer is a bit subtle. Looking again, (b) is right.",
        ABCD,
        "B",
        3,
    ),
    ("lowercase_word_only", "The answer is a bit tricky to pin down.", ABCD, None, None),
    ("uppercase_answer_word", "ANSWER: (A)", ABCD, "A", 2),
    ("answer_colon_blank_line", "Reasoning done.\n\nAnswer:\n\n**C**", ABCD, "C", 2),
    ("bold_with_period", "**Answer: B.**", ABCD, "B", 2),
    ("inline_math_letter", "Since the sum is even, the answer is $B$.", ABCD, "B", 3),
    ("answer_is_colon_bold", "The correct answer is: **B) Paris**", ABCD, "B", 3),
    (
        "option_word",
        "After comparing both arguments, Option B is the most consistent.",
        ABCD,
        "B",
        3,
    ),
    ("choice_word_lower", "Clearly choice (d) fits the description.", ABCD, "D", 3),
    ("code_block", CODE_BLOCK, ABCD, "D", 2),
    ("code_block_program", CODE_BLOCK_PROGRAM, ABCD, "B", 5),
    ("think_answer_after", THINK_AFTER, ABCD, "C", 3),
    ("think_unclosed_fallback", THINK_UNCLOSED, ABCD, "B", 3),
    ("think_close_tag_only", THINK_CLOSE_ONLY, ABCD, "D", 2),
    ("think_nothing_after", THINK_NOTHING_AFTER, ABCD, "B", 2),
    ("base_fewshot_continuation", BASE_MMLU, ABCD, "B", 4),
    (
        "base_fewshot_paren",
        " (C) 42 meters\n\nQuestion: How tall is the tower?\nAnswer: (A)",
        ABCD,
        "C",
        4,
    ),
    ("base_bbh_continuation", BASE_BBH, ABCD, "B", 3),
    ("chat_restates_question", CHAT_RESTATES_QUESTION, ABCD, "B", 2),
    ("chat_answer_then_hallucinates", CHAT_ANSWER_THEN_CONTINUES, ABCD, "C", 2),
    ("echo_paper_prompt", ECHO_PROMPT, ABCD, "B", 2),
    ("only_placeholder", "Answer: $LETTER", ABCD, None, None),
    ("outside_set", "The answer is E.", ABCD, None, None),
    ("outside_set_then_valid", "Answer: E... no, E is not offered here, it is B", ABCD, "B", 2),
    ("letters_18", "Counting the objects by color, the answer is (Q).", LETTERS_18, "Q", 3),
    ("letters_18_outside", "Answer: (S) is not an option, so (P).", LETTERS_18, "P", 2),
    ("letters_18_answer_i", "Answer: I", LETTERS_18, "I", 2),
    ("letters_18_pronoun_i", "Answer: I think it is (F)", LETTERS_18, "F", 2),
    ("letters_18_i_think_bare", "I think the remaining item is the (K).", LETTERS_18, "K", 5),
    ("letters_6_date", "The date one week later is 05/19/2021, which is (E).", LETTERS_6, "E", 5),
    ("article_a_bare", "A careful reading shows that B fits best.", ABCD, "B", 5),
    ("no_answer", "I'm not sure about this one.", ABCD, None, None),
    ("empty", "", ABCD, None, None),
    ("full_width_colon", "Answer：Ｃ", ABCD, "C", 2),
    ("full_width_paren", "答案是（Ｂ）。", ABCD, "B", 5),
    ("cjk_adjacent", "答案是B", ABCD, "B", 5),
    ("abbreviations", "Based on the D.C. circuit ruling, C is right.", ABCD, "C", 5),
    ("two_letters_bare", "Between B and D, D is better supported.", ABCD, "D", 5),
    (
        "line_start_alone",
        "Let me think about this.\n\nB\n\nBecause the enzyme is denatured.",
        ABCD,
        "B",
        4,
    ),
    ("option_listing", OPTION_LISTING, ABCD, "B", 5),
    ("start_subject_sentence", "A is too small and D is too large, so C.", ABCD, "C", 5),
    ("lowercase_enumerator_line", "Reviewing the list:\nc) the only valid one", ABCD, "C", 4),
    ("boxed_textbf_paren", "Therefore, the answer is $\\boxed{\\textbf{(C)}}$", ABCD, "C", 2),
    ("answer_letter_paren_text", "Answer: B) The mitochondria", ABCD, "B", 2),
    ("answer_bold_option", "Answer: **Option C**", ABCD, "C", 2),
    ("answer_lower_paren", "The answer is (a).", ABCD, "A", 3),
    ("empty_think_then_letter", "<think>\n\n</think>\n\nB", ABCD, "B", 4),
    ("single_lowercase_letter", "a", ABCD, "A", 4),
    ("article_sentence_only", "a cat sat on the mat", ABCD, None, None),
]


@pytest.mark.parametrize(
    ("response", "letters", "expected", "level"),
    [pytest.param(r, letters, e, lv, id=i) for i, r, letters, e, lv in CHOICE_CASES],
)
def test_extract_choice(response, letters, expected, level):
    result = extract_choice(response, letters)
    if expected is None:
        assert result is None
        return
    assert result is not None
    assert result.answer == expected
    assert result.level == level
    start, end = result.span
    assert 0 <= start < end <= len(response)
    assert unicodedata.normalize("NFKC", response[start:end]).upper() == expected


def test_choice_table_is_large_enough():
    assert len(CHOICE_CASES) >= 40
    assert len({case[0] for case in CHOICE_CASES}) == len(CHOICE_CASES)


def test_letter_spelling_follows_letters_argument():
    result = extract_choice("The answer is (C).", ["a", "b", "c", "d"])
    assert result == Extraction("c", 3, (15, 16))


def test_never_returns_letter_outside_set():
    text = "Options E, F and G are all wrong; the answer is (F). Answer: G"
    assert extract_choice(text, "ABCD") is None
    assert extract_choice(text, "ABCDEFG").answer == "G"


def test_bad_letters_rejected():
    with pytest.raises(ValueError):
        extract_choice("A", [])
    with pytest.raises(ValueError):
        extract_choice("A", ["A", "BB"])
    with pytest.raises(ValueError):
        extract_choice("A", ["A", "a"])


def test_grade_choice():
    ok, ext = grade_choice(COT_PAPER, ABCD, "C")
    assert ok and ext is not None and ext.answer == "C"
    ok, ext = grade_choice(COT_PAPER, ABCD, "c")
    assert ok
    ok, ext = grade_choice(COT_PAPER, ABCD, "A")
    assert not ok and ext is not None
    ok, ext = grade_choice("no idea", ABCD, "A")
    assert not ok and ext is None
    with pytest.raises(ValueError):
        grade_choice(COT_PAPER, ABCD, "E")


def test_long_response_is_fast():
    filler = "We consider the forces acting on the block and the friction coefficient. " * 1500
    text = "<think>" + filler + "</think>\n" + filler + "\nAnswer: B"
    start = time.perf_counter()
    assert extract_choice(text, LETTERS_18).answer == "B"
    assert extract_number(text + " with 12 apples") is not None
    assert time.perf_counter() - start < 5.0


# ---------------------------------------------------------------------------------------------
# Numbers

GSM8K_GOLD_STYLE = """Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.
She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer's market.
#### 18"""

GSM8K_COT = """Natalia sold 48/2 = 24 clips in May.
Natalia sold 48 + 24 = 72 clips altogether in April and May.
The answer is 72."""

GSM8K_CONTINUATION = """ Each box holds 6 eggs, so 3 boxes hold 3 * 6 = 18 eggs. The answer is 18.

Question: Tom has 3 apples and buys 2 more. How many apples does he have?
Answer: 3 + 2 = 5. The answer is 5."""

NUM_THINK = """<think>
First guess: 12 cookies. But she ate 2, and then baked 5 more... let me recount.
</think>

She has 15 cookies. The answer is 15."""

# (id, response, expected normalized answer or None, expected level, expected span text)
NUMBER_CASES = [
    ("gsm8k_hashes", GSM8K_GOLD_STYLE, "18", 3, "18"),
    ("gsm8k_cot_answer_is", GSM8K_COT, "72", 4, "72"),
    ("continuation_cut", GSM8K_CONTINUATION, "18", 4, "18"),
    ("thousands_units", "The answer is 1,234 dollars.", "1234", 4, "1,234"),
    ("boxed_negative", "Solving gives $x = \\boxed{-5}$.", "-5", 2, "-5"),
    ("boxed_equation", "Thus \\boxed{x = 12}", "12", 2, "12"),
    ("boxed_dfrac", "The probability is $\\boxed{\\dfrac{1}{3}}$.", "1/3", 2, "\\dfrac{1}{3}"),
    (
        "final_answer_latex_frac",
        "The final answer is $\\frac{3}{4}$. I hope it is correct.",
        "0.75",
        1,
        "\\frac{3}{4}",
    ),
    ("final_answer_slash", "So the final answer is 3/4.", "0.75", 1, "3/4"),
    (
        "last_number_units",
        "She walks 3 miles a day, so in a week she walks 21 miles.",
        "21",
        5,
        "21",
    ),
    ("dollars_cents", "In total she pays $18.00", "18", 5, "18.00"),
    ("negative_last", "The temperature ends at -12 degrees.", "-12", 5, "-12"),
    ("answer_decimal", "Answer: 0.50", "0.5", 4, "0.50"),
    ("answer_millions_bold", "**Answer:** 1,000,000", "1000000", 4, "1,000,000"),
    ("answer_after_equals", "Answer: 16 - 3 - 4 = 9", "9", 4, "9"),
    (
        "answer_merged_rightmost",
        "Answer: Janet has 16 eggs and eats 3.\nThe answer is 13.",
        "13",
        4,
        "13",
    ),
    ("hashes_thousands", "Total: 1000 + 234 = 1234\n#### 1,234", "1234", 3, "1,234"),
    ("think_ignored", NUM_THINK, "15", 4, "15"),
    ("think_fallback", "<think>so 40 + 2 = 42, the answer is 42", "42", 4, "42"),
    ("leading_zeros", "Agent number 007", "7", 5, "007"),
    ("percent", "The discount is 25%.", "25", 5, "25"),
    ("version_string", "Version 1.2.3 was released; it fixed 7 bugs.", "7", 5, "7"),
    ("range_is_not_negative", "The trip takes 3-4 hours", "4", 5, "4"),
    ("unicode_minus", "The balance is −7 dollars", "-7", 5, "−7"),
    ("full_width_digits", "答案是１２", "12", 5, "１２"),
    ("decimal_negative", "#### -3.5", "-3.5", 3, "-3.5"),
    ("mixed_number", "Answer: 1 1/2 cups", "1.5", 4, "1 1/2"),
    ("negative_currency", "Her balance is -$5 now", "-5", 5, "-$5"),
    ("euro_cents", "It costs €12.50.", "12.5", 5, "12.50"),
    ("boxed_thousands", "\\boxed{1,200}", "1200", 2, "1,200"),
    ("boxed_zero_division_skipped", "\\boxed{\\frac{1}{0}} then 7", "7", 5, "7"),
    ("arabic_indic_digits_ignored", "Result: ٣", None, None, None),
    ("no_number", "I cannot determine this from the information given.", None, None, None),
    ("empty", "", None, None, None),
]


@pytest.mark.parametrize(
    ("response", "expected", "level", "span_text"),
    [pytest.param(r, e, lv, s, id=i) for i, r, e, lv, s in NUMBER_CASES],
)
def test_extract_number(response, expected, level, span_text):
    result = extract_number(response)
    if expected is None:
        assert result is None
        return
    assert result is not None
    assert result.answer == expected
    assert result.level == level
    start, end = result.span
    assert response[start:end] == span_text


def test_number_table_is_large_enough():
    assert len(NUMBER_CASES) >= 15


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("1,234", "1234", True),
        ("0.75", "3/4", True),
        ("18.0", "18", True),
        ("$18", "18", True),
        ("1/3", "0.3333333", True),
        ("-3.5", "-7/2", True),
        ("1e3", "1000", True),
        ("18", "19", False),
        ("0.5", "-0.5", False),
        ("abc", "1", False),
        ("", "0", False),
        ("#### 72", "72", True),
    ],
)
def test_numbers_equal(a, b, equal):
    assert numbers_equal(a, b) is equal
    assert numbers_equal(b, a) is equal


def test_numbers_equal_tolerance():
    assert numbers_equal("100", "100.00001", rel_tol=1e-6)
    assert not numbers_equal("100", "100.001", rel_tol=1e-6)
    assert numbers_equal("100", "100.001", rel_tol=1e-4)


def test_normalize_number():
    assert normalize_number("1,234.50") == "1234.5"
    assert normalize_number("-0") == "0"
    assert normalize_number("3/4") == "0.75"
    assert normalize_number("2/6") == "1/3"
    assert normalize_number("1/0") is None
    assert normalize_number("nothing") is None


def test_grade_number():
    ok, ext = grade_number(GSM8K_GOLD_STYLE, "18")
    assert ok and ext is not None and ext.answer == "18"
    ok, ext = grade_number(GSM8K_COT, "72.0")
    assert ok
    ok, ext = grade_number(GSM8K_CONTINUATION, "5")
    assert not ok and ext is not None and ext.answer == "18"
    ok, ext = grade_number("no idea", "5")
    assert not ok and ext is None
