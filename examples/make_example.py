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


LETTERS = "ABCDEFGHIJ"


def _texts(bench: str, i: int, k: int | None, correct: bool, model: str, rng) -> dict:
    """Prompt, options, gold and a response whose extracted answer agrees with ``correct``."""
    if k is None:
        gold = str(12 + 7 * i)
        answer = gold if correct else str(12 + 7 * i + int(rng.integers(1, 9)))
        prompt = (
            f"Question {i}: a shop sells {i + 2} boxes of 7 pens and 12 loose pens. How many pens?"
        )
        return {
            "prompt": prompt,
            "gold": gold,
            "prediction": answer,
            "response": f"Each box holds 7 pens, so {i + 2} boxes hold {7 * (i + 2)}; "
            f"with the 12 loose ones that is ... The final answer is {answer}.",
        }
    gold_index = (i * 7) % k
    gold = LETTERS[gold_index]
    pick = gold if correct else LETTERS[(gold_index + 1 + int(rng.integers(0, k - 1))) % k]
    options = [f"option {LETTERS[j]} of question {i}" for j in range(k)]
    prompt = f"Question {i} of {bench}: which option is right?\n" + "\n".join(
        f"{LETTERS[j]}. {o}" for j, o in enumerate(options)
    )
    if model == "instruct":
        reasoning = " ".join(
            f"Step {s}: consider option {LETTERS[s % k]}." for s in range(1 + i % 40)
        )
        response = f"Let's think step by step. {reasoning}\nAnswer: {pick}"
    else:
        response = f" {pick}\n\nQuestion {i + 1}:"
    return {
        "prompt": prompt,
        "gold": gold,
        "prediction": pick,
        "response": response,
        "choices": "[" + ", ".join(f'"{o}"' for o in options) + "]",
    }


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
                            **_texts(bench, i, k, bool(correct[i]), model, rng),
                        }
                    )
    for model, model_rows in rows.items():
        with (out / f"{model}.csv").open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(model_rows[0]))
            writer.writeheader()
            writer.writerows(model_rows)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "data/example"))
