"""Adaptive evaluation: coverage of the stopping-point interval, and the stopping rule replayed
on the demo zoo's per-sample results against its full map.

1. **Coverage C** (app/demo/adaptive_sim.py): simulated benchmarks with a known F_true / BT_true
   (k = 2..10, mixed, generative, greedy and sampled seeds, accuracies from chance to ~1, flip
   rates from 0 to tens of points, n = 100..6000, 3 seeds); forgetmap.analysis.adaptive's rule stops
   each one and C is the share whose 95% interval at the stopping point holds the truth (the lower
   of the F_true and BT_true shares). The line also gives the share among benchmarks stopped early,
   at the end of the round that holds the stopping point (what a job evaluates) and after a
   continuation with a tighter target.
2. **Demo zoo** (D, S, X; app/demo/adaptive.py): the demo zoo built with a scaled suite
   (``Recipe(suite_scale=...)``: every benchmark ``scale`` times its 40-60 items, the world grown
   with it; ``DEMO_SCALE`` = 60, the largest, unless ``--scale``; at scale 1 no benchmark could
   stop before its end at a 1.5-point target) and
   evaluated in-process on every sample (app/demo/evaluate.py: the worker's prompts and scoring,
   eval seeds 0, 1, 2). Each benchmark is visited in the shared order (``evaluation_order``) and
   every pair (demo-base against each post-trained model) is stopped by the rule; both models of
   a pair stop at the same n and are evaluated, as a job does, to the end of the round that holds
   it (rounds grow 1.5x: ``forgetmap.services.rounds.rounds_until``), and a model is evaluated as
   far as the furthest of its pairs needs.
   The adaptive map (F_true / BT_true of each pair on what it evaluated) is compared with the
   full map per (pair, category) and "Total", macro aggregation as the map does it
   (``forgetmap.core.metrics.aggregate_arrays``): D is the largest deviation in points. S: samples
   evaluated (per model, benchmark and seed: the furthest pair's round end) over the full run's
   (every model on every sample). X: the same with tokens (``forgetmap.demo.evaluate.Tokens``: per
   sample, by the model's own tokenizer, prompt + option tokens of a loglik-scored item, prompt +
   generated tokens of a generated answer). The zoo is cached by recipe (``--zoo-dir``) and its
   evaluation next to it, so a second run only replays.
3. **Stopping points by flip rate** (``stopping_points``): where the rule stops a simulated
   4-option benchmark (base accuracy 0.8, 3 seeds) by how often the post model flips an answer.
   S <= 50% needs benchmarks at least twice that long: it says which zoo could show it.
4. **Simulated paper-shaped suite** (``--simulated``, off by default): the same replay on
   SIMULATED per-sample results of the taxonomy's 94 scored benchmarks at about their public
   split sizes (difficulty per sample shared by all models, two bases and four post-trained
   models, 35% of (item, seed) answers redrawn per seed, simulated chain-of-thought token counts).
   It shows where savings come from on real sizes; the final line never uses it.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from forgetmap.analysis.adaptive import StoppingRule, evaluation_order, run_stopping_rule  # noqa: E402
from forgetmap.core.metrics import TOTAL  # noqa: E402
from forgetmap.core.taxonomy import scored_benchmarks  # noqa: E402
from forgetmap.demo.adaptive import BenchmarkRun, Replay, benchmark_runs, replay  # noqa: E402
from forgetmap.demo.adaptive_sim import simulate_coverage  # noqa: E402
from forgetmap.demo.evaluate import evaluate_zoo, load_benchmarks  # noqa: E402
from forgetmap.demo.manifest import Recipe  # noqa: E402
from forgetmap.demo.zoo import build_zoo  # noqa: E402

SEEDS = 3

# approximate public split sizes (test for MMLU, validation where the test has no labels)
_MMLU_SIZES = {
    "abstract_algebra": 100,
    "anatomy": 135,
    "astronomy": 152,
    "business_ethics": 100,
    "clinical_knowledge": 265,
    "college_biology": 144,
    "college_chemistry": 100,
    "college_computer_science": 100,
    "college_mathematics": 100,
    "college_medicine": 173,
    "college_physics": 102,
    "computer_security": 100,
    "conceptual_physics": 235,
    "econometrics": 114,
    "electrical_engineering": 145,
    "elementary_mathematics": 378,
    "formal_logic": 126,
    "global_facts": 100,
    "high_school_biology": 310,
    "high_school_chemistry": 203,
    "high_school_computer_science": 100,
    "high_school_european_history": 165,
    "high_school_geography": 198,
    "high_school_government_and_politics": 193,
    "high_school_macroeconomics": 390,
    "high_school_mathematics": 270,
    "high_school_microeconomics": 238,
    "high_school_physics": 151,
    "high_school_psychology": 545,
    "high_school_statistics": 216,
    "high_school_us_history": 204,
    "high_school_world_history": 237,
    "human_aging": 223,
    "human_sexuality": 131,
    "international_law": 121,
    "jurisprudence": 108,
    "logical_fallacies": 163,
    "machine_learning": 112,
    "management": 103,
    "marketing": 234,
    "medical_genetics": 100,
    "miscellaneous": 783,
    "moral_disputes": 346,
    "moral_scenarios": 895,
    "nutrition": 306,
    "philosophy": 311,
    "prehistory": 324,
    "professional_accounting": 282,
    "professional_law": 1534,
    "professional_medicine": 272,
    "professional_psychology": 612,
    "public_relations": 110,
    "security_studies": 245,
    "sociology": 201,
    "us_foreign_policy": 100,
    "virology": 166,
    "world_religions": 171,
}
_OTHER_SIZES = {
    "commonsense_qa": 1221,
    "piqa": 1838,
    "arc:easy": 2376,
    "arc:challenge": 1172,
    "hellaswag": 10042,
    "social_iqa": 1954,
    "mctest": 840,
    "truthfulqa:mc1": 817,
    "salad_bench:mrq": 3000,
    "gpqa:diamond": 198,
    "musr:murder_mysteries": 250,
    "musr:object_placements": 256,
    "musr:team_allocation": 250,
    "bbh:causal_judgment": 187,
    "bbh:penguins_in_a_table": 146,
    "bbh:snarks": 178,
}
# option counts drawn per item where the real items vary
_PER_ITEM_K = {
    "bbh:movie_recommendation": (4, 5, 6),
    "bbh:penguins_in_a_table": (4, 5),
    "bbh:reasoning_about_colored_objects": (2, 3, 4, 6, 18),
    "bbh:date_understanding": (5, 6),
    "musr:murder_mysteries": (2,),
    "musr:object_placements": (3, 4, 5),
    "musr:team_allocation": (3,),
    "bbh:disambiguation_qa": (3, 4),
    "bbh:ruin_names": (4, 5, 6),
    "bbh:geometric_shapes": (10, 11),
    "truthfulqa:mc1": (4, 5, 6, 7, 8, 9, 10, 11, 12, 13),
    "salad_bench:mrq": (2, 3, 4),
}


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


def simulate_zoo(seed: int) -> list[BenchmarkRun]:
    """A SIMULATED paper-shaped suite (module doc, 3.): per-sample results in evaluation order."""
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
            median = (
                BASE_TOKENS
                if model in BASES
                else next(m.cot_tokens for m in POSTS if m.name == model)
            )
            tokens[model] = np.ceil(
                median * length_scale * np.exp(0.35 * difficulty + rng.normal(0, 0.5, (SEEDS, n)))
            )
        # the shared order: ids hashed with the benchmark name; arrays permuted into that order
        ids = [f"{info.name}/{i}" for i in range(n)]
        position = {sid: i for i, sid in enumerate(ids)}
        order = np.array([position[sid] for sid in evaluation_order(info.name, ids)])
        out.append(
            BenchmarkRun(
                info.name,
                info.category,
                k[order],
                {m: c[:, order] for m, c in correct.items()},
                {m: t[:, order] for m, t in tokens.items()},
            )
        )
    return out


# ---------------------------------------------------------------------------------------------
# The demo zoo (module doc, 2.)

DEMO_SCALE = 60
"""The suite's largest scale: benchmarks of 2,400-3,600 samples, the size of many public ones
(ARC-Easy 2,376; GSM8K 1,319; HellaSwag 10,042). Measured 2026-12-01 (closing line's S): scale
10 65.7%, 40 53.8%, 60 46.1%: how much a benchmark's samples can be saved grows with its size.
Cold here: build 170 s, evaluation 1,234 s (cached after)."""


def _save_runs(path: Path, runs: list[BenchmarkRun]) -> None:
    arrays = {}
    for run in runs:
        arrays[f"{run.name}/k"] = run.k
        for model in run.correct:
            arrays[f"{run.name}/{model}/correct"] = run.correct[model]
            arrays[f"{run.name}/{model}/tokens"] = run.tokens[model]
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)


def _load_runs(path: Path, manifest) -> list[BenchmarkRun]:
    data = np.load(path)
    runs = []
    for bench in manifest.benchmarks:
        models = sorted(
            {
                key.split("/")[1]
                for key in data.files
                if key.startswith(f"{bench.name}/") and key.count("/") == 2
            }
        )
        runs.append(
            BenchmarkRun(
                bench.name,
                bench.category,
                data[f"{bench.name}/k"],
                {m: data[f"{bench.name}/{m}/correct"] for m in models},
                {m: data[f"{bench.name}/{m}/tokens"] for m in models},
            )
        )
    return runs


def demo_runs(scale: int, zoo_dir: Path, threads: int) -> tuple[object, list[BenchmarkRun], dict]:
    """The scaled demo zoo (built or cached), its full evaluation as runs in evaluation order
    (evaluated or cached next to the zoo), and the seconds each took (0 when cached)."""
    seconds = {"build": 0.0, "evaluate": 0.0}
    started = time.perf_counter()
    manifest = build_zoo(zoo_dir, recipe=Recipe(suite_scale=scale), verbose=True)
    if not manifest.cached:
        seconds["build"] = time.perf_counter() - started
    cache = manifest.root / f"adaptive-eval-seeds{'-'.join(map(str, manifest.eval['seeds']))}.npz"
    if cache.is_file():
        return manifest, _load_runs(cache, manifest), seconds
    started = time.perf_counter()
    report = evaluate_zoo(manifest, num_threads=threads, verbose=True)
    seconds["evaluate"] = time.perf_counter() - started
    runs = benchmark_runs(load_benchmarks(manifest), report.results, report.tokens, report.seeds)
    _save_runs(cache, runs)
    return manifest, runs, seconds


def resampled(runs: list[BenchmarkRun], factor: int, seed: int = 0) -> list[BenchmarkRun]:
    """Each benchmark drawn with replacement to ``factor`` times its size (the same draws for
    every model, so pairs stay paired): a projection of the savings on larger benchmarks of the
    same population, the measured samples standing in for it."""
    rng = np.random.default_rng(seed)
    out = []
    for run in runs:
        idx = rng.integers(0, run.size, factor * run.size)
        out.append(
            BenchmarkRun(
                run.name,
                run.category,
                run.k[idx],
                {m: c[:, idx] for m, c in run.correct.items()},
                {m: t[:, idx] for m, t in run.tokens.items()},
            )
        )
    return out


FLIP_RATES = (0.01, 0.03, 0.05, 0.10, 0.20, 0.40)


def stopping_points(rule: StoppingRule, benchmarks: int = 3, size: int = 30_000) -> list[tuple]:
    """Where the rule stops a 4-option benchmark by how often the post model flips: per flip rate
    f, the stopping points of ``benchmarks`` simulated benchmarks (base accuracy 0.8, the same
    base answers in every seed, each post answer flipped with probability f per seed, 3 seeds).
    What S needs: a benchmark stops before half its size only when it is at least twice this."""
    rng = np.random.default_rng(0)
    rows = []
    for f in FLIP_RATES:
        stops = []
        for _ in range(benchmarks):
            pre = np.repeat((rng.random(size) < 0.8)[None, :], SEEDS, axis=0).astype(np.int8)
            post = np.where(rng.random((SEEDS, size)) < f, 1 - pre, pre).astype(np.int8)
            stops.append(run_stopping_rule(pre, post, np.full(size, 4), rule).n)
        rows.append((f, sorted(stops)))
    return rows


def category_table(result: Replay, runs: list[BenchmarkRun], pairs: list[tuple[str, str]]) -> str:
    """Per pair and category: full and adaptive F_true / BT_true (points), the deviation, and the
    share of the category's samples the pair used."""
    size = {run.name: run.size for run in runs}
    category = {run.name: run.category for run in runs}
    lines = [
        f"{'pair':24s} {'category':13s} {'F_true full':>11s} {'adaptive':>8s} {'dev':>5s} "
        f"{'BT_true full':>12s} {'adaptive':>8s} {'dev':>5s} {'samples':>8s}"
    ]
    for _, post in pairs:
        cats = sorted({c for p, c in result.full if p == post} - {TOTAL}) + [TOTAL]
        for cat in cats:
            full, part = result.full[(post, cat)], result.adaptive[(post, cat)]
            names = [b for b in size if cat in (TOTAL, category[b])]
            used = sum(result.evaluated[(post, b)] for b in names) / sum(size[b] for b in names)
            lines.append(
                f"{post:24s} {cat:13s} {full['f_true'] * 100:11.2f} {part['f_true'] * 100:8.2f} "
                f"{abs(part['f_true'] - full['f_true']) * 100:5.2f} "
                f"{full['bt_true'] * 100:12.2f} {part['bt_true'] * 100:8.2f} "
                f"{abs(part['bt_true'] - full['bt_true']) * 100:5.2f} {used:8.1%}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="1,000 simulated benchmarks (else 5,000); the demo zoo is the same",
    )
    parser.add_argument("--scale", type=int, help=f"demo suite scale, 1-60 (default {DEMO_SCALE})")
    parser.add_argument(
        "--zoo-dir",
        type=Path,
        default=Path("data/bench-adaptive"),
        help="where the scaled zoo and its evaluation are cached",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads for evaluation")
    parser.add_argument(
        "--simulated",
        action="store_true",
        help="also replay a SIMULATED paper-shaped suite (not in the final line)",
    )
    parser.add_argument(
        "--project",
        type=int,
        nargs="*",
        default=[8, 32],
        metavar="FACTOR",
        help="also replay the demo results resampled to FACTOR x each benchmark's "
        "size (a projection; not in the final line)",
    )
    parser.add_argument("--target", type=float, default=1.5, help="target half-width, points")
    parser.add_argument("--min-samples", type=int, default=StoppingRule.min_samples)
    parser.add_argument("--chunk", type=int, default=StoppingRule.chunk_size)
    args = parser.parse_args(argv)
    rule = StoppingRule(
        target_half_width=args.target / 100, min_samples=args.min_samples, chunk_size=args.chunk
    )
    simulations = 1000 if args.quick else 5000
    scale = args.scale or DEMO_SCALE

    start = time.perf_counter()
    coverage = simulate_coverage(simulations, rule, seed=0)
    print(
        f"simulation: {coverage.benchmarks} benchmarks with known F_true/BT_true (k 2-10, mixed, "
        f"generative; n 100-6000; 3 seeds; 1 in 5 greedy): 95% interval at the stopping point "
        f"covers F_true {coverage.f_true:.3f}, BT_true {coverage.bt_true:.3f}, both "
        f"{coverage.both:.3f}; the lower of the two among those stopped early "
        f"{coverage.early:.3f}, at the end of the stopping round {coverage.round_end:.3f}, after "
        f"a continuation from twice the target {coverage.continued:.3f}; stopped early "
        f"{coverage.stopped_early:.0%}, samples used {coverage.samples_used:.1%} "
        f"({time.perf_counter() - start:.1f} s)",
        flush=True,
    )
    start = time.perf_counter()
    stops = "; ".join(
        f"{f:.0%} -> {', '.join(f'{n:,}' for n in ns)}" for f, ns in stopping_points(rule)
    )
    print(
        f"stopping points by flip rate (k 4, base accuracy 0.8, 3 seeds, target {args.target:.2f}"
        f" points): {stops} ({time.perf_counter() - start:.1f} s)",
        flush=True,
    )
    if args.simulated:
        start = time.perf_counter()
        sim_pairs = [(post.base, post.name) for post in POSTS]
        result = replay(simulate_zoo(0), sim_pairs, rule)
        top = result.deviations()[0]
        print(
            "SIMULATED paper-shaped suite (not the demo zoo; not in the final line): 94 benchmarks "
            f"at about their public sizes, {len(POSTS)} pairs, {SEEDS} seeds: max deviation "
            f"{top[0]:.2f} points ({top[2]}, {top[1][0]}, {top[1][1]}), samples "
            f"{result.samples:.1%}, tokens {result.tokens:.1%} (SIMULATED counts) "
            f"({time.perf_counter() - start:.1f} s)"
        )

    manifest, runs, seconds = demo_runs(scale, args.zoo_dir, args.threads)
    pairs = [(p.base, p.post) for p in manifest.pairs]
    start = time.perf_counter()
    result = replay(runs, pairs, rule)
    sizes = sorted({run.size for run in runs})
    print(
        f"demo zoo {manifest.recipe_hash} (suite scale {scale}: {len(runs)} benchmarks of "
        f"{sizes[0]:,}-{sizes[-1]:,} samples, {len(pairs)} pairs on demo-base, "
        f"{len(manifest.eval['seeds'])} seeds): build {seconds['build']:.0f} s, evaluation "
        f"{seconds['evaluate']:.0f} s (0: cached), replay {time.perf_counter() - start:.1f} s"
    )
    size = {run.name: run.size for run in runs}
    early = sum(n < size[bench] for (_, bench), n in result.stopped.items())
    print(f"(pair, benchmark) stopped early: {early}/{len(result.stopped)}")
    print(category_table(result, runs, pairs))
    top = result.deviations()[0]
    print(f"largest deviation: {top[0]:.2f} points ({top[2]}, {top[1][0]}, {top[1][1]})")
    for factor in args.project:
        start = time.perf_counter()
        projected = replay(resampled(runs, factor), pairs, rule)
        print(
            f"projection (PROJECTED, not measured: every benchmark resampled with replacement to "
            f"{factor}x its size, as at suite scale {scale * factor}): max deviation "
            f"{projected.max_deviation:.2f} points, samples {projected.samples:.1%}, tokens "
            f"{projected.tokens:.1%} ({time.perf_counter() - start:.1f} s)"
        )
    print(
        f"adaptive: coverage {coverage.worst:.3f}, max deviation {result.max_deviation:.2f} "
        f"points (target {args.target:.2f}), samples {result.samples * 100:.1f}% of full, "
        f"tokens {result.tokens * 100:.1f}% of full"
    )


if __name__ == "__main__":
    main()
