"""Write a small, deterministic example: a base model and its instruct-tuned descendant.

Per-sample results on a handful of the paper's benchmarks, three seeds each, in the generic table
format (CSV). The post-trained model forgets some knowledge questions and gains on math, and both
models resample ~5% of their answers between seeds, so the noise floor is visible.

    python examples/make_example.py OUT_DIR
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

BENCHMARKS = {
    # name: (num_choices, base accuracy, P(forget | base right), P(gain | base wrong))
    "mmlu_global_facts": (4, 0.55, 0.20, 0.10),
    "mmlu_anatomy": (4, 0.65, 0.12, 0.15),
    "mmlu_high_school_mathematics": (4, 0.40, 0.05, 0.30),
    "arc_challenge": (4, 0.70, 0.06, 0.25),
    "piqa": (2, 0.78, 0.08, 0.20),
    "social_iqa": (3, 0.60, 0.10, 0.20),
    "bbh_cot_fewshot_navigate": (2, 0.55, 0.15, 0.25),
    "gsm8k_cot": (None, 0.35, 0.05, 0.35),
}
SAMPLES = 200
SEEDS = (0, 1, 2)


def main(out: Path) -> None:
    rng = np.random.default_rng(20261129)
    out.mkdir(parents=True, exist_ok=True)
    rows = {"base": [], "instruct": []}
    for bench, (k, acc, p_forget, p_gain) in BENCHMARKS.items():
        skill = rng.random(SAMPLES) < acc  # what the base model knows
        forgets = rng.random(SAMPLES) < p_forget
        gains = rng.random(SAMPLES) < p_gain
        after = np.where(skill, ~forgets, gains)
        for seed in SEEDS:
            for model, truth in (("base", skill), ("instruct", after)):
                resample = rng.random(SAMPLES) < 0.05
                guess = rng.random(SAMPLES) < (1 / k if k else 0.0)
                correct = np.where(resample, guess, truth)
                for i in range(SAMPLES):
                    rows[model].append(
                        {
                            "model": f"example-7b-{model}",
                            "benchmark": bench,
                            "sample_id": f"{bench}-{i:04d}",
                            "seed": seed,
                            "correct": int(correct[i]),
                            "num_choices": k or "",
                            "category": "Math" if k is None else "",
                            "prompt": f"Example question {i} of {bench}",
                            "response": "Answer: A" if k else "The answer is 42.",
                        }
                    )
    for model, model_rows in rows.items():
        with (out / f"{model}.csv").open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(model_rows[0]))
            writer.writeheader()
            writer.writerows(model_rows)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "data/example"))
