"""The theory lab's four plots, as JSON-serializable dicts of lists, from the trainers of
``app/analysis/theory.py`` (whose module doc defines the setting, the objectives and the bounds
each plot illustrates). Pure numpy, no I/O.
"""

from __future__ import annotations

import numpy as np
from forgetmap.analysis.theory import (
    bhattacharyya_coefficient,
    misassignment_bound,
    train,
    train_batch,
    train_reinforce,
)

__all__ = [
    "drift_vs_separation",
    "final_weight_vs_replay",
    "old_weight_curves",
    "starvation_share",
]


def _list(a):
    return np.asarray(a, dtype=float).tolist()


def old_weight_curves(
    separation: float = 6.0,
    sigma: float = 1.0,
    alpha0: float = 0.5,
    lr: float = 1.0,
    steps: int = 300,
    new_offset: float = 1.0,
    replay: float = 0.0,
) -> dict:
    """Plot 1: old weight ``alpha`` over steps, forward KL (SFT) vs reverse KL (RL).

    Forward: ``alpha(t) -> 0`` like ``1/(lr t)`` (mass forgetting); with a replay fraction
    ``lambda`` (``forward_replay_alpha``) ``alpha(t) -> lambda``. Reverse: ``alpha(t)`` returns
    to ``alpha0`` (the target keeps the old mode). All runs start from the same pretrained model.
    """
    # Both objectives in one batched call would need two code paths per step; two calls are cheap.
    fwd = train_batch(
        "forward",
        separation,
        sigma,
        np.array([0.0, replay]),
        lr,
        steps,
        alpha0=alpha0,
        new_offset=new_offset,
    )
    rev = train("reverse", separation, sigma, 0.0, lr, steps, alpha0=alpha0, new_offset=new_offset)
    return {
        "step": list(range(steps + 1)),
        "forward_alpha": _list(fwd.alpha[:, 0]),
        "forward_replay_alpha": _list(fwd.alpha[:, 1]),
        "reverse_alpha": _list(rev.alpha),
        "forward_loss": _list(fwd.loss[:, 0]),
        "reverse_loss": _list(rev.loss),
        "forward_mu_old": _list(fwd.mu_old[:, 0]),
        "reverse_mu_old": _list(rev.mu_old),
        "alpha0": float(alpha0),
        "params": {
            "separation": float(separation),
            "sigma": float(sigma),
            "lr": float(lr),
            "steps": int(steps),
            "new_offset": float(new_offset),
            "replay": float(replay),
        },
    }


def replay_grid(chosen: float, upper: float = 0.5, points: int = 11) -> np.ndarray:
    """Plot 3's replay fractions: ``points`` evenly from 0 to ``max(upper, chosen)``, and the
    chosen fraction itself, so that the value a reader typed is on the curve and on the axis."""
    grid = np.linspace(0.0, max(upper, chosen), points)
    return np.unique(np.append(grid, chosen))


def _fit_slope(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept)


def drift_vs_separation(
    separations=None,
    sigma: float = 1.0,
    alpha0: float = 0.5,
    lr: float = 1.0,
    steps: int = 150,
    new_offset: float = 1.0,
) -> dict:
    """Plot 2: maximum old-mean drift under reverse-KL training vs separation, with BC (log y).

    For each ``delta`` (default ``3, 3.5, ..., 9`` sigma) runs :func:`train_batch` (reverse,
    the new mean starting ``new_offset`` sigma beyond its target) and records
    ``max_t |mu_old(t) - 0|``. The drift is driven by overlap-gated misassignment, so
    ``drift ~ BC = exp(-delta^2 / (8 sigma^2))`` up to a polynomial factor: the least-squares
    slope of ``log(drift)`` on ``delta^2 / sigma^2`` (``fitted_slope``) is close to ``-1/8``.
    Also returns BC and the misassignment bound ``sqrt((1-alpha0)/alpha0) BC`` at each delta.
    """
    if separations is None:
        separations = np.arange(3.0, 9.01, 0.5) * sigma
    seps = np.asarray(separations, dtype=float)
    traj = train_batch("reverse", seps, sigma, 0.0, lr, steps, alpha0=alpha0, new_offset=new_offset)
    drift = np.max(np.abs(traj.mu_old), axis=0)
    bc = bhattacharyya_coefficient(seps, sigma)
    x2 = (seps / sigma) ** 2
    slope, intercept = _fit_slope(x2, np.log(drift))
    return {
        "separation": _list(seps),
        "max_drift": _list(drift),
        "bc": _list(np.atleast_1d(bc)),
        "misassignment_bound": _list(np.atleast_1d(misassignment_bound(alpha0, seps, sigma))),
        "final_alpha": _list(traj.alpha[-1]),
        "fitted_slope": slope,
        "fitted_intercept": intercept,
        "expected_slope": -0.125,
        "params": {
            "sigma": float(sigma),
            "alpha0": float(alpha0),
            "lr": float(lr),
            "steps": int(steps),
            "new_offset": float(new_offset),
        },
    }


def final_weight_vs_replay(
    replays=None,
    separation: float = 6.0,
    sigma: float = 1.0,
    alpha0: float = 0.5,
    lr: float = 1.0,
    steps: int = 300,
    new_offset: float = 1.0,
) -> dict:
    """Plot 3: final old weight vs replay fraction ``lambda`` (default ``0, 0.05, ..., 0.5``).

    Forward KL: final ``alpha = lambda`` (the population optimum moves only because replay changes
    the data distribution; ``lambda = 0`` gives ``alpha -> 0``). Reverse KL: replay leaves the
    population objective unchanged, final ``alpha = alpha0`` for every ``lambda``.
    """
    if replays is None:
        replays = np.linspace(0.0, 0.5, 11)
    lams = np.asarray(replays, dtype=float)
    fwd = train_batch(
        "forward", separation, sigma, lams, lr, steps, alpha0=alpha0, new_offset=new_offset
    )
    rev = train("reverse", separation, sigma, 0.0, lr, steps, alpha0=alpha0, new_offset=new_offset)
    return {
        "replay": _list(lams),
        "forward_final_alpha": _list(fwd.alpha[-1]),
        "reverse_final_alpha": _list(np.full(lams.shape, rev.alpha[-1])),
        "alpha0": float(alpha0),
        "params": {
            "separation": float(separation),
            "sigma": float(sigma),
            "lr": float(lr),
            "steps": int(steps),
            "new_offset": float(new_offset),
        },
    }


def starvation_share(
    batch_sizes=(1, 2, 4, 8, 16, 32),
    replay: float = 0.3,
    separation: float = 6.0,
    sigma: float = 1.0,
    alpha0: float = 0.1,
    lr: float = 0.5,
    steps: int = 150,
    run_batch_size: int = 8,
    seed: int = 0,
) -> dict:
    """Plot 4: share of batches with no old-mode sample, on-policy vs replay.

    ``by_batch_size``: for each batch size B, the empirical share over a seeded REINFORCE run of
    ``steps`` updates (on-policy and with replay ``lambda``), next to the closed forms
    ``(1 - alpha0)^B`` and ``((1 - lambda)(1 - alpha0))^B`` (exact at ``alpha = alpha0``; reverse
    KL keeps ``alpha`` near it). ``over_steps``: running share over the steps of one run each
    with ``run_batch_size``.
    """
    bs = [int(b) for b in batch_sizes]
    emp_on, emp_rep = [], []
    runs = {}
    for i, b in enumerate(bs):
        on = train_reinforce(
            separation, sigma, 0.0, lr, steps, b, alpha0=alpha0, seed=seed + 2 * i, track_loss=False
        )
        rep = train_reinforce(
            separation,
            sigma,
            replay,
            lr,
            steps,
            b,
            alpha0=alpha0,
            seed=seed + 2 * i + 1,
            track_loss=False,
        )
        emp_on.append(float(on.no_old_sample.mean()) if steps else float("nan"))
        emp_rep.append(float(rep.no_old_sample.mean()) if steps else float("nan"))
        runs[b] = (on, rep)
    if run_batch_size in runs:
        on, rep = runs[run_batch_size]
    else:
        on = train_reinforce(
            separation,
            sigma,
            0.0,
            lr,
            steps,
            run_batch_size,
            alpha0=alpha0,
            seed=seed + 1000,
            track_loss=False,
        )
        rep = train_reinforce(
            separation,
            sigma,
            replay,
            lr,
            steps,
            run_batch_size,
            alpha0=alpha0,
            seed=seed + 1001,
            track_loss=False,
        )
    k = np.arange(1, steps + 1)
    b_arr = np.asarray(bs, dtype=float)
    return {
        "by_batch_size": {
            "batch_size": bs,
            "on_policy_empirical": emp_on,
            "replay_empirical": emp_rep,
            "on_policy_theory": _list((1.0 - alpha0) ** b_arr),
            "replay_theory": _list(((1.0 - replay) * (1.0 - alpha0)) ** b_arr),
        },
        "over_steps": {
            "step": k.tolist(),
            "batch_size": int(run_batch_size),
            "on_policy_running_share": _list(np.cumsum(on.no_old_sample) / k),
            "replay_running_share": _list(np.cumsum(rep.no_old_sample) / k),
            "on_policy_alpha": _list(on.alpha),
            "replay_alpha": _list(rep.alpha),
        },
        "params": {
            "replay": float(replay),
            "separation": float(separation),
            "sigma": float(sigma),
            "alpha0": float(alpha0),
            "lr": float(lr),
            "steps": int(steps),
            "seed": int(seed),
        },
    }
