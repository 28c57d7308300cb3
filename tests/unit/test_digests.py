"""DuckDB's md5 digests equal hashlib's: sample ids stay what earlier imports stored."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.db.digests import md5_prefixes


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
