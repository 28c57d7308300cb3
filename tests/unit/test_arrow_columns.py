"""app/core/columns.py: the list helpers the harness readers share."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from forgetmap.core.columns import first_items, first_max_positions
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize(
    "lists",
    [
        [["a"], ["b"], ["c"]],  # one item each: the items themselves
        [["a", "x"], [], None, ["d"]],  # several, none, null
        [[None], ["b"]],  # a null item
    ],
)
@pytest.mark.parametrize("offset", [0, 1])
def test_first_item_of_each_list(lists: list, offset: int) -> None:
    column = pa.array(lists, pa.list_(pa.string())).slice(offset)
    expected = [row[0] if row else None for row in column.to_pylist()]
    assert first_items(column).to_pylist() == expected


def test_first_max_positions_hand_computed() -> None:
    values = np.array([-1.0, -0.5, -0.5, 3.0, -np.inf, -np.inf, 2.0, 2.0, 1.0])
    lengths = np.array([3, 1, 0, 2, 3])
    # ties go to the first; an empty row has none; -inf rows pick the first
    assert first_max_positions(values, lengths).tolist() == [1, 0, -1, 0, 0]


@given(
    st.lists(
        st.lists(st.floats(allow_nan=False, width=16), max_size=5),
        max_size=8,
    )
)
def test_first_max_positions_is_pythons_max(rows: list[list[float]]) -> None:
    values = np.array([v for row in rows for v in row], np.float64)
    lengths = np.array([len(row) for row in rows], np.int64)
    expected = [max(range(len(row)), key=row.__getitem__) if row else -1 for row in rows]
    assert first_max_positions(values, lengths).tolist() == expected
