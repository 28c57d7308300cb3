"""A reader's small batches joined before the store takes them (forgetmap.importers.joined)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from forgetmap import importers
from forgetmap.importers import joined
from forgetmap.importers.common import holds_whole_units, whole_units


def _batch(first: int, n: int, *, text: bool = False) -> pa.Table:
    values = pa.array(range(first, first + n), pa.int64())
    return pa.table({"x": pa.array([str(v) for v in values.to_pylist()]) if text else values})


def test_joined_keeps_the_order_and_every_row_and_breaks_at_a_schema():
    batches = [_batch(0, 3), _batch(3, 2), _batch(5, 1, text=True), _batch(6, 4)]
    out = list(joined(iter(batches), limit=1 << 20))
    assert [t.num_rows for t in out] == [5, 1, 4]  # the text batch cannot join its neighbours
    assert [v for t in out for v in t["x"].to_pylist()] == [0, 1, 2, 3, 4, "5", 6, 7, 8, 9]


def test_joined_stays_within_its_bytes_and_sends_a_full_batch_at_once():
    batches = [_batch(10 * i, 10) for i in range(5)]  # 80 bytes each
    assert [t.num_rows for t in joined(iter(batches), limit=200)] == [20, 20, 10]
    assert [t.num_rows for t in joined(iter(batches), limit=1)] == [10] * 5
    big = _batch(0, 1000)
    assert [t.num_rows for t in joined(iter([big, _batch(0, 1)]), limit=100)] == [1000, 1]


def test_whole_units_are_joined_only_with_whole_units():
    whole = [whole_units(_batch(0, 2)), whole_units(_batch(2, 2))]
    out = list(joined(iter([*whole, _batch(4, 2)]), limit=1 << 20))
    assert [(t.num_rows, holds_whole_units(t)) for t in out] == [(4, True), (2, False)]


def test_dictionaries_are_unified_where_batches_join():
    kind = pa.dictionary(pa.int32(), pa.string())
    a = pa.table({"x": pa.array(["p", "q"]).cast(kind)})
    b = pa.table({"x": pa.array(["q", "r"]).cast(kind)})
    [out] = list(joined(iter([a, b]), limit=1 << 20))
    assert out["x"].to_pylist() == ["p", "q", "q", "r"]
    assert len({chunk.dictionary.to_pylist().__repr__() for chunk in out["x"].chunks}) == 1


def test_closing_joined_closes_the_reader():
    closed = []

    def reader():
        try:
            yield from (_batch(i, 1) for i in range(10))
        finally:
            closed.append(True)

    out = joined(reader(), limit=1)
    next(out)
    out.close()
    assert closed == [True]


def test_the_default_is_read_when_joined_is_called(monkeypatch):
    monkeypatch.setattr(importers, "JOIN_BYTES", 1)
    assert [t.num_rows for t in joined(iter([_batch(0, 2), _batch(2, 2)]))] == [2, 2]


@pytest.mark.parametrize("limit", [1, 100, 1 << 30])
def test_an_empty_reader_gives_nothing(limit):
    assert list(joined(iter([]), limit=limit)) == []
