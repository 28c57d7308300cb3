"""Adaptive evaluation: coverage of the stopping-point interval, and a replay of the stopping rule
on per-sample results against the full map.

1. **Coverage C** (tests/adaptive_sim.py): simulated benchmarks with a known F_true / BT_true
   (k = 2..10, mixed, generative, greedy and sampled seeds, accuracies from chance to ~1, flip
   rates from 0 to tens of points, n = 100..6000, 3 seeds); app.adaptive's rule stops each one and
   C is the share whose 95% interval at the stopping point holds the truth (the lower of the
   F_true and BT_true shares).
2. **Replay** (D, S, X): the full per-sample correctness of several pairs on the paper's 94 scored
   benchmarks and 3 seeds, each benchmark visited in the shared order (``evaluation_order``) and
   stopped by the rule, pair by pair. The adaptive map (F_true / BT_true at the stopping point)
   is compared with the full map per (pair, category) and "Total", macro aggregation as the map
   does it (``app.metrics.aggregate_arrays``): D is the largest deviation in points. A base is
   evaluated as far as the furthest of its pairs needs (its first samples serve every pair), so
   S counts per (model, benchmark) the samples the furthest pair used, against every model on
   every sample. X does the same with token counts.

The replay data is **simulated**, not the demo zoo: the demo zoo's benchmarks have 40-60 samples
each (app/demo/suite.py), too few for any benchmark to stop before its end at a 1.5-point target,
and building and evaluating it through a worker takes longer than this bench. The simulated zoo:
the taxonomy's 94 scored benchmarks with approximately their public split sizes (MMLU test
subjects, BBH 250 (some 146-187), ARC, HellaSwag validation 10,042, ...), the usual k or a per-item
k where the real items vary, a difficulty per sample shared by every model, two bases and four
post-trained models (narrow SFT that forgets outside Math, SFT with replay, instruction tuning on
each base) with per-category skill shifts and per-item changes; an answer is right when a uniform
draw falls under the model's p for the item, the draw is kept per item across seeds except in
35% of (item, seed) cases (sampling at temperature 0.6 changes some answers, not all) and shared
with the base on 70% of items for a post model; and a generated-token count per (model, sample, seed) drawn
from a length model (chain of thought for the post models, short few-shot answers for the bases,
longer on harder items and in Math/Logic). The token counts are simulated too; the output says so.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.adaptive import StoppingRule, evaluation_order, run_stopping_rule  # noqa: E402
from app.metrics import TOTAL, aggregate_arrays, scores_from_arrays  # noqa: E402
from app.taxonomy import scored_benchmarks  # noqa: E402
from tests.adaptive_sim import simulate_coverage  # noqa: E402

SEEDS = 3

# approximate public split sizes (test for MMLU, validation where the test has no labels)
_MMLU_SIZES = {
    "abstract_algebra": 100, "anatomy": 135, "astronomy": 152, "business_ethics": 100,
    "clinical_knowledge": 265, "college_biology": 144, "college_chemistry": 100,
    "college_computer_science": 100, "college_mathematics": 100, "college_medicine": 173,
    "college_physics": 102, "computer_security": 100, "conceptual_physics": 235,
    "econometrics": 114, "electrical_engineering": 145, "elementary_mathematics": 378,
    "formal_logic": 126, "global_facts": 100, "high_school_biology": 310,
    "high_school_chemistry": 203, "high_school_computer_science": 100,
    "high_school_european_history": 165, "high_school_geography": 198,
    "high_school_government_and_politics": 193, "high_school_macroeconomics": 390,
    "high_school_mathematics": 270, "high_school_microeconomics": 238, "high_school_physics": 151,
    "high_school_psychology": 545, "high_school_statistics": 216, "high_school_us_history": 204,
    "high_school_world_history": 237, "human_aging": 223, "human_sexuality": 131,
    "international_law": 121, "jurisprudence": 108, "logical_fallacies": 163,
    "machine_learning": 112, "management": 103, "marketing": 234, "medical_genetics": 100,
    "miscellaneous": 783, "moral_disputes": 346, "moral_scenarios": 895, "nutrition": 306,
    "philosophy": 311, "prehistory": 324, "professional_accounting": 282,
    "professional_law": 1534, "professional_medicine": 272, "professional_psychology": 612,
    "public_relations": 110, "security_studies": 245, "sociology": 201, "us_foreign_policy": 100,
    "virology": 166, "world_religions": 171,
}  # fmt: skip
_OTHER_SIZES = {
    "commonsense_qa": 1221, "piqa": 1838, "arc:easy": 2376, "arc:challenge": 1172,
    "hellaswag": 10042, "social_iqa": 1954, "mctest": 840, "truthfulqa:mc1": 817,
    "salad_bench:mrq": 3000, "gpqa:diamond": 198, "musr:murder_mysteries": 250,
    "musr:object_placements": 256, "musr:team_allocation": 250, "bbh:causal_judgment": 187,
    "bbh:penguins_in_a_table": 146, "bbh:snarks": 178,
}  # fmt: skip
# option counts drawn per item where the real items vary
_PER_ITEM_K = {
    "bbh:movie_recommendation": (4, 5, 6), "bbh:penguins_in_a_table": (4, 5),
    "bbh:reasoning_about_colored_objects": (2, 3, 4, 6, 18), "bbh:date_understanding": (5, 6),
    "musr:murder_mysteries": (2,), "musr:object_placements": (3, 4, 5), "musr:team_allocation": (3,),
    "bbh:disambiguation_qa": (3, 4), "bbh:ruin_names": (4, 5, 6), "bbh:geometric_shapes": (10, 11),
    "truthfulqa:mc1": (4, 5, 6, 7, 8, 9, 10, 11, 12, 13), "salad_bench:mrq": (2, 3, 4),
}  # fmt: skip


def _size(name: str) -> int:
    if name.startswith("mmlu:"):
        return _MMLU_SIZES.get(name.split(":", 1)[1], 200)
    return _OTHER_SIZES.get(name, 250)


@dataclass(frozen=True)
class PostModel:
    name: str
    base: str
    shift: dict  # category -> skill change; "*" for the rest
    item_change: float  # sd of per-item changes (how much the model reshuffles what it knows)
    cot_tokens: float  # median generated tokens on an item of average difficulty


BASES = {"base-a": 1.2, "base-b": 0.6}  # mean skill; per-category skill drawn around it
POSTS = (
    PostModel("a-sft-math", "base-a", {"Math": 0.8, "*": -0.6}, 0.8, 520.0),
    PostModel("a-sft-math-replay", "base-a", {"Math": 0.7, "*": -0.1}, 0.45, 500.0),
    PostModel("a-instruct", "base-a", {"*": 0.2}, 0.5, 380.0),
    PostModel("b-instruct", "base-b", {"*": 0.3, "Knowledge/QA": -0.3}, 0.6, 400.0),
)
BASE_TOKENS = 40.0  # few-shot base prompting: short answers
RESAMPLE = 0.35  # share of (item, seed) answers drawn afresh rather than the model's usual one
KEEP_BASE = 0.7  # share of items on which a post model keeps its base's per-item draw


@dataclass
class ZooBenchmark:
    name: str
    category: str
    k: np.ndarray  # (n,), 0 = generative
    correct: dict  # model -> (seeds, n) 0/1, samples in evaluation order
    tokens: dict  # model -> (seeds, n) generated tokens


def simulate_zoo(seed: int) -> list[ZooBenchmark]:
    rng = np.random.default_rng(seed)
    infos = scored_benchmarks()
    categories = sorted({b.category for b in infos})
    base_skill = {
        base: {c: rng.normal(mean, 0.5) for c in categories} for base, mean in BASES.items()
    }
    out = []
    for info in infos:
        n = _size(info.name)
        if info.name in _PER_ITEM_K:
            k = rng.choice(_PER_ITEM_K[info.name], size=n).astype(np.int64)
        else:
            k = np.full(n, info.num_choices or 4, dtype=np.int64)
        guess = 1.0 / k
        difficulty = rng.normal(0.0, 1.6, n)
        length_scale = 1.6 if info.category in ("Math", "Logic") else 1.0
        logits = {b: base_skill[b][info.category] - difficulty for b in BASES}
        for post in POSTS:
            shift = post.shift.get(info.category, post.shift.get("*", 0.0))
            logits[post.name] = logits[post.base] + shift + rng.normal(0, post.item_change, n)
        # An answer is correct when a uniform draw falls under p. Each model has one draw per item
        # that its seeds reuse unless they resample (RESAMPLE of the time: sampling at T = 0.6
        # changes some answers, not all), and a post model reuses its base's per-item draw
        # KEEP_BASE of the time (post-training leaves most answers, and most guesses, alone).
        item_draw = {b: rng.random(n) for b in BASES}
        for post in POSTS:
            fresh = rng.random(n)
            item_draw[post.name] = np.where(rng.random(n) < KEEP_BASE, item_draw[post.base], fresh)
        correct, tokens = {}, {}
        for model, logit in logits.items():
            p = guess + (1 - guess) / (1 + np.exp(-logit))
            draw = np.where(
                rng.random((SEEDS, n)) < RESAMPLE, rng.random((SEEDS, n)), item_draw[model]
            )
            correct[model] = (draw < p).astype(np.int8)
            median = BASE_TOKENS if model in BASES else next(
                m.cot_tokens for m in POSTS if m.name == model
            )  # fmt: skip
            tokens[model] = np.ceil(
                median * length_scale * np.exp(0.35 * difficulty + rng.normal(0, 0.5, (SEEDS, n)))
            )
        # the shared order: ids hashed with the benchmark name; arrays permuted into that order
        ids = [f"{info.name}/{i}" for i in range(n)]
        position = {sid: i for i, sid in enumerate(ids)}
        order = np.array([position[sid] for sid in evaluation_order(info.name, ids)])
        out.append(
            ZooBenchmark(
                info.name,
                info.category,
                k[order],
                {m: c[:, order] for m, c in correct.items()},
                {m: t[:, order] for m, t in tokens.items()},
            )
        )
    return out


def _unit_scores(pre: np.ndarray, post: np.ndarray, k: np.ndarray) -> dict[str, np.ndarray]:
    """Per-seed F_true / BT_true of one benchmark (the metric, through app.metrics)."""
    keys, group = np.unique(k, return_inverse=True)
    cells = 2 * pre.astype(np.int64) + post  # (seeds, n)
    counts = np.zeros((pre.shape[0], keys.size, 4))
    for s in range(pre.shape[0]):
        np.add.at(counts[s], (group, cells[s]), 1.0)
    rows = counts.reshape(-1, 4)
    keep = rows.sum(axis=1) > 0
    unit = np.repeat(np.arange(pre.shape[0]), keys.size)
    return scores_from_arrays(
        rows[keep, 0], rows[keep, 1], rows[keep, 2], rows[keep, 3],
        np.tile(keys, pre.shape[0])[keep], unit[keep],
    )  # fmt: skip


def replay(zoo: list[ZooBenchmark], rule: StoppingRule) -> dict:
    columns: dict[str, list] = {c: [] for c in ("pair", "category", "benchmark", "seed", "n")}
    full_values = {"f_true": [], "bt_true": []}
    adaptive_values = {"f_true": [], "bt_true": []}
    evaluated: dict[
        tuple[str, str], int
    ] = {}  # (model, benchmark) -> samples the furthest pair used
    early = 0
    by_size: dict[str, list[int]] = {}  # size bucket -> [samples used, samples] over pairs
    for bench in zoo:
        n_total = bench.k.size
        for post in POSTS:
            pre, post_c = bench.correct[post.base], bench.correct[post.name]
            result = run_stopping_rule(pre, post_c, bench.k, rule)
            early += result.n < n_total
            bucket = by_size.setdefault(_bucket(n_total), [0, 0])
            bucket[0] += result.n
            bucket[1] += n_total
            for model in (post.base, post.name):
                key = (model, bench.name)
                evaluated[key] = max(evaluated.get(key, 0), result.n)
            full = _unit_scores(pre, post_c, bench.k)
            part = _unit_scores(pre[:, : result.n], post_c[:, : result.n], bench.k[: result.n])
            for s in range(SEEDS):
                columns["pair"].append(post.name)
                columns["category"].append(bench.category)
                columns["benchmark"].append(bench.name)
                columns["seed"].append(s)
                columns["n"].append(n_total)
                for name in full_values:
                    full_values[name].append(full[name][s])
                    adaptive_values[name].append(part[name][s])

    def category_map(values: dict) -> dict[tuple, dict]:
        records = aggregate_arrays(
            np.array(columns["pair"], dtype=object), np.array(columns["category"], dtype=object),
            np.array(columns["benchmark"], dtype=object), np.array(columns["seed"]),
            np.array(columns["n"]), {k: np.array(v) for k, v in values.items()}, how="macro",
        )  # fmt: skip
        return {(r["pair"], r["category"]): r for r in records}

    full_map, adaptive_map = category_map(full_values), category_map(adaptive_values)
    deviations = sorted(
        (
            (abs(adaptive_map[key][name] - full_map[key][name]) * 100, key, name)
            for key in full_map
            for name in ("f_true", "bt_true")
        ),
        reverse=True,
    )
    samples_used = samples_full = tokens_used = tokens_full = 0.0
    for bench in zoo:
        for model, counts in bench.tokens.items():
            n = evaluated[(model, bench.name)]
            samples_used += n * SEEDS
            samples_full += bench.k.size * SEEDS
            tokens_used += counts[:, :n].sum()
            tokens_full += counts.sum()
    return {
        "deviations": deviations,
        "full_map": full_map,
        "samples": samples_used / samples_full,
        "tokens": tokens_used / tokens_full,
        "early": early,
        "units": len(zoo) * len(POSTS),
        "by_size": by_size,
    }


def _bucket(n: int) -> str:
    return "n<500" if n < 500 else "500<=n<2000" if n < 2000 else "n>=2000"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 simulated benchmarks, 1 zoo")
    parser.add_argument("--target", type=float, default=1.5, help="target half-width, points")
    parser.add_argument("--min-samples", type=int, default=StoppingRule.min_samples)
    parser.add_argument("--chunk", type=int, default=StoppingRule.chunk_size)
    args = parser.parse_args(argv)
    rule = StoppingRule(
        target_half_width=args.target / 100, min_samples=args.min_samples, chunk_size=args.chunk
    )
    simulations, zoos = (1000, (0,)) if args.quick else (5000, (0, 1, 2))

    start = time.perf_counter()
    coverage = simulate_coverage(simulations, rule, seed=0)
    print(
        f"simulation: {coverage.benchmarks} benchmarks with known F_true/BT_true (k 2-10, mixed, "
        f"generative; n 100-6000; 3 seeds; 1 in 5 greedy): 95% interval at the stopping point "
        f"covers F_true {coverage.f_true:.3f}, BT_true {coverage.bt_true:.3f}, both "
        f"{coverage.both:.3f}; stopped early {coverage.stopped_early:.0%}, samples used "
        f"{coverage.samples_used:.1%} ({time.perf_counter() - start:.1f} s)"
    )
    print(
        "replay data: SIMULATED zoo-like per-sample results, not the demo zoo (its benchmarks have "
        "40-60 samples); the paper's 94 scored benchmarks at approximately their public sizes, "
        f"{len(POSTS)} pairs on {len(BASES)} bases, {SEEDS} seeds, difficulty per sample shared by "
        "all models; token counts SIMULATED per (model, sample, seed)"
    )
    worst, samples, tokens = 0.0, [], []
    for zoo_seed in zoos:
        start = time.perf_counter()
        zoo = simulate_zoo(zoo_seed)
        result = replay(zoo, rule)
        seed_flips = np.mean(
            [np.mean(b.correct[m][0] != b.correct[m][1]) for b in zoo for m in BASES]
        )
        top = result["deviations"][0]
        print(
            f"zoo {zoo_seed}: {result['early']}/{result['units']} (pair, benchmark) stopped early; "
            f"max deviation {top[0]:.2f} points ({top[2]}, {top[1][0]}, {top[1][1]}; full value "
            f"{result['full_map'][top[1]][top[2]] * 100:.1f}); Total deviations "
            + ", ".join(
                f"{key[0]} {d:.2f}"
                for d, key, name in result["deviations"]
                if key[1] == TOTAL and name == "f_true"
            )  # fmt: skip
            + f" (F_true); samples {result['samples']:.1%}, tokens {result['tokens']:.1%} "
            f"({time.perf_counter() - start:.1f} s)"
        )
        print(
            f"zoo {zoo_seed}: bases' seed-vs-seed flip rate {seed_flips:.1%}; samples used per "
            "pair by benchmark size: "
            + ", ".join(
                f"{name} {used / total:.0%} of {total // len(POSTS):,}"
                for name, (used, total) in sorted(result["by_size"].items())
            )
        )
        worst = max(worst, top[0])
        samples.append(result["samples"])
        tokens.append(result["tokens"])
    print(
        f"adaptive: coverage {coverage.worst:.3f}, max deviation {worst:.2f} points "
        f"(target {args.target:.2f}), samples {np.mean(samples) * 100:.1f}% of full, "
        f"tokens {np.mean(tokens) * 100:.1f}% of full"
    )


if __name__ == "__main__":
    main()
