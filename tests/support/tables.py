"""A hand-computed example pair as a CSV table (the golden values in test_import_and_map.py)."""

from __future__ import annotations

import csv
from pathlib import Path

BASE = {
    ("mmlu_anatomy", 0): [1, 1, 1, 1, 1, 1, 1, 1, 0, 0],
    ("mmlu_anatomy", 1): [1, 1, 1, 1, 1, 1, 0, 0, 0, 0],
    ("toy_arith", 0): [1, 1, 0, 0],
    ("toy_arith", 1): [1, 1, 1, 0],
}
POST = {
    ("mmlu_anatomy", 0): [1, 1, 1, 1, 1, 1, 1, 0, 0, 1],
    ("mmlu_anatomy", 1): [1, 1, 1, 1, 0, 0, 1, 0, 0, 0],
    ("toy_arith", 0): [0, 1, 0, 1],
    ("toy_arith", 1): [1, 1, 1, 0],
}


def rows_for(model: str, data: dict) -> list[dict]:
    rows = []
    for (bench, seed), values in data.items():
        for i, correct in enumerate(values):
            rows.append(
                {
                    "model": model,
                    "benchmark": bench,
                    "sample_id": f"q{i}",
                    "seed": seed,
                    "correct": correct,
                    "num_choices": 4 if bench.startswith("mmlu") else "",
                    "category": "" if bench.startswith("mmlu") else "Math",
                    "prompt": f"question {i} of {bench}",
                    "response": f"answer {i}",
                }
            )
    return rows


def write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path
