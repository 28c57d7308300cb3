"""The two distribution functions the metrics need: the binomial CDF and Student's t quantile.

Both rest on the regularized incomplete beta function I_x(a, b), computed here rather than taken
from ``scipy.special``: importing scipy.special costs a command 0.15-0.25 s at start (it builds
array-API wrappers for every function it offers), more than the whole ``map`` it would serve
(docs/performance.md). The tests hold these against scipy's ``bdtr`` and ``stdtrit``.

I_x(a, b) is evaluated by its continued fraction with the modified Lentz method (Press et al.,
"Numerical Recipes", 3rd ed., section 6.4): the fraction converges quickly for
x < (a + 1) / (a + b + 2), and I_x(a, b) = 1 - I_{1-x}(b, a) covers the other side.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

_TINY = 1e-300  # keeps Lentz's denominators off zero
_EPSILON = 1e-15  # relative change of the fraction at which it has converged
_MAX_TERMS = 100_000  # the fraction needs O(sqrt(max(a, b))) terms; a and b are counts here

_log_gamma = np.frompyfunc(math.lgamma, 1, 1)


def _continued_fraction(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The continued fraction of I_x(a, b), elementwise, for x below the switch point. Each
    element stops when its own terms stop changing it (large counts need many more terms than
    small ones)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
    h = d.copy()
    out = np.empty_like(x)
    where = np.arange(x.size)  # the positions in ``out`` of the elements still converging
    for m in range(1, _MAX_TERMS + 1):
        m2 = 2.0 * m
        for numerator in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
            c = 1.0 + numerator / c
            c = np.where(np.abs(c) < _TINY, _TINY, c)
            step = d * c
            h = h * step
        done = np.abs(step - 1.0) < _EPSILON
        if done.all():
            out[where] = h
            return out
        if done.any():
            out[where[done]] = h[done]
            going = ~done
            where, a, b, x, qab, qap, qam, c, d, h = (
                v[going] for v in (where, a, b, x, qab, qap, qam, c, d, h)
            )
    raise ArithmeticError("the incomplete beta's continued fraction did not converge")


def regularized_incomplete_beta(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> np.ndarray:
    """I_x(a, b) = B(x; a, b) / B(a, b) for a, b > 0 and 0 <= x <= 1, elementwise (arrays
    broadcast)."""
    a, b, x = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (a, b, x)))
    if np.any(a <= 0) or np.any(b <= 0) or np.any((x < 0) | (x > 1)):
        raise ValueError("the incomplete beta needs a, b > 0 and 0 <= x <= 1")
    out = np.where(x <= 0, 0.0, 1.0)  # the ends; the interior is filled below
    inside = (x > 0) & (x < 1)
    if not inside.any():
        return out
    a, b, x = a[inside], b[inside], x[inside]
    log_front = (
        (_log_gamma(a + b) - _log_gamma(a) - _log_gamma(b)).astype(np.float64)
        + a * np.log(x)
        + b * np.log1p(-x)
    )
    front = np.exp(log_front)
    direct = x < (a + 1.0) / (a + b + 2.0)
    value = np.empty_like(x)
    if direct.any():
        ad, bd, xd = a[direct], b[direct], x[direct]
        value[direct] = front[direct] * _continued_fraction(ad, bd, xd) / ad
    if (~direct).any():
        af, bf, xf = a[~direct], b[~direct], x[~direct]
        value[~direct] = 1.0 - front[~direct] * _continued_fraction(bf, af, 1.0 - xf) / bf
    out[inside] = np.clip(value, 0.0, 1.0)
    return out


def binomial_cdf(k: ArrayLike, n: ArrayLike, p: ArrayLike) -> np.ndarray:
    """P[X <= k] for X ~ Binomial(n, p), elementwise (what ``scipy.special.bdtr`` computes):
    I_{1-p}(n - k, k + 1) for 0 <= k < n; 1 for k >= n; 0 for k < 0."""
    k, n, p = np.broadcast_arrays(
        np.floor(np.asarray(k, dtype=np.float64)),
        np.asarray(n, dtype=np.float64),
        np.asarray(p, dtype=np.float64),
    )
    if np.any(n < 0) or np.any((p < 0) | (p > 1)):
        raise ValueError("the binomial needs n >= 0 and 0 <= p <= 1")
    out = np.where(k >= n, 1.0, 0.0)
    middle = (k >= 0) & (k < n)
    if middle.any():
        km, nm, pm = k[middle], n[middle], p[middle]
        out[middle] = regularized_incomplete_beta(nm - km, km + 1.0, 1.0 - pm)
    return out


def _student_t_tail(t: float, df: int) -> float:
    """P[T > t] for t >= 0: I_{df/(df+t^2)}(df/2, 1/2) / 2, accurate however small."""
    return 0.5 * float(regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t)))


def _student_t_central(t: float, df: int) -> float:
    """P[|T| < t] for t >= 0: I_{t^2/(df+t^2)}(1/2, df/2), accurate near t = 0 where 1 - 2 tail
    would cancel."""
    return float(regularized_incomplete_beta(0.5, df / 2.0, t * t / (df + t * t)))


def student_t_density(t: float, df: int) -> float:
    """Student's t density: Gamma((df+1)/2) / (sqrt(df pi) Gamma(df/2)) (1 + t^2/df)^-((df+1)/2)."""
    log_scale = math.lgamma((df + 1) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
    return math.exp(log_scale - (df + 1) / 2.0 * math.log1p(t * t / df))


def student_t_cdf(t: float, df: int) -> float:
    """P[T <= t] for Student's t with ``df`` degrees of freedom."""
    tail = _student_t_tail(abs(t), df)
    return 1.0 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=64)
def student_t_quantile(q: float, df: int) -> float:
    """The t with P[T <= t] = q (what ``scipy.special.stdtrit(df, q)`` computes).

    Solved for |t| on the tail P[T > |t|] = min(q, 1 - q) when that is under 1/4, else on the
    centre P[|T| < |t|] = |2q - 1|, so that neither a tiny tail nor a q near 1/2 is lost to
    cancellation: Newton's method (the density is the derivative), kept inside a bracket that
    halves whenever a step would leave it, to 1e-13 relative. Cached: a series page asks for the
    same few (q, df) many times."""
    if df < 1 or not 0.0 < q < 1.0:
        raise ValueError("the t quantile needs df >= 1 and 0 < q < 1")
    if q == 0.5:
        return 0.0
    tail = q if q < 0.5 else 1.0 - q
    rising: Callable[[float], float]
    if tail < 0.25:
        rising, slope, target = (lambda t: -_student_t_tail(t, df)), 1.0, -tail
    else:
        rising, slope, target = (lambda t: _student_t_central(t, df)), 2.0, abs(2.0 * q - 1.0)
    low, high = 0.0, 1.0
    while rising(high) < target:
        low, high = high, 2.0 * high
    t = 0.5 * (low + high)
    for _ in range(200):
        excess = rising(t) - target
        if excess == 0.0:
            break
        low, high = (t, high) if excess < 0 else (low, t)
        step = t - excess / (slope * student_t_density(t, df))
        following = step if low < step < high else 0.5 * (low + high)
        if abs(following - t) <= 1e-13 * max(1.0, t):
            t = following
            break
        t = following
    else:
        raise ArithmeticError("the t quantile did not converge")
    return t if q > 0.5 else -t
