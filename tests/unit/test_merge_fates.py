"""The merge path's question fates (forgetmap.analysis.merge_fates) against hand-read answers."""

import pytest
from forgetmap.analysis.merge_fates import Fate, fate_counts, question_fates
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.unit

# rows: a question's answers at mixes 0 (base), .25, .5, .75, 1 (post); 1 right, 0 wrong
TABLE = {
    "q1": "11100",  # forgotten; right up to .5: undone at .5
    "q2": "11110",  # forgotten; undone at .75, the merge nearest the post model
    "q3": "10000",  # forgotten and never undone
    "q4": "10100",  # forgotten; right at .5 only: undone at .5
    "q5": "11011",  # right at both ends, wrong at .5: newly forgotten by the merge
    "q6": "10101",  # right at both ends, wrong at .25 and .75
    "q7": "00001",  # learned by the post model: no fate here
    "q8": "11111",  # kept everywhere
    "q9": "00100",  # never right at the ends
}
MIXES = [0.0, 0.25, 0.5, 0.75, 1.0]


def _answers(table):
    return {m: {q: row[i] == "1" for q, row in table.items()} for i, m in enumerate(MIXES)}


def test_the_fates_of_a_hand_read_sweep():
    assert question_fates(_answers(TABLE)) == [
        Fate("q1", "undone", undone_at=0.5),
        Fate("q2", "undone", undone_at=0.75),
        Fate("q3", "never_undone"),
        Fate("q4", "undone", undone_at=0.5),
        Fate("q5", "newly_forgotten", forgotten_at=(0.5,)),
        Fate("q6", "newly_forgotten", forgotten_at=(0.25, 0.75)),
    ]
    assert fate_counts(question_fates(_answers(TABLE)), MIXES) == {
        "undone": 3,
        "never_undone": 1,
        "newly_forgotten": 2,
        "undone@0.25": 0,
        "undone@0.5": 2,
        "undone@0.75": 1,
        "newly_forgotten@0.25": 1,
        "newly_forgotten@0.5": 1,
        "newly_forgotten@0.75": 1,
    }


def test_the_ends_are_required_and_aligned():
    with pytest.raises(ValueError, match="mix 0 .* and mix 1"):
        question_fates({0.0: {"q": True}, 0.5: {"q": True}})
    with pytest.raises(ValueError, match="other questions"):
        question_fates({0.0: {"q": True}, 1.0: {"r": True}})
    # the ends alone: every forgotten question is never undone, nothing newly forgotten
    assert question_fates({0.0: {"a": True, "b": True}, 1.0: {"a": False, "b": True}}) == [
        Fate("a", "never_undone")
    ]


@given(st.lists(st.text("01", min_size=5, max_size=5), min_size=1, max_size=30))
def test_each_forgotten_question_has_one_fate_and_only_those(rows):
    table = {f"q{i}": row for i, row in enumerate(rows)}
    fates = {f.question: f for f in question_fates(_answers(table))}
    for q, row in table.items():
        if row[0] == "1" and row[4] == "0":
            assert fates[q].fate in ("undone", "never_undone")
            if fates[q].fate == "undone":
                i = MIXES.index(fates[q].undone_at)
                assert row[i] == "1" and "1" not in row[i + 1 : 4]
        elif row[0] == "1" and row[4] == "1" and "0" in row[1:4]:
            assert fates[q].fate == "newly_forgotten"
        else:
            assert q not in fates
