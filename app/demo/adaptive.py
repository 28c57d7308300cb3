"""Adaptive evaluation replayed on full per-sample results: what the adaptive map would have
shown, and what it would have cost, against the full map (bench/adaptive.py, the demo's tests).

A benchmark's samples are visited in the shared order
(``forgetmap.analysis.adaptive.evaluation_order``); each pair (base, post) is stopped by
``forgetmap.analysis.adaptive.run_stopping_rule`` on its own paired arrays (both models of a pair
stop at the same n) and, as an adaptive job does, evaluated to the end of the round that holds its
stopping point (``forgetmap.services.rounds.rounds_until``); a model is evaluated as far as the
furthest of its pairs needs (a base's first samples serve every pair built on it). The adaptive map
is the map's own aggregation (``forgetmap.core.metrics.aggregate_arrays``, macro) of each pair's
per-seed F_true / BT_true on the samples it evaluated, as the app's map uses every stored paired
sample; the full map the same on every sample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from forgetmap.analysis.adaptive import StoppingRule, evaluation_order, run_stopping_rule
from forgetmap.core.metrics import aggregate_arrays, scores_from_arrays
from forgetmap.services.rounds import rounds_until

__all__ = ["BenchmarkRun", "Replay", "benchmark_runs", "replay"]


@dataclass(frozen=True)
class BenchmarkRun:
    """The full per-sample results of one benchmark, samples in evaluation order."""

    name: str
    category: str
    k: np.ndarray  # (samples,) option count, 0 = generative
    correct: Mapping[str, np.ndarray]  # model -> (seeds, samples) 0/1
    tokens: Mapping[str, np.ndarray]  # model -> (seeds, samples) tokens processed

    @property
    def size(self) -> int:
        return int(self.k.size)


@dataclass(frozen=True)
class Replay:
    """The adaptive map against the full map, and what the adaptive run evaluated."""

    full: dict[tuple[str, str], dict]  # (post model, category or "Total") -> map row
    adaptive: dict[tuple[str, str], dict]
    stopped: dict[tuple[str, str], int]  # (post model, benchmark) -> n where the pair stopped
    # (model, benchmark) -> samples evaluated (per seed): its pairs' furthest round end
    evaluated: dict[tuple[str, str], int]
    samples_used: int  # over models, benchmarks and seeds
    samples_full: int
    tokens_used: float
    tokens_full: float

    @property
    def samples(self) -> float:
        """Samples evaluated, adaptive over full (a fraction)."""
        return self.samples_used / self.samples_full

    @property
    def tokens(self) -> float:
        """Tokens processed, adaptive over full (a fraction)."""
        return self.tokens_used / self.tokens_full

    def deviations(self) -> list[tuple[float, tuple[str, str], str]]:
        """(|adaptive - full| in points, (pair, category), "f_true" / "bt_true"), largest first."""
        return sorted(
            (
                (abs(self.adaptive[key][name] - self.full[key][name]) * 100, key, name)
                for key in self.full
                for name in ("f_true", "bt_true")
            ),
            key=lambda d: (-d[0], d[1], d[2]),
        )

    @property
    def max_deviation(self) -> float:
        """The largest deviation, in points."""
        return self.deviations()[0][0]


def _unit_scores(pre: np.ndarray, post: np.ndarray, k: np.ndarray) -> dict[str, np.ndarray]:
    """Per-seed F_true / BT_true of one benchmark (the metric, through forgetmap.core.metrics)."""
    keys, group = np.unique(k, return_inverse=True)
    cells = 2 * pre.astype(np.int64) + post  # (seeds, n)
    counts = np.zeros((pre.shape[0], keys.size, 4))
    for s in range(pre.shape[0]):
        np.add.at(counts[s], (group, cells[s]), 1.0)
    rows = counts.reshape(-1, 4)
    keep = rows.sum(axis=1) > 0
    unit = np.repeat(np.arange(pre.shape[0]), keys.size)
    return scores_from_arrays(
        rows[keep, 0],
        rows[keep, 1],
        rows[keep, 2],
        rows[keep, 3],
        np.tile(keys, pre.shape[0])[keep],
        unit[keep],
    )


def replay(
    runs: Sequence[BenchmarkRun], pairs: Sequence[tuple[str, str]], rule: StoppingRule
) -> Replay:
    """Stop every (pair, benchmark) by ``rule`` and compare the adaptive map with the full map.

    ``pairs``: (base, post) model names; each post model names its pair in the maps. Samples and
    tokens count every model of a pair once per benchmark and seed, as far as its furthest pair
    went (adaptive) or on every sample (full)."""
    columns: dict[str, list] = {c: [] for c in ("pair", "category", "benchmark", "seed", "n")}
    values: dict[str, dict[str, list]] = {
        kind: {"f_true": [], "bt_true": []} for kind in ("full", "adaptive")
    }
    stopped: dict[tuple[str, str], int] = {}
    evaluated: dict[tuple[str, str], int] = {}
    for run in runs:
        for base, post in pairs:
            pre, post_c = run.correct[base], run.correct[post]
            n = run_stopping_rule(pre, post_c, run.k, rule).n
            stopped[(post, run.name)] = n
            _, reached = rounds_until(rule, n, run.size)
            for model in (base, post):
                evaluated[(model, run.name)] = max(evaluated.get((model, run.name), 0), reached)
            full = _unit_scores(pre, post_c, run.k)
            part = _unit_scores(pre[:, :reached], post_c[:, :reached], run.k[:reached])
            for s in range(pre.shape[0]):
                for col, value in zip(
                    columns, (post, run.category, run.name, s, run.size), strict=True
                ):
                    columns[col].append(value)
                for name in ("f_true", "bt_true"):
                    values["full"][name].append(full[name][s])
                    values["adaptive"][name].append(part[name][s])

    def category_map(kind: str) -> dict[tuple[str, str], dict]:
        records = aggregate_arrays(
            np.array(columns["pair"], dtype=object),
            np.array(columns["category"], dtype=object),
            np.array(columns["benchmark"], dtype=object),
            np.array(columns["seed"]),
            np.array(columns["n"]),
            {k: np.array(v) for k, v in values[kind].items()},
            how="macro",
        )
        return {(r["pair"], r["category"]): r for r in records}

    used = full_n = 0
    tokens_used = tokens_full = 0.0
    by_name = {run.name: run for run in runs}
    for (model, bench), n in evaluated.items():
        run = by_name[bench]
        seeds = run.correct[model].shape[0]
        used += n * seeds
        full_n += run.size * seeds
        tokens_used += float(run.tokens[model][:, :n].sum())
        tokens_full += float(run.tokens[model].sum())
    return Replay(
        category_map("full"),
        category_map("adaptive"),
        stopped,
        evaluated,
        used,
        full_n,
        tokens_used,
        tokens_full,
    )


def benchmark_runs(
    benchmarks: Mapping[str, Sequence],
    results: Mapping[str, Mapping[tuple[str, str, int], bool]],
    tokens: Mapping[str, Mapping[tuple[str, str, int], int]],
    seeds: Sequence[int],
) -> list[BenchmarkRun]:
    """The demo evaluation's per-sample results (``ZooReport.results`` and ``.tokens``: model ->
    (benchmark, sample id, seed) -> value) as runs in evaluation order, for every model that has
    every sample of the benchmark under every seed."""
    runs = []
    for name, items in benchmarks.items():
        by_id = {it.sample_id: it for it in items}
        order = evaluation_order(name, by_id)
        k = np.array([by_id[sid].k or 0 for sid in order], dtype=np.int64)
        keys = [[(name, sid, seed) for sid in order] for seed in seeds]
        correct, counts = {}, {}
        for model, res in results.items():
            if all(key in res for row in keys for key in row):
                correct[model] = np.array([[res[key] for key in row] for row in keys], np.int8)
                counts[model] = np.array(
                    [[tokens[model][key] for key in row] for row in keys], dtype=np.float64
                )
        runs.append(BenchmarkRun(name, items[0].category or "", k, correct, counts))
    return runs
