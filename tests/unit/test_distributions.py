"""The binomial CDF and Student's t quantile (forgetmap.core.distributions), against hand values
and against scipy.special's C routines (bdtr, stdtrit), which the commands no longer import."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from forgetmap.core.distributions import (
    binomial_cdf,
    regularized_incomplete_beta,
    student_t_cdf,
    student_t_quantile,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import bdtr, betainc, stdtrit


def test_binomial_golden_by_hand():
    """Binomial(4, 1/2): P[X <= 1] = (1 + 4) / 16; P[X <= 2] = 11/16. Binomial(3, 0.2):
    P[X = 0] = 0.8^3 = 0.512."""
    np.testing.assert_allclose(binomial_cdf([1, 2], 4, 0.5), [5 / 16, 11 / 16], rtol=1e-13)
    np.testing.assert_allclose(binomial_cdf(0, 3, 0.2), 0.512, rtol=1e-13)


def test_binomial_ends():
    """k >= n is certain, k < 0 impossible, p = 0 and p = 1 are exact, n = 0 is one outcome."""
    np.testing.assert_array_equal(binomial_cdf([5, 7, -1], 5, 0.3), [1.0, 1.0, 0.0])
    np.testing.assert_array_equal(binomial_cdf([0, 3], 5, 0.0), [1.0, 1.0])
    np.testing.assert_array_equal(binomial_cdf([0, 4, 5], 5, 1.0), [0.0, 0.0, 1.0])
    assert binomial_cdf(0, 0, 0.5) == 1.0


def test_binomial_refuses_what_is_not_a_binomial():
    with pytest.raises(ValueError, match="n >= 0"):
        binomial_cdf(1, -1, 0.5)
    with pytest.raises(ValueError, match="0 <= p <= 1"):
        binomial_cdf(1, 3, 1.5)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(0, 50_000),
    share=st.floats(0, 1),
    p=st.floats(0, 1, allow_subnormal=False),
)
def test_binomial_equals_scipy(n, share, p):
    k = int(share * n)
    got, want = binomial_cdf(k, n, p), bdtr(k, n, p)
    # relative, down to where scipy itself loses digits (test_incomplete_beta_deep_tail)
    assert got == pytest.approx(want, rel=1e-8, abs=1e-150)


def test_binomial_elementwise_at_scale():
    """A map's 5,000 cells at once, counts up to 200,000: every cell as scipy's, each at its
    own number of terms."""
    rng = np.random.default_rng(7)
    n = rng.integers(1, 200_000, size=5_000)
    k = (rng.random(5_000) * n / 2).astype(np.int64)
    want = bdtr(k, n, 0.5)
    got = binomial_cdf(k, n, 0.5)
    shown = want > 1e-150
    np.testing.assert_allclose(got[shown], want[shown], rtol=1e-8)
    assert np.all(got[~shown] < 1e-140)


@settings(max_examples=200, deadline=None)
@given(a=st.floats(0.05, 500), b=st.floats(0.05, 500), x=st.floats(0, 1, allow_subnormal=False))
def test_incomplete_beta_equals_scipy(a, b, x):
    # below 1e-150, and at a subnormal x, scipy's betainc loses digits (see the next test), so it
    # is no reference there
    assert regularized_incomplete_beta(a, b, x) == pytest.approx(
        betainc(a, b, x), rel=1e-9, abs=1e-150
    )


@pytest.mark.parametrize(
    ("a", "b", "x", "want"),
    [  # mpmath.betainc(a, b, 0, x, regularized=True) at 50 digits; scipy 1.3245e-286 and
        # 3.4608e-288
        (498.70099974765395, 25.83046660090364, 0.22236999919529687, 9.7985907951274011e-287),
        (311.4981661899365, 25.20239300593519, 0.0917272855355934, 3.1629373795553422e-288),
        (0.25, 2.0, 5e-324, 1.8636149135672943e-81),  # a subnormal x; scipy 1.7301e-81
    ],
)
def test_incomplete_beta_deep_tail(a, b, x, want):
    assert float(regularized_incomplete_beta(a, b, x)) == pytest.approx(want, rel=1e-10)


def test_t_quantile_golden_by_hand():
    """df = 1 is Cauchy: t = tan(pi (q - 1/2)); df = 2 has t = (2q - 1) / sqrt(2 q (1 - q))."""
    for q in (0.6, 0.9, 0.975, 0.999):
        assert student_t_quantile(q, 1) == pytest.approx(math.tan(math.pi * (q - 0.5)), rel=1e-11)
        want = (2 * q - 1) / math.sqrt(2 * q * (1 - q))
        assert student_t_quantile(q, 2) == pytest.approx(want, rel=1e-11)
    assert student_t_quantile(0.5, 7) == 0.0


@settings(max_examples=300, deadline=None)
@given(df=st.integers(1, 10_000), q=st.floats(1e-12, 1 - 1e-12))
def test_t_quantile_equals_scipy_and_inverts_the_cdf(df, q):
    t = student_t_quantile(q, df)
    assert t == pytest.approx(stdtrit(df, q), rel=1e-8, abs=1e-12)
    assert student_t_cdf(t, df) == pytest.approx(q, rel=1e-9)
    mirrored = 1 - (1 - q)  # q as 1 - q holds it (1 - 1e-12 is not exact in binary)
    assert student_t_quantile(1 - q, df) == -student_t_quantile(mirrored, df)


def test_t_quantile_refuses_what_has_no_quantile():
    for q, df in ((0.0, 3), (1.0, 3), (0.5, 0)):
        with pytest.raises(ValueError, match="df >= 1 and 0 < q < 1"):
            student_t_quantile(q, df)


def test_the_map_needs_no_scipy():
    """The reason the module exists: the metrics, the consensus flags and the map's records
    compute their p-values and intervals without importing scipy."""
    code = (
        "import sys\n"
        "from forgetmap.core.metrics import mcnemar_exact, t_margin\n"
        "from forgetmap.core.consensus import beyond_noise\n"
        "import forgetmap.services.map\n"
        "mcnemar_exact(3, 9); t_margin(0.1, 3)\n"
        "beyond_noise([2], [3], [0.1])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
