r"""Theory lab: why forward-KL SFT forgets and reverse-KL RL mostly does not.

Computational core of the "theory lab" page, after Balasubramanian and Kasiviswanathan (2026),
"A Quantitative Characterization of Forgetting in Post-Training", in the two-mode mixture
setting of Chen et al. (2025, arXiv:2510.18874). Pure numpy, no I/O.

Setting
-------
Model (old mode and new mode, shared fixed variance :math:`\sigma^2`)::

    p_theta(x) = alpha N(x; mu_old, sigma^2) + (1 - alpha) N(x; mu_new, sigma^2),
    alpha = sigmoid(eta),                theta = (eta, mu_old, mu_new).

True mode positions: old at ``0``, new at ``delta`` (the *separation*). The pretrained model
starts at ``alpha0`` with ``mu_old = 0`` and ``mu_new = delta + new_offset * sigma``
(``new_offset = 0`` puts both means at their true positions; a positive offset means the new
skill is not learned yet, and sits ``new_offset`` standard deviations beyond its target, on the
far side from the old mode).

d dimensions: with isotropic covariance ``sigma^2 I`` and collinear means, every density ratio,
responsibility and KL below depends on ``x`` only through its projection on the line through the
means, so the d-dim population problem is exactly this 1-D problem with
``delta = ||mu_new* - mu_old*||``. The trainers are therefore 1-D; the overlap functions accept
vectors (``axis=``) or norms.

Objectives
----------
(a) Forward KL (SFT), data ``q = lambda N(0, s^2) + (1 - lambda) N(delta, s^2)`` (``lambda`` =
replay fraction of old data, ``s = sigma``)::

    L_F(theta) = KL(q || p_theta) = E_q[log q - log p_theta]
    dL_F/d eta    = alpha - E_q[r_old(x)]
    dL_F/d mu_old = -E_q[r_old(x) (x - mu_old)] / sigma^2
    dL_F/d mu_new = -E_q[r_new(x) (x - mu_new)] / sigma^2

with responsibilities ``r_old = alpha N_old / p_theta``, ``r_new = 1 - r_old``. Without replay the
optimum is at ``alpha -> 0`` (mass forgetting: ``d eta/dt = -(alpha - E_q r_old) ~ -alpha``, so
``alpha(t) ~ 1/(lr t)``); with replay the model is realizable and the optimum is ``alpha = lambda``.
When the modes overlap (``delta`` below about ``5 sigma``) forward KL without replay can also reach
``p_theta = q`` by sliding the weakened old component onto the new data (``mu_old -> delta``,
``alpha`` stalls): the old mode is forgotten either way. The default separation, ``6 sigma``,
shows pure mass forgetting.

(b) Reverse KL (RL-like) to the target ``t = alpha* N(0, s^2) + (1 - alpha*) N(delta, s^2)``
whose old weight is the pretrained one (``alpha* = alpha0`` unless given)::

    L_R(theta) = KL(p_theta || t) = E_{p_theta}[log p_theta - log t]
    grad L_R   = integral grad p_theta(x) (log p_theta(x) - log t(x)) dx     (integral grad p = 0)
    dp/d eta    = alpha (1 - alpha) (N_old - N_new) = p_theta (r_old - alpha)
    dp/d mu_old = alpha N_old (x - mu_old) / sigma^2
    dp/d mu_new = (1 - alpha) N_new (x - mu_new) / sigma^2

Its optimum is the target itself, so the old weight is kept. Replay does not change this
population objective (a replay mixture plus exact importance weights has the same expectation);
the ``replay`` argument of :func:`train` is accepted for ``"reverse"`` and has no effect there.

Quadrature and its accuracy
---------------------------
Expectations are sums on a uniform grid covering every mean (current and target) with a margin of
``GRID_MARGIN = 12`` standard deviations on each side and spacing at most
``GRID_SPACING = sigma / 24``. The integrands are smooth and decay like Gaussians, so the
trapezoid rule converges geometrically: its error is of order ``exp(-2 pi a / h)`` where ``a`` is
the half-width of the strip of analyticity (about ``pi sigma^2 / delta`` because of the logistic
responsibilities), i.e. below ``1e-20`` relative for ``delta <= 12 sigma``; truncation at 12 sigma
costs ``< 1e-31``. In practice the results are at rounding level: the mixture integrates to 1
within ``1e-13`` and the analytic gradients match central finite differences of the quadrature
loss to ``~2e-9`` (tests/unit/test_theory.py). The old-mean drift of
:func:`drift_vs_separation` (``~3e-5`` at ``delta = 9 sigma``) is thus resolved without noise.

Overlap and misassignment
-------------------------
Bhattacharyya coefficient of ``N(mu_1, s^2 I)`` and ``N(mu_2, s^2 I)``::

    BC = integral sqrt(N_1 N_2) = exp(-||mu_1 - mu_2||^2 / (8 sigma^2)).

Misassignment (posterior leakage) bound, the quantity this module verifies numerically: for an
old-mode sample ``x ~ N(mu_old, s^2)`` the expected posterior probability that the mixture
attributes it to the new mode obeys::

    E_{x ~ N_old}[r_new(x)] <= sqrt((1 - alpha) / alpha) * BC,

because ``r_new <= min(1, (1-alpha) N_new / (alpha N_old)) <= sqrt((1-alpha) N_new / (alpha
N_old))``, integrated against ``N_old``. (AM-GM on the denominator even gives half of it.) The
reverse-KL drift of the old mean is driven by exactly these overlap-gated misassignments, so it
decays like BC: ``log(drift) ~ -delta^2 / (8 sigma^2) + O(log delta)``; see
:func:`drift_vs_separation`, which fits that slope.

Finite-batch REINFORCE (:func:`train_reinforce`)
------------------------------------------------
Score-function estimate of ``grad L_R = E_p[grad log p_theta(x) (log p_theta(x) - log t(x))]``
from a batch drawn either on-policy (``x ~ p_theta``) or from the replay mixture
``b = lambda N(0, s^2) + (1 - lambda) p_theta`` with importance weights
``w = p_theta / b <= 1 / (1 - lambda)``, and a weighted batch-mean baseline. Every sample is
labelled by the component that generated it (policy old component or replayed old data = old
mode); a batch with no old-mode sample gives the old mean no signal (old-mode starvation). Its
probability is ``(1 - alpha)^B`` on-policy and ``((1 - lambda)(1 - alpha))^B`` with replay.

Optimisation
------------
Plain gradient descent on ``theta``; the two mean steps are preconditioned by ``sigma^2`` (step
``lr * sigma^2 * grad``) so that ``lr`` is dimensionless and the dynamics are invariant to the
scale of ``x``. With ``sigma = 1`` this is ordinary gradient descent.

Plot helpers (``app/analysis/theory_plots.py``) return plain JSON-serializable dicts of lists
(:func:`old_weight_curves`, :func:`drift_vs_separation`, :func:`final_weight_vs_replay`,
:func:`starvation_share`); each default call runs in well under a second.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields
from typing import Literal

import numpy as np

__all__ = [
    "GRID_MARGIN",
    "GRID_SPACING",
    "ReinforceTrajectory",
    "Trajectory",
    "bhattacharyya_coefficient",
    "forward_kl",
    "initial_theta",
    "logit",
    "misassignment_bound",
    "misassignment_probability",
    "mixture_logpdf",
    "replay_importance_weights",
    "reverse_kl",
    "sigmoid",
    "train",
    "train_batch",
    "train_reinforce",
]

Objective = Literal["forward", "reverse"]

GRID_MARGIN = 12.0
"""Grid margin beyond the outermost mean, in standard deviations."""
GRID_SPACING = 1.0 / 24.0
"""Largest grid spacing, in standard deviations."""
MAX_GRID_POINTS = 20_000
"""Most quadrature points per row. Healthy dynamics keep the means within the two modes, about
1,750 points at the lab's widest setting (separation 12 sigma); a step size too large for the
dynamics throws the means apart, and an uncapped grid then grew to ~80M points (20 GB)."""


class DivergedError(ValueError):
    """The gradient-descent dynamics left the region the quadrature can cover (step too large)."""


class BudgetExceeded(RuntimeError):
    """A computation ran past the time budget set with :func:`time_budget`."""


_DEADLINE: ContextVar[float | None] = ContextVar("theory_deadline", default=None)


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Make the training loops of this module stop with :class:`BudgetExceeded` after
    ``seconds`` (checked every step), so one request cannot hold a core indefinitely."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _check_budget() -> None:
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline:
        raise BudgetExceeded("the computation ran past its time budget; use fewer steps")


_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def sigmoid(eta):
    """Logistic function ``1 / (1 + exp(-eta))``, numerically stable, elementwise."""
    eta = np.asarray(eta, dtype=float)
    out = np.empty_like(eta)
    pos = eta >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-eta[pos]))
    e = np.exp(eta[~pos])
    out[~pos] = e / (1.0 + e)
    return out if out.ndim else float(out)


def logit(alpha):
    """Inverse of :func:`sigmoid`: ``log(alpha / (1 - alpha))``."""
    alpha = np.asarray(alpha, dtype=float)
    out = np.log(alpha) - np.log1p(-alpha)
    return out if out.ndim else float(out)


def _norm(delta, axis):
    delta = np.asarray(delta, dtype=float)
    if axis is None:
        return np.abs(delta)
    return np.sqrt(np.sum(delta**2, axis=axis))


def bhattacharyya_coefficient(delta, sigma=1.0, *, axis=None):
    """Bhattacharyya coefficient of two Gaussians with common covariance ``sigma^2 I``.

    ``BC = exp(-||delta||^2 / (8 sigma^2))`` where ``delta = mu_1 - mu_2``. With ``axis=None``
    ``delta`` holds separations (norms, or 1-D differences), elementwise; with ``axis`` set, the
    norm is taken along that axis (d-dim mean differences).
    """
    d = _norm(delta, axis)
    out = np.exp(-(d**2) / (8.0 * np.asarray(sigma, dtype=float) ** 2))
    return out if np.ndim(out) else float(out)


def misassignment_bound(alpha, delta, sigma=1.0, *, axis=None):
    """Upper bound ``sqrt((1 - alpha) / alpha) * BC`` on the misassignment probability.

    Bounds :func:`misassignment_probability`, i.e. ``E_{x ~ N(mu_old, s^2)}[r_new(x)]``, the
    expected posterior probability that the mixture with old weight ``alpha`` attributes an
    old-mode sample to the new mode. Proof: ``r_new <= min(1, u) <= sqrt(u)`` with
    ``u = (1 - alpha) N_new / (alpha N_old)``; integrate against ``N_old``:
    ``E[sqrt(u)] = sqrt((1 - alpha)/alpha) integral sqrt(N_old N_new) = sqrt((1-alpha)/alpha) BC``.
    """
    alpha = np.asarray(alpha, dtype=float)
    out = np.sqrt((1.0 - alpha) / alpha) * bhattacharyya_coefficient(delta, sigma, axis=axis)
    return out if np.ndim(out) else float(out)


def _log_normal(x, mu, sigma):
    z = (x - mu) / sigma
    return -0.5 * z * z - np.log(sigma) - _LOG_SQRT_2PI


def mixture_logpdf(x, alpha, mu_old, mu_new, sigma=1.0):
    """``log p(x)`` for ``p = alpha N(mu_old, s^2) + (1 - alpha) N(mu_new, s^2)`` (broadcasts)."""
    x = np.asarray(x, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore"):
        la, lb = np.log(alpha), np.log1p(-alpha)
    return np.logaddexp(la + _log_normal(x, mu_old, sigma), lb + _log_normal(x, mu_new, sigma))


def _grid(points, sigma):
    """Uniform quadrature grid per row.

    ``points``: (B, k) locations that must be covered; ``sigma``: (B,). Returns ``x`` (B, n) and
    spacing ``h`` (B, 1) with a common ``n`` chosen so that every row has spacing
    ``<= GRID_SPACING * sigma``.
    """
    lo = points.min(axis=1) - GRID_MARGIN * sigma
    hi = points.max(axis=1) + GRID_MARGIN * sigma
    width = np.max((hi - lo) / (GRID_SPACING * sigma))
    if not np.isfinite(width) or width + 1 > MAX_GRID_POINTS:
        raise DivergedError(
            "the dynamics diverged: the means moved too far apart for the quadrature "
            f"(over {MAX_GRID_POINTS:,} grid points); use a smaller learning rate"
        )
    n = int(np.ceil(width)) + 1
    t = np.linspace(0.0, 1.0, n)
    x = lo[:, None] + (hi - lo)[:, None] * t[None, :]
    h = ((hi - lo) / (n - 1))[:, None]
    return x, h


def misassignment_probability(alpha, separation, sigma=1.0):
    """``E_{x ~ N(0, s^2)}[r_new(x)]`` by quadrature, for the mixture with means 0 and delta.

    ``r_new(x) = (1 - alpha) N(x; delta, s^2) / p(x)``: the posterior probability that an
    old-mode sample is attributed to the new mode. Broadcasts over its arguments. Bounded by
    :func:`misassignment_bound`.
    """
    alpha, sep, sig = np.broadcast_arrays(
        np.asarray(alpha, float), np.abs(np.asarray(separation, float)), np.asarray(sigma, float)
    )
    shape = alpha.shape
    a, d, s = alpha.ravel(), sep.ravel(), sig.ravel()
    x, h = _grid(np.stack([np.zeros_like(d), d], axis=1), s)
    log_old = _log_normal(x, 0.0, s[:, None])
    log_p = mixture_logpdf(x, a[:, None], 0.0, d[:, None], s[:, None])
    with np.errstate(divide="ignore"):
        log_rn = np.log1p(-a)[:, None] + _log_normal(x, d[:, None], s[:, None]) - log_p
    out = np.sum(h * np.exp(log_old + log_rn), axis=1).reshape(shape)
    return out if out.ndim else float(out)


# --------------------------------------------------------------------------------------------
# Population objectives (vectorized over a leading batch of settings)
# --------------------------------------------------------------------------------------------


def _as_rows(theta, *args):
    theta = np.atleast_2d(np.asarray(theta, dtype=float))
    b = theta.shape[0]
    rows = [np.broadcast_to(np.asarray(a, dtype=float), (b,)).copy() for a in args]
    return theta, rows


def _components(theta, x, sigma):
    eta, mo, mn = theta[:, 0:1], theta[:, 1:2], theta[:, 2:3]
    alpha = sigmoid(eta)
    s = sigma[:, None]
    la = -np.logaddexp(0.0, -eta)  # log alpha
    lb = -np.logaddexp(0.0, eta)  # log (1 - alpha)
    lo_ = la + _log_normal(x, mo, s)
    ln_ = lb + _log_normal(x, mn, s)
    log_p = np.logaddexp(lo_, ln_)
    r_old = np.exp(lo_ - log_p)
    r_new = np.exp(ln_ - log_p)
    return alpha, mo, mn, log_p, r_old, r_new


def _forward(theta, sep, sigma, replay):
    x, h = _grid(np.stack([np.zeros_like(sep), sep, theta[:, 1], theta[:, 2]], axis=1), sigma)
    alpha, mo, mn, log_p, r_old, r_new = _components(theta, x, sigma)
    s = sigma[:, None]
    lam = replay[:, None]
    with np.errstate(divide="ignore"):
        log_q = np.logaddexp(
            np.log(lam) + _log_normal(x, 0.0, s), np.log1p(-lam) + _log_normal(x, sep[:, None], s)
        )
    qh = h * np.exp(log_q)
    loss = np.sum(qh * (log_q - log_p), axis=1)
    grad = np.empty_like(theta)
    grad[:, 0] = alpha[:, 0] - np.sum(qh * r_old, axis=1)
    grad[:, 1] = -np.sum(qh * r_old * (x - mo), axis=1) / sigma**2
    grad[:, 2] = -np.sum(qh * r_new * (x - mn), axis=1) / sigma**2
    return loss, grad


def _reverse(theta, sep, sigma, alpha_target):
    x, h = _grid(np.stack([np.zeros_like(sep), sep, theta[:, 1], theta[:, 2]], axis=1), sigma)
    alpha, mo, mn, log_p, r_old, r_new = _components(theta, x, sigma)
    log_t = mixture_logpdf(x, alpha_target[:, None], 0.0, sep[:, None], sigma[:, None])
    diff = log_p - log_t
    ph = h * np.exp(log_p)
    loss = np.sum(ph * diff, axis=1)
    grad = np.empty_like(theta)
    grad[:, 0] = np.sum(ph * (r_old - alpha) * diff, axis=1)
    grad[:, 1] = np.sum(ph * r_old * (x - mo) * diff, axis=1) / sigma**2
    grad[:, 2] = np.sum(ph * r_new * (x - mn) * diff, axis=1) / sigma**2
    return loss, grad


def _unbatch(loss, grad, theta_in):
    if np.ndim(theta_in) == 1:
        return float(loss[0]), grad[0]
    return loss, grad


def forward_kl(theta, separation=6.0, sigma=1.0, replay=0.0):
    """Forward KL ``KL(q || p_theta)`` (SFT) and its exact gradient in ``theta``.

    ``theta = (eta, mu_old, mu_new)``, shape (3,) or (B, 3); other arguments broadcast to (B,).
    ``q = replay N(0, s^2) + (1 - replay) N(separation, s^2)``. Returns ``(loss, grad)``.
    Formulas in the module docstring.
    """
    th, (sep, sig, lam) = _as_rows(theta, separation, sigma, replay)
    return _unbatch(*_forward(th, sep, sig, lam), theta)


def reverse_kl(theta, separation=6.0, sigma=1.0, alpha_target=0.5):
    """Reverse KL ``KL(p_theta || t)`` (RL-like) and its exact gradient in ``theta``.

    ``t = alpha_target N(0, s^2) + (1 - alpha_target) N(separation, s^2)``. Shapes as in
    :func:`forward_kl`. Returns ``(loss, grad)``.
    """
    th, (sep, sig, at) = _as_rows(theta, separation, sigma, alpha_target)
    return _unbatch(*_reverse(th, sep, sig, at), theta)


# --------------------------------------------------------------------------------------------
# Trainers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trajectory:
    """Gradient-descent trajectory. Arrays have length ``steps + 1`` (index 0 = pretrained).

    For :func:`train_batch` they have shape ``(steps + 1, B)``. ``loss[t]`` is the objective
    (a KL, in nats) at the parameters of step ``t``.
    """

    alpha: np.ndarray
    mu_old: np.ndarray
    mu_new: np.ndarray
    loss: np.ndarray

    def to_dict(self) -> dict:
        """JSON-serializable dict of lists."""
        return {f.name: np.asarray(getattr(self, f.name)).tolist() for f in fields(self)}


@dataclass(frozen=True)
class ReinforceTrajectory(Trajectory):
    """REINFORCE trajectory: as :class:`Trajectory`, plus per-step batch bookkeeping.

    ``no_old_sample[t]`` (length ``steps``) is True when the batch of update ``t`` (taken at the
    parameters of index ``t``) held no sample generated by the old mode; ``n_old[t]`` counts
    them. ``loss`` is the exact population reverse KL (NaN when not tracked).
    """

    no_old_sample: np.ndarray
    n_old: np.ndarray


def initial_theta(separation=6.0, sigma=1.0, alpha0=0.5, new_offset=0.0):
    """Pretrained parameters ``(logit(alpha0), 0, separation + new_offset * sigma)``."""
    sep, sig, a0, off = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (separation, sigma, alpha0, new_offset))
    )
    th = np.stack([logit(a0), np.zeros_like(sep), sep + off * sig], axis=-1)
    return th


def _check_objective(objective):
    if objective not in ("forward", "reverse"):
        raise ValueError(f"objective must be 'forward' or 'reverse', got {objective!r}")


def train_batch(
    objective: Objective = "forward",
    separation=6.0,
    sigma=1.0,
    replay=0.0,
    lr: float = 1.0,
    steps: int = 300,
    *,
    alpha0=0.5,
    alpha_target=None,
    new_offset=0.0,
) -> Trajectory:
    """Vectorized :func:`train`: array arguments broadcast to a batch of B independent runs.

    Returns a :class:`Trajectory` whose arrays have shape ``(steps + 1, B)``.
    """
    _check_objective(objective)
    if steps < 0:
        raise ValueError("steps must be >= 0")
    at = alpha0 if alpha_target is None else alpha_target
    sep, sig, lam, a0, at, off = np.broadcast_arrays(
        *(
            np.atleast_1d(np.asarray(v, dtype=float))
            for v in (separation, sigma, replay, alpha0, at, new_offset)
        )
    )
    sep, sig, lam, at = (np.array(v, dtype=float) for v in (sep, sig, lam, at))
    if np.any(sig <= 0):
        raise ValueError("sigma must be > 0")
    if np.any((lam < 0) | (lam >= 1)):
        raise ValueError("replay must be in [0, 1)")
    if np.any((a0 <= 0) | (a0 >= 1)) or np.any((at <= 0) | (at >= 1)):
        raise ValueError("alpha0 and alpha_target must be in (0, 1)")
    theta = initial_theta(sep, sig, a0, off).reshape(-1, 3)
    b = theta.shape[0]
    hist = np.empty((steps + 1, b, 3))
    losses = np.empty((steps + 1, b))
    precond = np.stack([np.ones(b), sig**2, sig**2], axis=1)
    for t in range(steps + 1):
        _check_budget()
        if objective == "forward":
            loss, grad = _forward(theta, sep, sig, lam)
        else:
            loss, grad = _reverse(theta, sep, sig, at)
        hist[t] = theta
        losses[t] = loss
        theta = theta - lr * precond * grad
    return Trajectory(
        alpha=sigmoid(hist[:, :, 0]), mu_old=hist[:, :, 1], mu_new=hist[:, :, 2], loss=losses
    )


def train(
    objective: Objective = "forward",
    separation: float = 6.0,
    sigma: float = 1.0,
    replay: float = 0.0,
    lr: float = 1.0,
    steps: int = 300,
    *,
    alpha0: float = 0.5,
    alpha_target: float | None = None,
    new_offset: float = 0.0,
) -> Trajectory:
    """Full-batch gradient descent on the exact population objective.

    ``objective="forward"``: ``KL(q || p_theta)`` with ``q = replay N(0, s^2) + (1 - replay)
    N(separation, s^2)``. ``objective="reverse"``: ``KL(p_theta || t)`` with ``t``'s old weight
    ``alpha_target`` (default ``alpha0``) and means ``0``, ``separation``; ``replay`` has no
    effect on it (the population objective is unchanged by replay). Starts from
    :func:`initial_theta`. Update: ``eta -= lr * dL/deta``, ``mu -= lr * sigma^2 * dL/dmu``.
    Returns 1-D arrays of length ``steps + 1``.
    """
    traj = train_batch(
        objective,
        separation,
        sigma,
        replay,
        lr,
        steps,
        alpha0=alpha0,
        alpha_target=alpha_target,
        new_offset=new_offset,
    )
    return Trajectory(
        alpha=traj.alpha[:, 0],
        mu_old=traj.mu_old[:, 0],
        mu_new=traj.mu_new[:, 0],
        loss=traj.loss[:, 0],
    )


def replay_importance_weights(x, alpha, mu_old, mu_new, sigma=1.0, replay=0.0):
    """Importance weights ``w = p_theta(x) / b(x)`` for the replay behaviour distribution.

    ``b = replay N(0, s^2) + (1 - replay) p_theta``. Since ``b >= (1 - replay) p_theta``,
    ``0 < w <= 1 / (1 - replay)``: replay never produces unbounded weights. ``replay = 0`` gives
    ``w = 1`` (on-policy).
    """
    if not 0.0 <= replay < 1.0:
        raise ValueError("replay must be in [0, 1)")
    log_p = mixture_logpdf(x, alpha, mu_old, mu_new, sigma)
    if replay == 0.0:
        return np.ones_like(log_p)
    log_b = np.logaddexp(
        np.log(replay) + _log_normal(np.asarray(x, float), 0.0, sigma), np.log1p(-replay) + log_p
    )
    return np.exp(log_p - log_b)


def train_reinforce(
    separation: float = 6.0,
    sigma: float = 1.0,
    replay: float = 0.0,
    lr: float = 0.5,
    steps: int = 200,
    batch_size: int = 8,
    *,
    alpha0: float = 0.1,
    alpha_target: float | None = None,
    new_offset: float = 1.0,
    seed: int = 0,
    track_loss: bool = True,
) -> ReinforceTrajectory:
    """Finite-batch REINFORCE on the reverse objective ``KL(p_theta || t)``.

    Each step draws ``batch_size`` samples. On-policy (``replay=0``): ``x ~ p_theta``. Replay
    (``replay = lambda > 0``): each sample independently comes with probability ``lambda`` from
    the old-mode data ``N(0, s^2)`` and otherwise from ``p_theta``, i.e. ``x ~ b = lambda N_old*
    + (1 - lambda) p_theta``, with importance weight ``w = p_theta(x) / b(x) <= 1/(1-lambda)``.
    With ``f = log p_theta - log t``, score ``g = grad log p_theta`` (``d/deta = r_old - alpha``,
    ``d/dmu_old = r_old (x - mu_old)/s^2``, ``d/dmu_new = r_new (x - mu_new)/s^2``) and baseline
    ``c = sum w f / sum w``, the gradient estimate is ``mean_i w_i (f_i - c) g_i`` (unbiased up to
    the O(1/B) baseline term). Same preconditioned update as :func:`train`.

    Samples are labelled old when generated by the policy's old component or by the replayed old
    data. Deterministic for a given ``seed`` (``numpy.random.default_rng``). The target old weight
    defaults to ``alpha0`` (``0.1``: old behaviour is rare under the policy, where starvation
    matters); ``new_offset`` as in :func:`initial_theta`.
    """
    if not 0.0 <= replay < 1.0:
        raise ValueError("replay must be in [0, 1)")
    if batch_size < 1 or steps < 0:
        raise ValueError("batch_size must be >= 1 and steps >= 0")
    at = alpha0 if alpha_target is None else alpha_target
    rng = np.random.default_rng(seed)
    theta = initial_theta(separation, sigma, alpha0, new_offset).astype(float)
    s2 = sigma * sigma
    precond = np.array([1.0, s2, s2])
    hist = np.empty((steps + 1, 3))
    losses = np.full(steps + 1, np.nan)
    no_old = np.zeros(steps, dtype=bool)
    n_old = np.zeros(steps, dtype=np.int64)
    sep_row, sig_row, at_row = (np.array([v], dtype=float) for v in (separation, sigma, at))
    for t in range(steps + 1):
        _check_budget()
        hist[t] = theta
        if track_loss:
            losses[t] = _reverse(theta[None, :], sep_row, sig_row, at_row)[0][0]
        if t == steps:
            break
        eta, mo, mn = theta
        alpha = float(sigmoid(eta))
        u_src, u_comp, z = (
            rng.random(batch_size),
            rng.random(batch_size),
            rng.standard_normal(batch_size),
        )
        replayed = u_src < replay
        from_old_comp = u_comp < alpha
        centre = np.where(replayed, 0.0, np.where(from_old_comp, mo, mn))
        x = centre + sigma * z
        is_old = replayed | from_old_comp
        n_old[t] = int(is_old.sum())
        no_old[t] = n_old[t] == 0
        log_p = mixture_logpdf(x, alpha, mo, mn, sigma)
        log_t = mixture_logpdf(x, at, 0.0, separation, sigma)
        w = replay_importance_weights(x, alpha, mo, mn, sigma, replay)
        f = log_p - log_t
        c = np.sum(w * f) / np.sum(w)
        r_old = np.exp(np.log(alpha) + _log_normal(x, mo, sigma) - log_p)
        r_new = 1.0 - r_old
        a = w * (f - c)
        grad = np.array(
            [
                np.mean(a * (r_old - alpha)),
                np.mean(a * r_old * (x - mo)) / s2,
                np.mean(a * r_new * (x - mn)) / s2,
            ]
        )
        theta = theta - lr * precond * grad
    return ReinforceTrajectory(
        alpha=sigmoid(hist[:, 0]),
        mu_old=hist[:, 1],
        mu_new=hist[:, 2],
        loss=losses,
        no_old_sample=no_old,
        n_old=n_old,
    )
