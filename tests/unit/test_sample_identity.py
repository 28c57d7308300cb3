"""Sample identity across prompt templates: shared affixes, normalization, keys, text links."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from forgetmap.core.sample_identity import (
    AMBIGUOUS_MARK,
    _shares_a_key,
    identify,
    link_candidates,
    normalize_text,
    normalized_texts,
    question_texts,
    unit_affixes,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st


def _ids(rows: pa.Table):
    """(sample ids, questions) as the lighteval reader makes them: per unit the shared affixes
    are removed and the id flag is set, then the ids come from one identify() call."""
    units = rows["unit"].to_pylist()
    questions, has_ids = [], []
    for u in sorted(set(units)):
        mine = rows.filter(pc.equal(rows["unit"], u))
        questions.append(question_texts(mine["query"], *unit_affixes(mine["query"]).words))
        ids = mine["doc_id"].to_pylist()
        has_ids.extend([all(i is not None and i.strip() for i in ids)] * mine.num_rows)
    ordered = rows.sort_by("unit")
    question = pa.chunked_array(questions).combine_chunks()
    keyed = ordered.append_column("question", question).append_column("has_ids", pa.array(has_ids))
    # back to the rows' own order
    back = pc.sort_indices(pc.sort_indices(rows["unit"]))
    return pc.take(identify(keyed), back), pc.take(question, back)


def _rows(unit, query, choices_key=None, gold_key=None, doc_id=None):
    n = len(unit)
    return pa.table(
        {
            "unit": pa.array(unit, pa.int32()),
            "query": pa.array(query, pa.string()),
            "choices_key": pa.array(choices_key or ["a\x1fb"] * n, pa.string()),
            "gold_key": pa.array(gold_key or ["0"] * n, pa.string()),
            "doc_id": pa.array(doc_id or [None] * n, pa.string()),
        }
    )


def test_shared_affixes_stop_at_whitespace():
    queries = [
        "Shots...\nQuestion: What is red?\nAnswer:",
        "Shots...\nQuestion: What was blue?\nAnswer:",
    ]
    start, end = unit_affixes(pa.array(queries)).words
    # "What " is shared too, but "Wh" + "at" must not cut "was"/"is" apart
    assert queries[0][start : len(queries[0]) - end] == "is red?"
    assert queries[1][start : len(queries[1]) - end] == "was blue?"


def test_one_query_is_all_question():
    assert unit_affixes(pa.array(["only one"])).words == (0, 0)
    assert unit_affixes(pa.array(["same", "same"])) == ((0, 0), (0, 0))
    _, question = _ids(_rows([0], ["  Question: x\nAnswer:"]))
    assert question.to_pylist() == ["Question: x\nAnswer:"]


def test_question_texts_of_two_templates_normalize_alike():
    questions = ("Is it red?", "Is it blue?")
    fewshot = [f"Q: 1+1?\nA: 2\n\nQuestion: {q}\nAnswer:" for q in questions]
    chat = [f'<user>Think.\n  Question: "{q}"\n</user>' for q in questions]
    ids_a, text_a = _ids(_rows([0, 0], fewshot))
    ids_b, text_b = _ids(_rows([5, 5], chat))
    assert text_a.to_pylist() == ["red?", "blue?"]
    assert text_b.to_pylist() == ['red?"', 'blue?"']  # the quote is normalized away in the key
    assert ids_a.to_pylist() == ids_b.to_pylist()
    assert all(i.startswith("q:") and len(i) == 18 for i in ids_a.to_pylist())


def test_normalize_drops_quotes_and_space_and_folds_case():
    assert normalize_text("  “Hello”\n\t 'World'  ") == "helloworld"
    assert normalize_text("A. Paris\nB. Rome") == normalize_text("a.paris b.rome")
    # identify() normalizes the same way: these two questions get one key
    ids, _ = _ids(_rows([0, 1], ["“Hello”  World", "hello world"]))
    assert ids.to_pylist()[0] == ids.to_pylist()[1]


def test_keys_shared_within_a_unit_are_ambiguous():
    queries = ["Q: a", "Q: a", "Q: b", "X: a", "X: c"]
    ids, _ = _ids(_rows([0, 0, 0, 1, 1], queries))
    ids = ids.to_pylist()
    assert ids[0].endswith(f"{AMBIGUOUS_MARK}1") and ids[1].endswith(f"{AMBIGUOUS_MARK}2")
    assert ids[2].startswith("q:") and AMBIGUOUS_MARK not in ids[2]
    # the same question in another unit (another task or run) is not ambiguous
    assert ids[3] == ids[0].split(AMBIGUOUS_MARK)[0]
    # gold and options are part of the key
    other, _ = _ids(_rows([0, 0, 0, 1, 1], queries, gold_key=["1"] * 5))
    assert other.to_pylist()[2] != ids[2]


def test_document_ids_win_when_every_row_has_one():
    ids, _ = _ids(
        _rows([0, 0, 1, 1], ["Q: a", "Q: b", "Q: a", "Q: b"], doc_id=[" 7", "8", "9", ""])
    )
    assert ids.to_pylist()[:2] == ["7", "8"]
    assert all(i.startswith("q:") for i in ids.to_pylist()[2:])  # unit 1: one row without an id


def test_links_only_when_unique_both_ways():
    q1 = "Which river flows through the city of Vienna?"
    q2 = "Which river flows through the city of Budapest?"
    base = [("b1", q1, f"shots\n{q1}\nAnswer:"), ("b2", q2, f"shots\n{q2}\nAnswer:")]
    post = [("p1", f'"{q1}"', f"<chat>{q1}</chat>"), ("p2", "short?", "<chat>short?</chat>")]
    assert link_candidates(base, post) == [("b1", "p1")]
    # a post question found in two base prompts links to neither
    both = [("b1", "x", f"{q1} {q2}"), ("b2", "y", f"{q1}")]
    assert link_candidates(both, [("p1", q1, "nothing")]) == []


def test_questions_from_prompts_per_unit_and_given_ones_kept():
    from forgetmap.core.sample_identity import question_from_prompts

    table = pa.table(
        {
            "model": pa.array(["m", "m", "m", "m"]).dictionary_encode(),
            "benchmark": pa.array(["b", "b", "c", "b"]).dictionary_encode(),
            "seed": pa.array([0, 0, 0, 1], pa.int32()),
            "prompt": ["Shots\nQ: one?\nA:", "Shots\nQ: two?\nA:", "alone", "Shots\nQ: x?\nA:"],
            "question": [None, None, None, "given"],
        }
    )
    assert question_from_prompts(table).to_pylist() == ["Q: one?", "Q: two?", "alone", "given"]


# text made of what normalization treats specially: ASCII letters of both cases, every dropped
# character (ASCII and Unicode), and non-ASCII letters whose lower case is not a byte shift
_SPECIAL = "AbZz09 \t\n\r\x0b\x0c\"'`\u2018\u2019\u201c\u201d\u00ab\u00a0\u2009\u3000ÄéİẞΣ€"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(alphabet=_SPECIAL, max_size=40)), max_size=30))
def test_normalized_texts_is_normalize_text_on_every_row(texts):
    assert normalized_texts(pa.array(texts, pa.string())).to_pylist() == [
        normalize_text(t) for t in texts
    ]


def test_normalized_texts_works_across_slices_and_keeps_row_order():
    """Longer than one slice of the vectorized pass, mixed ASCII and not, with empty rows."""
    texts = [
        ("Ünï “Q” %d" if i % 7 == 0 else "Plain 'Q' %d") % i if i % 5 else ""
        for i in range(300_000)
    ]
    assert normalized_texts(pa.array(texts)).to_pylist() == [normalize_text(t) for t in texts]


def test_question_keys_are_md5_of_the_normalized_parts_joined_by_unit_separators():
    """The key a stored sample carries is a documented function of its content (hand-computed)."""
    keyed = _rows([0], ["Q: What is 2+2?"], choices_key=["A\x1fB"], gold_key=["1"])
    keyed = keyed.append_column("question", pa.array([" What  is 2+2? "]))
    keyed = keyed.append_column("has_ids", pa.array([False]))
    digest = hashlib.md5(b"whatis2+2?\x1fa\x1fb\x1f1").hexdigest()[:16]
    assert identify(keyed).to_pylist() == [f"q:{digest}"]


_PARTS = st.one_of(
    st.none(),
    st.text(alphabet="aZ \t\n'\"`\u2019\u00a0\u03a3\u03c3\u0130\u212a\u00c9\u6f22.", max_size=10),
)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.tuples(_PARTS, _PARTS, _PARTS), min_size=1, max_size=12))
def test_question_keys_equal_their_definition_for_any_text(rows):
    """Any question, options and gold (quotes, spaces, capital sigma at a word's end, dotted
    capital I, Kelvin sign, null parts): the key is md5 of the three normalized by
    normalize_text and joined by \\x1f, whatever rows share one text (one unit per row: no
    ambiguity marks)."""
    n = len(rows)
    keyed = _rows(
        list(range(n)),
        ["q"] * n,
        choices_key=[c for _, c, _ in rows],
        gold_key=[g for _, _, g in rows],
    )
    keyed = keyed.append_column("question", pa.array([q for q, _, _ in rows], pa.string()))
    keyed = keyed.append_column("has_ids", pa.array([False] * n))
    expected = [
        "q:" + hashlib.md5("\x1f".join(normalize_text(p) for p in row).encode()).hexdigest()[:16]
        for row in rows
    ]
    assert identify(keyed).to_pylist() == expected


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(
        st.one_of(st.none(), st.text(alphabet="ab \n\u00e9\u6f22\u00a0", max_size=12)),
        max_size=8,
    ),
    offset=st.integers(0, 8),
    data=st.data(),
)
def test_question_texts_cut_the_given_bytes_of_every_row(texts, offset, data):
    """question_texts removes exactly ``start`` leading and ``finish`` trailing bytes of each row
    (the cuts unit_affixes gives lie between characters), then trims: checked against Python's
    slicing of the UTF-8 bytes, on arrays that start at an offset, without a finish (the stop
    pyarrow's binary_slice fails on by default) and with nulls."""
    column = pa.array(texts, pa.string()).slice(min(offset, len(texts)))
    rows = column.to_pylist()
    encoded = [t.encode() for t in rows if t is not None]
    shortest = min(map(len, encoded), default=0)
    start = data.draw(st.integers(0, shortest))
    finish = data.draw(st.integers(0, shortest - start))
    sliced = [None if t is None else t.encode()[start : len(t.encode()) - finish] for t in rows]
    try:
        expected = pa.array([None if b is None else b.decode() for b in sliced], pa.string())
    except UnicodeDecodeError:
        assume(False)  # a cut inside a character: unit_affixes never makes one
    assert question_texts(column, start, finish).equals(pc.utf8_trim_whitespace(expected))


def test_a_key_is_shared_only_within_one_unit():
    keys = pa.array(["q:a", "q:b", "q:a", None, "q:c"])
    assert not _shares_a_key(np.array([0, 0, 1, 1, 1]), keys)  # "q:a" in two units
    assert _shares_a_key(np.array([0, 0, 0, 1, 1]), keys)  # "q:a" twice in unit 0
    assert _shares_a_key(np.array([5, 5, 5, 7, 7]), pa.array(["x", "y", "z", None, None]))
    assert not _shares_a_key(np.array([3]), pa.array(["x"]))
