"""Benjamini-Hochberg adjusted p-values (forgetmap.core.metrics.benjamini_hochberg)."""

from __future__ import annotations

import numpy as np
import pytest
from forgetmap.core.metrics import benjamini_hochberg
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import false_discovery_control


def test_golden_by_hand():
    """m = 4 (the NaN is no test). Sorted 0.01, 0.03, 0.04, 0.20 scaled by m / rank:
    0.04, 0.06, 0.0533, 0.20; the running minimum from the largest rank down: 0.04, 0.0533,
    0.0533, 0.20; put back in input order."""
    p = [0.04, 0.01, np.nan, 0.20, 0.03]
    got = benjamini_hochberg(p)
    want = [4 * 0.04 / 3, 0.04, np.nan, 0.20, 4 * 0.04 / 3]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.isnan(got[2])


def test_large_p_values_are_capped_at_one_and_ties_share_a_value():
    np.testing.assert_allclose(benjamini_hochberg([0.9, 0.9, 0.95]), [0.95, 0.95, 0.95])
    np.testing.assert_allclose(benjamini_hochberg([0.6, 0.6]), [0.6, 0.6])
    assert benjamini_hochberg([0.5])[0] == 0.5  # a family of one is not adjusted


def test_empty_all_nan_and_shape():
    assert benjamini_hochberg([]).shape == (0,)
    assert np.isnan(benjamini_hochberg([np.nan, np.nan])).all()
    grid = benjamini_hochberg([[0.01, 0.02], [0.03, np.nan]])  # the family: every element
    assert grid.shape == (2, 2)
    np.testing.assert_allclose(grid[0], [0.03, 0.03])


@pytest.mark.parametrize("bad", [[-0.1], [1.5], [0.2, np.inf], [-np.inf]])
def test_p_values_outside_the_unit_interval_are_refused(bad):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        benjamini_hochberg(bad)


p_value = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(st.lists(st.one_of(p_value, st.just(float("nan"))), min_size=1, max_size=60))
def test_equals_scipy_on_the_tested_values_and_keeps_nan(ps):
    p = np.array(ps)
    got = benjamini_hochberg(p)
    tested = ~np.isnan(p)
    assert np.array_equal(np.isnan(got), ~tested)
    if tested.any():
        want = false_discovery_control(p[tested], method="bh")
        np.testing.assert_allclose(got[tested], want, rtol=1e-12, atol=1e-15)


@given(st.lists(p_value, min_size=1, max_size=60))
def test_at_least_p_at_most_one_and_order_preserving(ps):
    p = np.array(ps)
    adj = benjamini_hochberg(p)
    assert np.all(adj >= p - 1e-15) and np.all(adj <= 1.0)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adj[order]) >= -1e-15)  # a smaller p never gets a larger adjusted p
