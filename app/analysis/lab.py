"""The theory lab's page data: the four plots of app.analysis.theory for one set of parameters."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from app.analysis import theory


@dataclass(frozen=True)
class LabParams:
    separation: float = 6.0  # distance between the old and new means, in units of x
    sigma: float = 1.0
    replay: float = 0.3  # fraction lambda of old data mixed into SFT / REINFORCE batches
    lr: float = 1.0
    steps: int = 300
    batch_size: int = 8


def lab_data(p: LabParams) -> dict:
    separations = np.linspace(
        max(2.0 * p.sigma, p.separation - 3.0 * p.sigma), p.separation + 3.0 * p.sigma, 13
    )
    return {
        "params": asdict(p),
        "weights": theory.old_weight_curves(p.separation, p.sigma, lr=p.lr, steps=p.steps),
        "drift": theory.drift_vs_separation(separations, p.sigma, lr=p.lr, steps=min(p.steps, 300)),
        "replay": theory.final_weight_vs_replay(
            np.linspace(0.0, 0.5, 11), p.separation, p.sigma, lr=p.lr, steps=p.steps
        ),
        "starvation": theory.starvation_share(
            batch_sizes=(1, 2, 4, 8, 16, 32),
            replay=p.replay,
            separation=p.separation,
            sigma=p.sigma,
            steps=min(p.steps, 200),
            run_batch_size=p.batch_size,
        ),
        "bc": float(theory.bhattacharyya_coefficient(p.separation, p.sigma)),
    }
