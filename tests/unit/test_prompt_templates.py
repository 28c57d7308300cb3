"""Prompts stored as a shared template plus each row's own part: found per unit with Arrow,
cut by DuckDB while inserting, rebuilt exactly when read."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from forgetmap.core.prompt_templates import (
    MIN_TEMPLATE_BYTES,
    stored_prompts,
    unit_templates,
)
from forgetmap.db.prompts import full_prompt
from forgetmap.db.store import open_store
from forgetmap.importers import import_file
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.prompts import whole_prompts

SHOTS = "Les questions suivantes — avec réponses.\n\nQuestion: 2 + 2 ?\nAnswer: 4\n\nQuestion: "


def test_a_units_shared_prefix_and_suffix_cut_at_whitespace():
    prompts = pa.array([SHOTS + "Où est Zoë ?\nAnswer:", SHOTS + "Qui a 3 ans ?\nAnswer:"])
    found = unit_templates(prompts, np.array([0, 0]), 1)
    assert found.has_template.tolist() == [True]
    assert found.prefix == [SHOTS] and found.suffix == [" ?\nAnswer:"]
    # characters, not bytes: "—" is three bytes in UTF-8 and "é" two
    assert found.prefix_chars.tolist() == [len(SHOTS)] < [len(SHOTS.encode())]
    assert found.suffix_chars.tolist() == [10]


def test_units_apart_in_the_table_and_units_kept_whole():
    rows = [
        (2, SHOTS + "one ?\nAnswer:"),
        (0, "short a"),  # less than MIN_TEMPLATE_BYTES shared
        (2, SHOTS + "two ?\nAnswer:"),
        (0, "short b"),
        (1, SHOTS + "alone"),  # one row: all of it is its own
        (3, SHOTS + "x"),
        (3, None),  # a null prompt: the unit keeps its prompts whole
        (4, SHOTS + "same"),
        (4, SHOTS + "same"),  # one distinct prompt
    ]
    unit = np.array([u for u, _ in rows])
    found = unit_templates(pa.array([p for _, p in rows], pa.string()), unit, 5)
    assert found.has_template.tolist() == [False, False, True, False, False]
    assert found.prefix[2] == SHOTS and found.suffix[2] == " ?\nAnswer:"
    assert len("short ") < MIN_TEMPLATE_BYTES


def test_the_shared_suffix_shrinks_until_every_prompt_ends_with_it():
    # the smallest and largest prompts share "Answer: yes" at the end; the middle one does not
    prompts = pa.array([SHOTS + "a Answer: yes", SHOTS + "b Answer: no", SHOTS + "z Answer: yes"])
    found = unit_templates(prompts, np.zeros(3, np.int64), 1)
    assert found.suffix == [""] and found.prefix == [SHOTS]


@pytest.fixture
def store(tmp_path):
    s = open_store(tmp_path / "fm.duckdb")
    yield s
    s.close()


def _import(store, tmp_path, prompts: list[str]) -> None:
    import csv

    path = tmp_path / "rows.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["model", "benchmark", "sample_id", "seed", "correct", "prompt"])
        for i, prompt in enumerate(prompts):
            writer.writerow(["m", "piqa", f"s{i}", 0, i % 2, prompt])
    import_file(store, "table", path)


def _stored(store) -> tuple[list[tuple], list[str], int]:
    with store.read() as conn:
        rows = conn.execute(
            f"SELECT sample_id, prompt, question, {full_prompt('r')} FROM results r "
            "ORDER BY sample_id"
        ).fetchall()
        templates = conn.execute("SELECT count(*) FROM prompt_templates").fetchall()[0][0]
    return [(s, own, q) for s, own, q, _ in rows], [whole for *_, whole in rows], templates


def test_an_import_stores_the_template_once_and_each_question_once(store, tmp_path):
    prompts = [SHOTS + q + "\nAnswer:" for q in ("Où est Zoë ?", "Qui a 3 ans ?", "🙂 ou 🙃 ?")]
    _import(store, tmp_path, prompts)
    own, whole, templates = _stored(store)
    assert whole == prompts
    # the importer's question (the prompt's own lines) is each prompt's own part: no prompt text
    assert own == [
        ("s0", None, "Question: Où est Zoë ?"),
        ("s1", None, "Question: Qui a 3 ans ?"),
        ("s2", None, "Question: 🙂 ou 🙃 ?"),
    ]
    assert templates == 1


def test_a_unit_whose_prompts_are_not_around_their_questions_keeps_own_parts():
    prompts = pa.array([SHOTS + "Où est Zoë ?\nAnswer:", SHOTS + "Qui a 3 ans ?\nAnswer:"])
    around = unit_templates(
        prompts, np.zeros(2, np.int64), 1, pa.array(["Où est Zoë ?", "Qui a 3 ans ?"])
    )
    assert around.around_question.tolist() == [True] and around.has_template.tolist() == [True]
    assert around.prefix == [SHOTS] and around.suffix == ["\nAnswer:"]
    # one question not in its prompt: the whole unit takes the cut at whitespace
    apart = unit_templates(prompts, np.zeros(2, np.int64), 1, pa.array(["Où est Zoë ?", "Qui ?"]))
    assert apart.around_question.tolist() == [False] and apart.has_template.tolist() == [True]
    assert apart.prefix == [SHOTS] and apart.suffix == [" ?\nAnswer:"]
    # a null question (or prompt) anywhere in the unit: not around questions either
    missing = unit_templates(prompts, np.zeros(2, np.int64), 1, pa.array(["Où est Zoë ?", None]))
    assert missing.around_question.tolist() == [False]


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.text(max_size=40),
    suffix=st.text(max_size=20),
    questions=st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=6),
    order=st.randoms(use_true_random=False),
)
def test_prompts_around_their_questions_split_exactly_or_not_at_all(
    prefix, suffix, questions, order
):
    """Whatever the texts (a question repeated inside the prefix, empty affixes, any unicode),
    a unit said to be around its questions rebuilds every prompt from prefix + question + suffix."""
    prompts = [prefix + q + suffix for q in questions]
    unit = np.array([order.randrange(2) for _ in prompts])
    found = unit_templates(pa.array(prompts), unit, 2, pa.array(questions))
    for code in range(2):
        rows = [i for i in range(len(prompts)) if unit[i] == code]
        if not found.around_question[code]:
            continue
        for i in rows:
            assert found.prefix[code] + questions[i] + found.suffix[code] == prompts[i]
    # a single row around its question is always recognized
    single = unit_templates(
        pa.array(prompts[:1]), np.zeros(1, np.int64), 1, pa.array(questions[:1])
    )
    assert single.around_question.tolist() == [True]


@settings(max_examples=200, deadline=None)
@given(
    shared=st.text(max_size=60),
    ends=st.text(max_size=20),
    own=st.lists(st.text(max_size=30), min_size=1, max_size=6),
)
def test_any_prompts_split_into_template_and_own_parts_exactly(shared, ends, own):
    prompts = [shared + " " + text + " " + ends for text in own]
    found = unit_templates(pa.array(prompts), np.zeros(len(prompts), np.int64), 1)
    if not found.has_template[0]:
        return
    head, tail = int(found.prefix_chars[0]), int(found.suffix_chars[0])
    for prompt in prompts:
        own_part = prompt[head : len(prompt) - tail]
        assert found.prefix[0] + own_part + found.suffix[0] == prompt


def test_a_file_settled_by_its_reader_follows_the_same_rules():
    """stored_prompts (a reader's, per details file) finds what unit_templates finds for the
    unit."""
    questions = ["Où est Zoë ?", "Qui a 3 ans ?"]
    prompts = pa.array([SHOTS + q + "\nAnswer:" for q in questions])
    around = stored_prompts(prompts, pa.array(questions))
    assert (around.prefix, around.suffix) == (SHOTS, "\nAnswer:")
    assert around.own.to_pylist() == [None, None]  # each own part is the row's question
    apart = stored_prompts(prompts, pa.array(["Où est Zoë ?", "Qui ?"]))
    assert (apart.prefix, apart.suffix) == (SHOTS, " ?\nAnswer:")
    assert apart.own.to_pylist() == ["Où est Zoë", "Qui a 3 ans"]
    whole = stored_prompts(pa.array(["short a", "short b"]), pa.array(["x", "y"]))
    assert (whole.prefix, whole.suffix) == (None, None)
    assert whole.own.to_pylist() == ["short a", "short b"]


@settings(max_examples=200, deadline=None)
@given(
    shared=st.text(max_size=60),
    ends=st.text(max_size=20),
    own=st.lists(st.text(max_size=30), min_size=1, max_size=6),
    ask=st.booleans(),
)
def test_a_settled_file_rebuilds_every_prompt_exactly(shared, ends, own, ask):
    prompts = [shared + " " + text + " " + ends for text in own]
    questions = [" " + text + " " if ask else text + "?" for text in own]
    settled = stored_prompts(pa.array(prompts), pa.array(questions))
    for prompt, question, part in zip(prompts, questions, settled.own.to_pylist(), strict=True):
        if settled.prefix is None:
            assert part == prompt
        else:
            assert settled.prefix + (question if part is None else part) + settled.suffix == prompt


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40), st.integers(0, 45), st.integers(0, 45))
def test_duckdb_substr_cuts_characters_as_python_slices_do(text, head, tail):
    """The insert's cut (substr over characters) is the split the test above checks in Python."""
    import duckdb

    tail = min(tail, max(len(text) - head, 0))
    with duckdb.connect() as con:
        got = con.execute(
            "SELECT substr(?, ?::BIGINT + 1, length(?) - ?::BIGINT - ?::BIGINT)",
            [text, head, text, head, tail],
        ).fetchall()[0][0]
    assert got == text[head : len(text) - tail]


def test_full_prompt_takes_only_an_alias():
    with pytest.raises(ValueError, match="not a table alias"):
        full_prompt("r; DROP TABLE results")


def test_downgrading_below_templates_writes_every_prompt_back_whole(store, tmp_path):
    """Migration 0008's downgrade rebuilds prompts as full_prompt reads them, questions included."""
    prompts = [SHOTS + q + "\nAnswer:" for q in ("Où est Zoë ?", "Qui a 3 ans ?")]
    _import(store, tmp_path, prompts)
    store.downgrade("0007")
    with store.read() as conn:
        rows = conn.execute("SELECT prompt FROM results ORDER BY sample_id").fetchall()
        columns = {
            name
            for (name,) in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'results'"
            ).fetchall()
        }
    assert [p for (p,) in rows] == prompts
    assert "prompt_template_id" not in columns


def test_the_arrow_and_the_sql_rebuild_give_the_same_prompts(store, tmp_path):
    """The tests' Arrow reference (tests/support/prompts.py) and the product's SQL rebuild
    (``full_prompt``) agree, on rows around their question, rows with an own part, and a row kept
    whole."""
    around = [SHOTS + q + "\nAnswer:" for q in ("Où est Zoë ?", "Qui a 3 ans ?")]
    _import(store, tmp_path, around)
    with store.read() as conn:
        stored = conn.sql(
            f"SELECT r.prompt, r.question, t.prefix AS prompt_prefix, t.suffix AS prompt_suffix, "
            f"{full_prompt('r')} AS whole FROM results r "
            "LEFT JOIN prompt_templates t ON t.id = r.prompt_template_id ORDER BY r.sample_id"
        ).to_arrow_table()
    assert stored["prompt"].null_count == 2  # each own part is the row's question
    assert whole_prompts(stored).to_pylist() == stored["whole"].to_pylist() == around
    settled = stored_prompts(pa.array(around), pa.array(["not in it", "nor this"]))
    rows = pa.table(
        {
            "prompt": pa.concat_arrays([settled.own, pa.array(["kept whole"])]),
            "question": pa.array(["x", "y", "z"]),
            "prompt_prefix": pa.array([settled.prefix, settled.prefix, None]),
            "prompt_suffix": pa.array([settled.suffix, settled.suffix, None]),
        }
    )
    assert settled.own.null_count == 0
    assert whole_prompts(rows).to_pylist() == [*around, "kept whole"]


def test_rows_added_to_stored_units_keep_their_template_and_read_back_whole(store, tmp_path):
    """A second lighteval file of the same task and seed with more rows: the rows not stored yet
    go in with their template (as fresh rows do) and read back whole through SQL."""
    from forgetmap.demo.layouts.lighteval import write_lighteval_details

    def details(n: int, folder: str):
        task = "leaderboard|mmlu:anatomy|5"
        path = write_lighteval_details(tmp_path / folder, task, [1, 0] * (n // 2))  # ids 0..n-1
        inputs = pq.read_table(path, columns=["model_response"])["model_response"].combine_chunks()
        return path, inputs.field("input").to_pylist()

    first, _ = details(6, "a")
    second, prompts = details(10, "b")
    for path in (first, second):
        import_file(store, "lighteval", path, model="m", seed=0)
    with store.read() as conn:
        rows = conn.execute(
            f"SELECT r.sample_id, r.prompt_template_id, {full_prompt('r')} FROM results r"
        ).fetchall()
    assert len(rows) == 10 and all(template is not None for _, template, _ in rows)
    assert sorted(p for _, _, p in rows) == sorted(prompts)
