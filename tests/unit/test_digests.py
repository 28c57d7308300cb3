"""DuckDB's md5 digests equal hashlib's: sample ids stay what earlier imports stored."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pytest
from forgetmap.core.digests import ascii_joined_md5_prefixes, distinct_within_groups, md5_prefixes
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(deadline=None, max_examples=50)  # one DuckDB connection per example
@given(st.lists(st.text(max_size=300), max_size=40))
def test_md5_prefixes_equal_hashlib_on_any_text(texts):
    got = md5_prefixes(pa.array(texts, pa.string()), prefix="q:", digits=16).to_pylist()
    assert got == ["q:" + hashlib.md5(t.encode()).hexdigest()[:16] for t in texts]


def test_md5_prefixes_keep_nulls_and_check_digits():
    assert md5_prefixes(pa.array([None, "a"]), prefix="", digits=32).to_pylist() == [
        None,
        hashlib.md5(b"a").hexdigest(),
    ]
    with pytest.raises(ValueError, match="digits must be in 1..32"):
        md5_prefixes(pa.array(["a"]), prefix="", digits=33)


_DROPPED = " \t\n'\"`"


@settings(deadline=None, max_examples=200)
@given(
    st.lists(
        st.tuples(
            *[st.one_of(st.none(), st.text(alphabet="aZq \t\n'\"`.\u00e9\u0130", max_size=12))] * 2
        ),
        max_size=20,
    )
)
def test_ascii_joined_md5_prefixes_are_their_definition_and_null_off_ascii(rows):
    """ASCII rows: md5 of the parts joined (null as ""), the dropped characters removed, lower
    case; a row with any other character is left null for the caller."""
    table = pa.table(
        {
            "a": pa.array([a for a, _ in rows], pa.string()),
            "b": pa.array([b for _, b in rows], pa.string()),
        }
    )
    got = ascii_joined_md5_prefixes(
        table, separator="\x1f", dropped=_DROPPED, prefix="q:", digits=16
    )
    expected = []
    for a, b in rows:
        joined = f"{a or ''}\x1f{b or ''}"
        if not joined.isascii():
            expected.append(None)
            continue
        normalized = joined.translate(str.maketrans("", "", _DROPPED)).lower()
        expected.append("q:" + hashlib.md5(normalized.encode()).hexdigest()[:16])
    assert got.to_pylist() == expected


def test_ascii_joined_md5_prefixes_key_repeated_rows_alike_in_their_places():
    """Each distinct row is hashed once (a question's seeds repeat it); every row, repeats and
    rows equal but for case or dropped characters included, gets its own key in its place."""
    rows = [("Q one", "A"), ("x\u00e9", "B"), ("q ONE", "a"), ("Q one", "A"), ("two", None)] * 3
    table = pa.table({"a": [a for a, _ in rows], "b": [b for _, b in rows]})
    got = ascii_joined_md5_prefixes(
        table, separator="\x1f", dropped=_DROPPED, prefix="q:", digits=16
    ).to_pylist()
    one = "q:" + hashlib.md5(b"qone\x1fa").hexdigest()[:16]
    two = "q:" + hashlib.md5(b"two\x1f").hexdigest()[:16]
    assert got == [one, None, one, one, two] * 3


def test_ascii_joined_md5_prefixes_check_their_arguments():
    table = pa.table({"a": ["x"]})
    with pytest.raises(ValueError, match="ASCII without the separator"):
        ascii_joined_md5_prefixes(table, separator=" ", dropped=" ", prefix="", digits=8)
    with pytest.raises(ValueError, match="digits must be in 1..32"):
        ascii_joined_md5_prefixes(table, separator="\x1f", dropped="", prefix="", digits=0)


@settings(deadline=None, max_examples=200)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.text(max_size=4))), max_size=30)
)
def test_surely_distinct_says_true_exactly_when_no_group_repeats_a_text(rows):
    """Small alphabets make repeats common: the fast check agrees with an exact count (a false
    alarm, two different pairs with one 64-bit hash, is not expected in any test's lifetime)."""
    groups = np.asarray([g for g, _ in rows], np.int64)
    texts = pa.array([t for _, t in rows], pa.string())
    assert distinct_within_groups(groups, texts) == (len(set(rows)) == len(rows))


def test_surely_distinct_checks_lengths_and_takes_chunked_texts():
    chunked = pa.chunked_array([["a", "b"], ["a"]])
    assert distinct_within_groups(np.asarray([0, 0, 1]), chunked)
    assert not distinct_within_groups(np.asarray([0, 0, 0]), chunked)
    with pytest.raises(ValueError, match="2 groups for 3 texts"):
        distinct_within_groups(np.asarray([0, 1]), chunked)


def test_threads_share_one_in_memory_database_through_their_own_connections():
    """The lighteval reader's threads are new for every import: each takes a connection (a
    cursor, under 1 ms) to the process's one in-memory database, not a database of its own
    (about 20 ms). A table one makes is seen by another; the connections are distinct."""
    import threading

    from forgetmap.core import digests

    got = []
    threads = [threading.Thread(target=lambda: got.append(digests._connection())) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(digests._database) == 1 and len({id(c) for c in got}) == 3
    got[0].execute("CREATE TABLE shared_probe AS SELECT 42 AS x")
    try:
        assert got[1].execute("SELECT x FROM shared_probe").fetchall() == [(42,)]
    finally:
        got[0].execute("DROP TABLE shared_probe")
