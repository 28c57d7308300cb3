"""The theory lab's page data: the four plots of forgetmap.analysis.theory for one set of parameters.

Bounded per request: the parameters have documented ranges (forgetmap.web.deps.lab_params), one
computation runs at a time under a time budget (``FORGETMAP_THEORY_SECONDS``, 30), diverging
dynamics stop at a grid cap (theory.MAX_GRID_POINTS), and every outcome, result or error, is
cached per parameter set.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass

import numpy as np
from forgetmap.analysis import theory, theory_plots
from forgetmap.core.errors import InputError

CACHE_SIZE = 256
_cache: OrderedDict[LabParams, dict | InputError] = OrderedDict()
_compute = threading.Lock()  # one computation at a time: at most one core for the lab


class LabBusy(RuntimeError):
    """Another parameter set is being computed and did not finish within the wait."""


@dataclass(frozen=True)
class LabParams:
    separation: float = 6.0  # distance between the old and new means, in units of x
    sigma: float = 1.0
    replay: float = 0.3  # fraction lambda of old data mixed into SFT / REINFORCE batches
    lr: float = 1.0
    steps: int = 300
    batch_size: int = 8


DEFAULT_BUDGET_SECONDS = 30.0
"""How long one parameter set may compute (FORGETMAP_THEORY_SECONDS, read with the app's
settings at start)."""


def is_cached(p: LabParams) -> bool:
    """True when ``p``'s outcome is at hand: ``lab_data`` answers it without computing."""
    return p in _cache


def lab_data(p: LabParams, budget: float = DEFAULT_BUDGET_SECONDS) -> dict:
    """The lab's plots for ``p`` (cached). Raises InputError when the dynamics diverge or the
    computation runs past its budget, LabBusy when another one holds the lab for too long."""
    found = _cache.get(p)
    if found is None:
        if not _compute.acquire(timeout=budget):
            raise LabBusy("the theory lab is busy with another computation; retry shortly")
        try:
            found = _cache.get(p)
            if found is None:
                try:
                    with theory.time_budget(budget):
                        found = _compute_lab(p)
                except theory.DivergedError as exc:
                    found = InputError(f"lr={p.lr}: {exc}")
                except theory.BudgetExceeded:
                    found = InputError(
                        f"these parameters take over {budget:g} s to compute; use fewer steps "
                        f"(now {p.steps}) or a smaller batch size"
                    )
                _cache[p] = found
                while len(_cache) > CACHE_SIZE:
                    _cache.popitem(last=False)
        finally:
            _compute.release()
    if isinstance(found, InputError):
        raise found
    return found


def _compute_lab(p: LabParams) -> dict:
    separations = np.linspace(
        max(2.0 * p.sigma, p.separation - 3.0 * p.sigma), p.separation + 3.0 * p.sigma, 13
    )
    return {
        "params": asdict(p),
        "weights": theory_plots.old_weight_curves(
            p.separation, p.sigma, lr=p.lr, steps=p.steps, replay=p.replay
        ),
        "drift": theory_plots.drift_vs_separation(
            separations, p.sigma, lr=p.lr, steps=min(p.steps, 300)
        ),
        "replay": theory_plots.final_weight_vs_replay(
            theory_plots.replay_grid(p.replay), p.separation, p.sigma, lr=p.lr, steps=p.steps
        ),
        "starvation": theory_plots.starvation_share(
            batch_sizes=(1, 2, 4, 8, 16, 32),
            replay=p.replay,
            separation=p.separation,
            sigma=p.sigma,
            steps=min(p.steps, 200),
            run_batch_size=p.batch_size,
        ),
        "bc": float(theory.bhattacharyya_coefficient(p.separation, p.sigma)),
    }
