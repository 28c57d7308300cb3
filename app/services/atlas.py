"""The atlas: which questions the most independent recipes forget beyond chance, and one question
across every pair.

A **recipe** is one way of post-training a base: a pair outside any series, or a whole series (a
training run's checkpoints), which counts once, through its latest checkpoint (what the run ended
with; its earlier steps show on the question's page). A merge sweep or a run's soups count once
too: as the recipe they start from (the pair, the run); their merged models are no recipes of
their own (``forgetmap.db.merge.merged_pairs``). Per question, ``forgot`` is how many recipes
forgot it (1->0 in at least half of their paired seeds), ``forgot_reliable`` how many of them
forgot it as a reliable change (1->0 in a strict majority of their seeds, beyond their noise floor
on its benchmark: ``forgetmap.core.consensus.reliable_flags``), and ``chance`` how many would by
luck alone: the sum, over the recipes that ran its benchmark, of their chance term for its k,
c = (1 - acc_pre)(1 - acc_post) / (k - 1) (``forgetmap.core.metrics.chance_and_ceilings``, averaged
over seeds; 0 for generative questions). Questions are ranked by ``beyond`` = forgot - chance.

Asking again (``forgetmap.analysis.probe``): ``probed`` is how many recipes asked the question
again in their newest probe, ``recovered`` how many of those recovered it, and
``recovered_control`` how many "recovered" it in the probe's shuffled control (another flip's
answer shown): the count to read ``recovered`` against. ``AtlasQuery.recovered_by_most`` keeps the
questions most of their probing recipes recovered: forgotten in the answers, still reachable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from forgetmap.core import metrics
from forgetmap.core.consensus import reliable_threshold
from forgetmap.core.naming import pair_label
from forgetmap.db import atlas as atlas_db
from forgetmap.db import merge as merge_db
from forgetmap.db import queries
from forgetmap.db import series as series_db
from forgetmap.db.queries import Columns, row_count
from forgetmap.services.map_cache import MapCache
from forgetmap.services.map_inputs import noise_grid, pair_noise

RANK_FIELDS = (
    "benchmark",
    "category",
    "sample_id",
    "k",
    "forgot",
    "learned",
    "held",
    "chance",
    "beyond",
    "forgot_reliable",
    "learned_reliable",
    "probed",
    "recovered",
    "recovered_control",
)
"""One ranked question (the atlas's JSON and CSV/Parquet export, in this order)."""


@dataclass(frozen=True)
class AtlasQuery:
    """Which questions (category, benchmark) and which recipes (family, stage, base size)."""

    category: str | None = None
    benchmark: str | None = None
    family: str | None = None
    stage: str | None = None
    min_size: int | None = None
    max_size: int | None = None
    recovered_by_most: bool = False  # only questions most of their probing recipes recovered

    def keeps(self, question: dict) -> bool:
        return not self.recovered_by_most or 2 * question["recovered"] > question["probed"] > 0

    def takes(self, recipe: dict) -> bool:
        size = recipe["size_params"]
        return (
            (self.family is None or recipe["family"] == self.family)
            and (self.stage is None or recipe["stage"] == self.stage)
            and (self.min_size is None or (size is not None and size >= self.min_size))
            and (self.max_size is None or (size is not None and size <= self.max_size))
        )


def recipes(cache: MapCache) -> list[dict]:
    """Every recipe: a pair outside any series, or a series through its latest checkpoint."""

    def load() -> list[dict]:
        pairs = cache.pairs()
        with cache.store.read() as conn:
            steps = series_db.pair_steps(conn)
            merged = merge_db.merged_pairs(conn)
        latest: dict[int, tuple[int, int]] = {}  # series id -> (step, pair id)
        for pair_id, (series_id, _, step) in steps.items():
            if series_id not in latest or step > latest[series_id][0]:
                latest[series_id] = (step, pair_id)
        chosen = {pair_id for _, pair_id in latest.values()}
        out = []
        for p in pairs:
            in_series = steps.get(p["id"])
            if (in_series is not None and p["id"] not in chosen) or p["id"] in merged:
                continue
            label = pair_label(p)
            if in_series is not None:
                label = f"series {in_series[1]} (step {in_series[2]})"
            out.append(
                {
                    "pair_id": p["id"],
                    "label": label,
                    "base": p["base"],
                    "post": p["post"],
                    "family": p["family"],
                    "size_params": p["size_params"],
                    "stage": p["stage"],
                    "series": in_series[1] if in_series else None,
                }
            )
        return out

    return cache.cache.get(("atlas-recipes",), load)


def _chance_by_benchmark(t: Columns) -> dict[tuple[int, int], float]:
    """(benchmark id, k) -> the chance terms of the recipes that ran it, each the mean over its
    seeds, summed over the recipes."""
    if not row_count(t):
        return {}
    n = {c: t[c].astype(np.float64) for c in ("n_00", "n_01", "n_10", "n_11")}
    total = n["n_00"] + n["n_01"] + n["n_10"] + n["n_11"]
    chance, _, _ = metrics.chance_and_ceilings(
        (n["n_10"] + n["n_11"]) / total, (n["n_01"] + n["n_11"]) / total, t["k"]
    )
    # the mean over seeds per (pair, benchmark, k), then the sum over pairs per (benchmark, k);
    # each key packed in one integer (k < 256, benchmark ids < 2^24)
    group = (t["benchmark_id"].astype(np.int64) << 8) | t["k"].astype(np.int64)
    recipe = (t["pair_id"].astype(np.int64) << 32) | group
    recipes_found, recipe_of_row = np.unique(recipe, return_inverse=True)
    per_recipe = np.bincount(recipe_of_row, weights=chance) / np.bincount(recipe_of_row)
    groups, group_of_recipe = np.unique(recipes_found & 0xFFFFFFFF, return_inverse=True)
    sums = np.bincount(group_of_recipe, weights=per_recipe)
    return {(int(g >> 8), int(g & 0xFF)): float(s) for g, s in zip(groups, sums, strict=True)}


def _reliable_thresholds(conn, pair_ids: list[int]) -> dict[tuple[int, int], int]:
    """(pair, benchmark) -> the fewest seeds a question must flip in for a reliable change there:
    a strict majority of its paired seeds, beyond the pair's noise floor on that benchmark
    (``forgetmap.core.consensus.reliable_threshold``)."""
    seeds = atlas_db.paired_seeds(conn, pair_ids)
    if not row_count(seeds):
        return {}
    bench = seeds["benchmark_id"].astype(np.int64)
    noise = pair_noise(
        noise_grid(conn),
        seeds["base_model_id"].astype(np.int64),
        seeds["post_model_id"].astype(np.int64),
        bench,
    )
    least = reliable_threshold(seeds["seeds"], noise)
    return {
        (int(p), int(b)): int(m)
        for p, b, m in zip(seeds["pair_id"].tolist(), bench.tolist(), least.tolist(), strict=True)
    }


def ranking(cache: MapCache, query: AtlasQuery) -> dict:
    """Every question some chosen recipe forgot or learned, ranked by ``beyond`` (then forgot,
    benchmark, sample id), and the recipes it counts (kept until the next write)."""

    def build() -> dict:
        chosen = [r for r in recipes(cache) if query.takes(r)]
        pair_ids = [r["pair_id"] for r in chosen]
        with cache.store.read() as conn:
            flips = atlas_db.question_flip_counts(
                conn,
                pair_ids,
                category=query.category,
                benchmark=query.benchmark,
                reliable_at=_reliable_thresholds(conn, pair_ids),
            )
            chance = _chance_by_benchmark(atlas_db.benchmark_transitions(conn, pair_ids))
            probed = atlas_db.question_probe_counts(conn, pair_ids)
        names = list(flips)
        rows = [
            dict(zip(names, values, strict=True))
            for values in zip(*(flips[c].tolist() for c in names), strict=True)
        ]
        for row in rows:
            row["chance"] = chance.get((row["benchmark_id"], row["k"]), 0.0)
            row["beyond"] = row["forgot"] - row["chance"]
            found = probed.get(row["question_id"], (0, 0, 0))
            row["probed"], row["recovered"], row["recovered_control"] = found
        rows = [row for row in rows if query.keeps(row)]
        rows.sort(key=lambda r: (-r["beyond"], -r["forgot"], r["benchmark"], r["sample_id"]))
        return {"recipes": chosen, "questions": rows}

    return cache.cache.get(("atlas", query), build)


def page(cache: MapCache, query: AtlasQuery, number: int, size: int) -> dict:
    """One page of the ranking with each question's text; ``total`` counts the forgotten ones."""
    ranked = ranking(cache, query)
    forgotten = [r for r in ranked["questions"] if r["forgot"] > 0]
    shown = forgotten[(number - 1) * size : number * size]
    with cache.store.read() as conn:
        texts = atlas_db.question_texts(conn, [r["question_id"] for r in shown])
    return {
        "recipes": len(ranked["recipes"]),
        "total": len(forgotten),
        "page": number,
        "page_size": size,
        "questions": [
            {
                **{f: r[f] for f in RANK_FIELDS},
                "question": texts.get(r["question_id"]),
            }
            for r in shown
        ],
    }


FATES = ("forgot", "learned", "kept", "never", "mixed")


def fate_of(base: list[bool], post: list[bool]) -> str:
    """A pair's fate on one question over its seeds: forgot (1->0 in at least half the seeds),
    learned (0->1 likewise), kept (right before and after in at least half), never (wrong
    before and after likewise), else mixed."""
    half = len(base) / 2
    cells = list(zip(base, post, strict=True))
    for fate, cell in (
        ("forgot", (True, False)),
        ("learned", (False, True)),
        ("kept", (True, True)),
        ("never", (False, False)),
    ):
        if cells.count(cell) >= half:
            return fate
    return "mixed"


def question_view(cache: MapCache, benchmark: str, sample_id: str) -> dict | None:
    """One question in every pair that holds it: per pair its fate, each seed's answers, and
    which recipe it belongs to; None when the benchmark or the question is not stored."""
    with cache.store.read() as conn:
        found = queries.benchmark_ids(conn, name=benchmark)
        if not found:
            return None
        bench = found[0]
        rows = atlas_db.question_across_pairs(conn, bench, sample_id)
        text = atlas_db.question_text(conn, bench, sample_id)
        steps = series_db.pair_steps(conn)
    if text is None and not rows:
        return None
    pairs = {p["id"]: p for p in cache.pairs()}
    recipe_ids = {r["pair_id"] for r in recipes(cache)}
    by_pair: dict[int, list[dict]] = {}
    for row in rows:
        by_pair.setdefault(row["pair_id"], []).append(row)
    out = []
    for pair_id, seeds in by_pair.items():
        p = pairs[pair_id]
        in_series = steps.get(pair_id)
        out.append(
            {
                "pair_id": pair_id,
                "label": pair_label(p),
                "base": p["base"],
                "post": p["post"],
                "stage": p["stage"],
                "series": in_series[1] if in_series else None,
                "step": in_series[2] if in_series else None,
                "recipe": pair_id in recipe_ids,
                "fate": fate_of(
                    [s["base_correct"] for s in seeds], [s["post_correct"] for s in seeds]
                ),
                "seeds": seeds,
            }
        )
    out.sort(key=lambda r: (FATES.index(r["fate"]), r["series"] or "", r["step"] or 0, r["label"]))
    gold = next((row["gold"] for row in rows if row["gold"] is not None), None)
    counts = {fate: sum(1 for r in out if r["fate"] == fate and r["recipe"]) for fate in FATES}
    return {
        "benchmark": benchmark,
        "sample_id": sample_id,
        "question": text,
        "gold": gold,
        "recipe_counts": counts,
        "pairs": out,
    }
