"""The paper's cross-seed consensus exactly as its release computes it: reference code only.

Written from reading the release of "Mapping Post-Training Forgetting in Language Models at Scale"
(github.com/post-forget/post-forget): ``compute_cross_seed_statistics`` and the per-example
transitions of ``compare_models`` in ``src/analyze/process_data.py``, and the "Adj. 2 Seed"
columns of ``src/analyze/create_csv.py``. Its quirks are kept on purpose, since this is what
``forgetmap.core.consensus`` is checked against (``bench/consensus_release.py``,
``tests/unit/test_consensus.py``):

- per (task, seed) both models' rows are sorted by ``full_prompt`` and paired by position;
- an example whose ``metrics.extractive_match`` is missing on either side is dropped from that
  seed's list before seeds are compared, so seeds are aligned by position in what is left;
- a combination of seeds is compared over the shortest list of the combination;
- a seed whose list is empty is left out; a task needs two seeds.

File discovery is simpler than the release's (one ``details/<model>`` and ``results/<model>``
folder per model, as ``forgetmap.demo.layouts.paper.write_run`` writes them); the statistics are
not simplified. Not used by the app.
"""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import combinations
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

TYPES = ("0->0", "0->1", "1->0", "1->1")
SUFFIXES = ("_custom", "_reasoning_letter", "_reasoning_custom_prompt_letter")


def cross_seed_statistics(by_seed: dict, max_group_size: int = 3) -> dict:
    """The release's ``compute_cross_seed_statistics``: ``by_seed`` maps a seed to its list of
    transitions (strings of ``TYPES``), aligned by position."""
    seeds = list(by_seed)
    by_size = {}
    for k in range(2, min(len(seeds) + 1, max_group_size + 1)):
        combos = list(combinations(seeds, k))
        per_combo = []
        for combo in combos:
            lists = [by_seed[s] for s in combo]
            shortest = min(len(x) for x in lists)
            counts = dict.fromkeys(TYPES, 0)
            for i in range(shortest):
                seen = {x[i] for x in lists}
                if len(seen) == 1:
                    (only,) = seen
                    if only in counts:
                        counts[only] += 1
            per_combo.append(counts)
        by_size[k] = {
            "mean_counts": {t: np.mean([c[t] for c in per_combo]) for t in TYPES},
            "var_counts": {t: np.var([c[t] for c in per_combo]) for t in TYPES},
            "num_combos": len(combos),
        }
    totals = dict.fromkeys(TYPES, 0)
    for transitions in by_seed.values():
        for t in transitions:
            if t in totals:
                totals[t] += 1
    return {"by_size": by_size, "total_counts": totals}


def adj_two_seed(stats: dict) -> tuple[float, float]:
    """create_csv.py's "Adj. 2 Seed Abs. Forgetting" and "... Improvement": the mean 2-seed 1->0
    and 0->1 counts over the sum of the four mean 2-seed counts (NaN when that sum is 0)."""
    mean = stats["by_size"][2]["mean_counts"]
    denominator = sum(mean[t] for t in TYPES)
    if denominator == 0:
        return float("nan"), float("nan")
    return float(mean["1->0"] / denominator), float(mean["0->1"] / denominator)


def task_statistics(per_seed: dict, max_group_size: int = 3) -> dict | None:
    """compare_models' last step for one task: drop each seed's missing examples (None), keep the
    seeds with any example left, and compute the statistics when two seeds remain."""
    kept = {s: [t for t in ts if t] for s, ts in per_seed.items() if any(ts)}
    if len(kept) < 2:
        return None
    return cross_seed_statistics(kept, max_group_size)


def example_transitions(before: list, after: list) -> list:
    """Per position the transition "b->a" of two lists of metrics dicts (None: missing)."""
    out: list[str | None] = []
    for b_metrics, a_metrics in zip(before, after, strict=True):
        b = b_metrics.get("extractive_match") if isinstance(b_metrics, dict) else None
        a = a_metrics.get("extractive_match") if isinstance(a_metrics, dict) else None
        if b is None or a is None:
            out.append(None)
            continue
        key = f"{int(round(b))}->{int(round(a))}"
        if key in TYPES:
            out.append(key)
    return out


def _task_key(name: str) -> str:
    key = name[len("details_") : name.rfind("_")]
    for suffix in SUFFIXES:
        key = key.replace(suffix, "")
    return key


def _seed_files(root: Path, model: str) -> dict:
    """(task, seed) -> the latest details file of the model, seeds from its results files."""
    seed_of = {}
    for results in (root / "results" / model).rglob("results_*.json"):
        general = json.loads(results.read_text(encoding="utf-8")).get("config_general", {})
        seed = general.get("generation_parameters", {}).get("seed")
        if seed is not None:
            seed_of[results.name[len("results_") : -len(".json")]] = seed
    found = defaultdict(list)
    for details in (root / "details" / model).rglob("details_*.parquet"):
        stamp = details.name.rsplit("_", 1)[-1].replace(".parquet", "")
        if stamp in seed_of:
            found[(_task_key(details.name), seed_of[stamp])].append((stamp, details))
    return {key: max(files)[1] for key, files in found.items()}


def _sorted_metrics(file: Path) -> list:
    table = pq.read_table(file, columns=["full_prompt", "metrics"]).to_pylist()
    return [row["metrics"] for row in sorted(table, key=lambda row: row["full_prompt"])]


def transitions_from_files(root: Path, before: str, after: str) -> dict:
    """task -> seed -> per-example transitions (None kept), as compare_models builds them from an
    output tree: a (task, seed) whose two files differ in length is skipped."""
    base, post = _seed_files(root, before), _seed_files(root, after)
    out: dict = defaultdict(dict)
    for task, seed in sorted(set(base) & set(post), key=str):
        b, a = _sorted_metrics(base[(task, seed)]), _sorted_metrics(post[(task, seed)])
        if len(b) != len(a):
            continue
        out[task][seed] = example_transitions(b, a)
    return dict(out)
