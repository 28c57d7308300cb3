"""The demo zoo: tiny models trained on the CPU in which post-training forgetting is real.

The zoo and its in-process evaluation are session fixtures (tests/demo/conftest.py).

The margins below were measured over world seeds 0-3 of the default recipe; each is set at about
half of the smallest value seen.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from tests.support.services import require_modules

pytestmark = pytest.mark.slow

require_modules("torch", "transformers", "tokenizers")

from forgetmap.db import open_store  # noqa: E402
from forgetmap.db import series as series_db  # noqa: E402
from forgetmap.demo import zoo as zoo_mod  # noqa: E402
from forgetmap.demo.evaluate import (  # noqa: E402
    _fast_choice_logprobs,
    load_benchmarks,
    mean_over,
)
from forgetmap.demo.manifest import Recipe, ZooManifest  # noqa: E402
from forgetmap.demo.run import job_requests, submit  # noqa: E402

# Margins (fractions, not percent), about half of the smallest value measured over world seeds
# 0-3 of the default recipe (the test builds seed 0). Measured (seeds 0 / 1 / 2 / 3):
#   F_true untouched, SFT            0.315 / 0.189 / 0.293 / 0.162
#   F_true untouched, SFT + replay   0.052 / 0.060 / 0.090 / 0.057
#   noise floor untouched (max of base, SFT, SFT + replay)   0.020 / 0.028 / 0.017 / 0.023
#   BT_true Math, SFT                0.444 / 0.381 / 0.390 / 0.488
#   noise floor Math (max of base, SFT)                      0.046 / 0.042 / 0.066 / 0.023
# The same recipe trains another zoo on another CPU (the kernels round differently and training
# amplifies it): seed 0 on an AVX-512/AMX Xeon (2026-12-01) gave SFT 0.247, SFT + replay 0.028,
# noise floor 0.026 (replay's margin over it 0.0015), BT_true Math 0.496.
MIN_SFT_MINUS_REPLAY = 0.05  # F_true(SFT) - F_true(SFT + replay); smallest seen 0.105
MIN_REPLAY_OVER_NOISE = 0.0  # F_true(SFT + replay) - noise floor; smallest seen 0.0015 (0.032
# on the first machine): replay forgets above the noise floor, by a margin that depends on the CPU
MIN_SFT_OVER_NOISE_RATIO = 3.0  # F_true(SFT) / noise floor; smallest seen 6.8
MIN_SFT_BT_OVER_NOISE = 0.15  # BT_true(SFT, Math) - noise floor; smallest seen 0.32
MIN_SFT_ACC_GAIN = 0.15  # mean accuracy gain of SFT on the Math benchmarks
# The two series, Total F_true (macro), measured (seeds 0 / 1 / 2 / 3):
#   SFT at step 8 (first checkpoint)         0.078 / 0.072 / 0.075 / 0.067
#   SFT at step 120 (last: demo-sft-math)    0.245 / 0.152 / 0.235 / 0.122
#   SFT + replay at step 150 (last)          0.045 / 0.058 / 0.079 / 0.051
#   last - first along SFT                   0.167 / 0.080 / 0.160 / 0.055
#   SFT's last - replay's last               0.200 / 0.095 / 0.155 / 0.072
#   noise floor of demo-base, Total          0.014 / 0.024 / 0.019 / 0.010
MIN_SFT_SERIES_GROWTH = 0.025  # smallest seen 0.055
MIN_SFT_OVER_REPLAY_AT_END = 0.035  # smallest seen 0.072
MIN_RECOVER_GAP_RATIO = (
    1.5  # loss gap on pretraining text, SFT / SFT + replay (measured on seed 0 only: 2.50)
)


def _noise(report, model: str, categories) -> float:
    return float(np.mean([report.noise[model][c] for c in categories]))


def test_manifest_and_files(zoo):
    stages = {m.stage for m in zoo.models}
    assert stages == {"base", "sft", "sft+replay", "domain-cpt", "instruct", "merge", "format"}
    assert {p.stage for p in zoo.pairs} == stages - {"base"}
    assert all(p.base == "demo-base" for p in zoo.pairs)
    assert {m.prompting for m in zoo.models} == {"base", "chat"}
    assert zoo.model("demo-instruct").prompting == "chat"
    for m in zoo.models:
        config = json.loads((m.path / "config.json").read_text())
        assert config["head_dim"] >= 64 and config["model_type"] == "llama"
        assert config.get("dtype", config.get("torch_dtype")) == "float32"
        assert (m.path / "model.safetensors").is_file()
        assert (m.path / "tokenizer.json").is_file()
        assert json.loads((m.path / "demo.json").read_text())["stage"] == m.stage
    assert len(zoo.benchmarks) == 8 and all(b.path.is_file() for b in zoo.benchmarks)
    assert zoo.benchmark_dir == zoo.root / "benchmarks"
    data = json.loads((zoo.root / "manifest.json").read_text())
    again = ZooManifest.from_json(data, zoo.root, cached=True)
    assert again.models == zoo.models and again.pairs == zoo.pairs
    assert again.benchmarks == zoo.benchmarks and again.recipe == zoo.recipe
    assert again.series == zoo.series


def test_sft_runs_are_checkpoint_series(zoo):
    """Both SFT runs saved their checkpoints as HF Trainer lays them out; the last is the run's
    final model (the pair's post model), not a second copy of it."""
    assert [(s.name, s.stage) for s in zoo.series] == [
        ("demo-sft-math", "sft"),
        ("demo-sft-math-replay", "sft+replay"),
    ]
    assert [c.step for c in zoo.series[0].checkpoints] == [8, 15, 30, 60, 120]
    assert [c.step for c in zoo.series[1].checkpoints] == [9, 19, 38, 75, 150]
    for run in zoo.series:
        assert run.base == "demo-base"
        assert run.label == next(p.label for p in zoo.pairs if p.post == run.name)
        *saved, last = run.checkpoints
        assert (last.model, last.path) == (run.name, zoo.model(run.name).path)
        for c in saved:
            assert c.model == f"{run.name}/checkpoint-{c.step}"
            assert c.path == zoo.model(run.name).path / f"checkpoint-{c.step}"
            assert (c.path / "model.safetensors").is_file()
            assert json.loads((c.path / "demo.json").read_text())["step"] == c.step
        weights = {c.step: (c.path / "model.safetensors").read_bytes() for c in run.checkpoints}
        assert len(set(weights.values())) == len(weights)  # the run moved between saves
    assert len(zoo.checkpoint_models()) == 8


def test_cached_start_is_fast(zoo, zoo_dir):
    started = time.monotonic()
    again = zoo_mod.build_zoo(zoo_dir)
    assert time.monotonic() - started < 5.0
    assert again.cached and again.root == zoo.root and again.models == zoo.models
    other = Recipe(base_steps=zoo.recipe.base_steps + 1)
    assert zoo_mod.recipe_hash(other) != zoo.recipe_hash


def test_fast_scoring_equals_the_engine(zoo):
    """The evaluator's one-forward scoring gives the worker's choice_logprobs values."""
    from forgetmap.worker.benchmarks.prompts import choice_continuations, select_shots
    from forgetmap.worker.engines.transformers_engine import TransformersEngine

    benchmarks = load_benchmarks(zoo)
    engine = TransformersEngine(zoo.model("demo-base").path, num_threads=1, batch_size=8)
    try:
        contexts, conts = [], []
        for items in benchmarks.values():
            for it in [i for i in items if i.choices is not None][:3]:
                ctx, opts = choice_continuations(it, shots=select_shots(it, items, 3, seed=1))
                contexts.append(ctx)
                conts.append(list(opts))
        fast = _fast_choice_logprobs(engine, contexts, conts)
        slow = engine.choice_logprobs(contexts, conts)
    finally:
        engine.close()
    diff = max(
        abs(a - b) for fa, sa in zip(fast, slow, strict=True) for a, b in zip(fa, sa, strict=True)
    )
    assert diff < 1e-4


def test_base_model_learned_the_world(report):
    acc = report.accuracy["demo-base"]
    for name, value in acc.items():
        if not name.startswith("demo_arith"):
            assert value > 0.8, (name, value)


def test_narrow_sft_forgets_more_than_sft_with_replay(report):
    sft, replay = report.pairs["demo-sft-math"], report.pairs["demo-sft-math-replay"]
    untouched = report.untouched
    assert untouched == ["Knowledge/QA", "Language", "Logic"]
    f_sft = mean_over(sft, untouched)
    f_replay = mean_over(replay, untouched)
    noise = max(
        _noise(report, "demo-base", untouched),
        _noise(report, "demo-sft-math", untouched),
        _noise(report, "demo-sft-math-replay", untouched),
    )
    print(f"\nuntouched: F_true sft {f_sft:.3f}, sft+replay {f_replay:.3f}, noise {noise:.3f}")
    assert f_sft - f_replay > MIN_SFT_MINUS_REPLAY
    assert f_replay - noise > MIN_REPLAY_OVER_NOISE
    assert f_sft > MIN_SFT_OVER_NOISE_RATIO * noise
    # ordered in every untouched category, not only on average
    for category in untouched:
        assert sft.categories[category]["f_true"] > replay.categories[category]["f_true"]


def test_forgetting_grows_along_sft_and_stays_low_with_replay(runs, report):
    """The demo's two series: narrow SFT's Total F_true at its last checkpoint lies above its
    first and above SFT with replay's last."""
    sft, replay = runs["sft"], runs["sft+replay"]

    def total(checkpoint) -> float:
        return report.pairs[checkpoint.model].categories["Total"]["f_true"]

    first, last, replay_last = (
        total(sft.checkpoints[0]),
        total(sft.checkpoints[-1]),
        total(replay.checkpoints[-1]),
    )
    print(
        f"\nTotal F_true: SFT step {sft.checkpoints[0].step} {first:.3f}, step "
        f"{sft.checkpoints[-1].step} {last:.3f}; replay step {replay.checkpoints[-1].step} "
        f"{replay_last:.3f}"
    )
    assert last - first > MIN_SFT_SERIES_GROWTH
    assert last - replay_last > MIN_SFT_OVER_REPLAY_AT_END


def test_the_demo_submits_both_series(zoo, tmp_path):
    """`forgetmap demo`'s submission: every checkpoint evaluated like the zoo's other base-prompted
    models (confined to the zoo's model folder), and the two series over the base."""
    db = tmp_path / "demo.duckdb"
    submit(db, zoo)
    store = open_store(db)
    try:
        with store.read() as conn:
            listed = series_db.list_series(conn)
            stored = [series_db.get_series(conn, name=run.name) for run in zoo.series]
    finally:
        store.close()
    assert [(s["name"], s["base"], s["steps"]) for s in listed] == [
        ("demo-sft-math", "demo-base", [8, 15, 30, 60, 120]),
        ("demo-sft-math-replay", "demo-base", [9, 19, 38, 75, 150]),
    ]
    for run, found in zip(zoo.series, stored, strict=True):
        assert [c["post"] for c in found["checkpoints"]] == [c.model for c in run.checkpoints]
    checkpoints = {c.model: str(c.path) for run in zoo.series for c in run.checkpoints}
    base_prompted = [r for r in job_requests(zoo) if r.models[0].prompting == "base"]
    assert len(base_prompted) == 2  # loglik for multiple choice, generate for numeric answers
    for request in base_prompted:  # in the same jobs as demo-base: same benchmarks, seeds, config
        paths = {m.name: m.path for m in request.models}
        assert "demo-base" in paths
        assert {name: paths.get(name) for name in checkpoints} == checkpoints


def test_sft_category_gains(report):
    from forgetmap.demo.suite import BENCHMARKS

    cat = report.sft_category
    sft = report.pairs["demo-sft-math"]
    noise = max(_noise(report, "demo-base", [cat]), _noise(report, "demo-sft-math", [cat]))
    assert sft.categories[cat]["bt_true"] - noise > MIN_SFT_BT_OVER_NOISE
    names = [b.name for b in BENCHMARKS if b.category == cat]
    gain = np.mean(
        [report.accuracy["demo-sft-math"][n] - report.accuracy["demo-base"][n] for n in names]
    )
    assert gain > MIN_SFT_ACC_GAIN


def test_every_pair_is_mapped(report):
    for post, scores in report.pairs.items():
        assert set(scores.categories) == {"Knowledge/QA", "Math", "Logic", "Language", "Total"}
        for values in scores.categories.values():
            for key in ("f_true", "bt_true", "f", "bt", "f_max", "bt_max"):
                assert 0.0 <= values[key] <= 1.0, (post, key)
    # the chat model answers in the chat format (well above chance on what it was taught)
    assert np.mean(list(report.accuracy["demo-instruct"].values())) > 0.5


def test_worker_evaluation_agrees(zoo, report):
    """The worker's own shard evaluation (forgetmap.worker.evaluate._evaluate, the engine's
    per-option choice_logprobs) gives the same per-sample correctness as the in-process evaluator,
    with the eval settings the manifest recommends."""
    from forgetmap.contract.shards import ShardConfig
    from forgetmap.worker.engines.transformers_engine import TransformersEngine
    from forgetmap.worker.evaluate import _evaluate

    benchmarks = load_benchmarks(zoo)
    ev = zoo.eval
    cases = [
        ("demo-base", "demo_world_jobs"),
        ("demo-base", "demo_arith_answer"),
        ("demo-instruct", "demo_logic_oldest"),
        ("demo-instruct", "demo_word_length"),
    ]
    for model_name, bench in cases:
        model = zoo.model(model_name)
        items = benchmarks[bench]
        if model.prompting == "chat":
            mode = ev["chat_mode"]
        elif items[0].choices is None:
            mode = ev["generative_mode"]
        else:
            mode = ev["multiple_choice_mode"]
        cfg = {
            "prompting": model.prompting,
            "mode": mode,
            "shots": ev["shots"],
            "temperature": ev["temperature"],
            "top_p": 1.0,
            "max_tokens": ev["max_tokens"],
        }
        engine = TransformersEngine(model.path, num_threads=1, batch_size=16)
        try:
            rows = _evaluate(engine, items, items, ShardConfig(**cfg), 1)
        finally:
            engine.close()
        expected = [report.results[model_name][(bench, it.sample_id, 1)] for it in items]
        assert [r.correct for r in rows] == expected, (model_name, bench)


def test_recoverability_of_the_sft_pairs(zoo):
    """The analyses of the demo's two recoverability jobs, in process, with the same documents
    and settings.

    Narrow SFT raises the loss on the pretraining text about twice as much as SFT with replay, and
    a bias + temperature takes back less of it than of random noise on the output weights: on the
    zoo, post-training forgetting is not a calibration shift. The controls give their known
    answers on the zoo's own base model.

    Each run fits only the corrections its assertions read (the L-BFGS fits are nearly all of the
    time). The numbers are the jobs' own: each correction kind is fitted on its own, the bootstrap
    draws depend on the seed and the documents alone, and a control is the same whichever other
    controls run beside it (asserted at the end, on a few documents).
    """
    import torch
    from forgetmap.core.recoverability_names import CONTROLS
    from forgetmap.demo.run import corpus_dir, recovery_requests, write_corpus
    from forgetmap.worker import recoverability_scoring as scoring
    from forgetmap.worker.recoverability_job import read_documents
    from transformers import AutoTokenizer

    write_corpus(zoo)
    requests = {r.stage: r for r in recovery_requests(zoo)}
    assert [requests["sft"].options.controls, requests["sft+replay"].options.controls] == [
        list(CONTROLS),
        ["weight_noise"],
    ]
    _, texts = read_documents(requests["sft"].corpus, [corpus_dir(zoo)])
    tokenizer = AutoTokenizer.from_pretrained(requests["sft"].base.path)
    docs, _ = scoring.prepare_documents(
        tokenizer, texts, max_tokens=requests["sft"].options.max_tokens
    )

    def analyze(stage, *, controls=(), kinds=(), post=True, documents=docs):
        r = requests[stage]
        o = r.options
        return scoring.run_recoverability(
            r.base.path,
            r.post.path if post else None,
            documents,
            n_boot=500,
            controls=controls,
            kinds=kinds,
            k=o.k,
            eval_fraction=o.eval_fraction,
            select_fraction=o.select_fraction,
            seed=o.seed,
        )

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        sft = analyze("sft", controls=("weight_noise",), kinds=("bias_temp",))
        planted = analyze("sft", controls=("planted_bias",), kinds=("bias",), post=False)
        doubled = analyze("sft", controls=("doubled_logits",), kinds=("temp",), post=False)
        replay = analyze("sft+replay")  # the loss gap needs no fitted correction
        few = docs[:30]
        alone = analyze(
            "sft", controls=("weight_noise",), kinds=("temp",), post=False, documents=few
        )
        beside = analyze("sft", controls=CONTROLS, kinds=("temp",), post=False, documents=few)
    finally:
        torch.set_num_threads(threads)
    gap = {
        "sft": sft.shares["post"]["gap"]["estimate"],
        "sft+replay": replay.shares["post"]["gap"]["estimate"],
    }
    sym = sft.shares["post"]["symmetric"]["bias_temp"]["estimate"]
    noise = sft.shares["weight_noise"]["symmetric"]["bias_temp"]
    planted_share = planted.shares["planted_bias"]["symmetric"]["bias"]["estimate"]
    ratio = (
        doubled.corrections["doubled_logits"]["temp"].temperature
        / doubled.corrections["base"]["temp"].temperature
    )
    print(
        f"\nrecoverability on the zoo: gap {gap}, symmetric bias+T {sym:.3f}, noise control "
        f"{noise['estimate']:.3f}, planted {planted_share:.3f}, T doubled/base {ratio:.4f}"
    )
    assert gap["sft"] > MIN_RECOVER_GAP_RATIO * gap["sft+replay"] > 0
    assert sym < noise["lo"]  # below the whole interval of the random-damage yardstick
    assert planted_share > 0.9
    assert ratio == pytest.approx(2.0, rel=0.02)
    # the replay job's noise control is the narrow SFT job's: same base, corpus and seed
    assert alone.shares["weight_noise"] == beside.shares["weight_noise"]
