"""The theory lab's page data: the four plots of forgetmap.analysis.theory for one set of
parameters.

Bounded per request: the parameters have documented ranges (forgetmap.web.deps.lab_params), one
computation runs at a time under a time budget (``FORGETMAP_THEORY_SECONDS``, 30), diverging
dynamics stop at a grid cap (theory.MAX_GRID_POINTS), and every outcome, result or error, is
cached per parameter set by the ``TheoryLab`` that computed it (the app keeps one).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass

import numpy as np
from forgetmap.analysis import theory, theory_plots
from forgetmap.core.errors import InputError

CACHE_SIZE = 256


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


class TheoryLab:
    """The lab's computations: one at a time (at most one core for the lab), each outcome kept
    per parameter set, the newest ``cache_size`` of them."""

    def __init__(self, budget: float = DEFAULT_BUDGET_SECONDS, cache_size: int = CACHE_SIZE):
        self.budget = budget
        self.cache_size = cache_size
        self._outcomes: OrderedDict[LabParams, dict | InputError] = OrderedDict()
        self._computing = threading.Lock()

    def is_cached(self, p: LabParams) -> bool:
        """True when ``p``'s outcome is at hand: ``data`` answers it without computing."""
        return p in self._outcomes

    def data(self, p: LabParams) -> dict:
        """The lab's plots for ``p`` (cached). Raises InputError when the dynamics diverge or the
        computation runs past its budget, LabBusy when another one holds the lab for too long."""
        found = self._outcomes.get(p)
        if found is None:
            if not self._computing.acquire(timeout=self.budget):
                raise LabBusy("the theory lab is busy with another computation; retry shortly")
            try:
                found = self._outcomes.get(p)
                if found is None:
                    found = self._outcome(p)
                    self._outcomes[p] = found
                    while len(self._outcomes) > self.cache_size:
                        self._outcomes.popitem(last=False)
            finally:
                self._computing.release()
        if isinstance(found, InputError):
            raise found
        return found

    def _outcome(self, p: LabParams) -> dict | InputError:
        try:
            with theory.time_budget(self.budget):
                return _compute_lab(p)
        except theory.DivergedError as exc:
            return InputError(f"lr={p.lr}: {exc}")
        except theory.BudgetExceeded:
            return InputError(
                f"these parameters take over {self.budget:g} s to compute; use fewer steps "
                f"(now {p.steps}) or a smaller batch size"
            )


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
