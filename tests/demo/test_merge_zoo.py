"""Merging the base back in, on the demo zoo (issue 54): mergekit's merges of demo-base and
narrow SFT (demo-sft-math), evaluated as the worker scores them (in-process, the same engine and
seeds as the rest of the zoo's report).

- Mix 0 and mix 1 are the base and the post model: evaluated anyway, every per-sample answer is
  theirs.
- mergekit's linear merge at 0.5 is the zoo's own demo-merge (trainer.merge_models), to float
  rounding.
- The sweep's curve and question fates at 0.25, 0.5, 0.75, printed with the test's output."""

from __future__ import annotations

import pytest

from tests.support.services import require_modules

pytestmark = pytest.mark.slow

SEEDS = (0, 1, 2)
POST = "demo-sft-math"


def test_a_linear_sweep_of_narrow_sft(zoo, report, tmp_path):
    require_modules("mergekit", why="the merge path's checkpoints")
    import torch
    from forgetmap.analysis.merge_fates import fate_counts, question_fates
    from forgetmap.demo.evaluate import evaluate_model, forgetting, load_benchmarks
    from forgetmap.demo.trainer import load_model
    from forgetmap.worker.merge import build_merge, pair_config

    base, post = zoo.model("demo-base"), zoo.model(POST)
    benchmarks = load_benchmarks(zoo)
    mixes = (0.0, 0.25, 0.5, 0.75, 1.0)
    merged = {
        mix: build_merge(
            pair_config("linear", str(base.path), str(post.path), mix), tmp_path / f"mix-{mix}"
        )
        for mix in mixes
    }
    answers = {
        mix: evaluate_model(path, benchmarks, seeds=SEEDS, num_threads=1)
        for mix, path in merged.items()
    }
    # the ends, evaluated anyway: the pair's own answers, sample by sample
    own = {
        name: evaluate_model(zoo.model(name).path, benchmarks, seeds=SEEDS, num_threads=1)
        for name in ("demo-base", POST)
    }
    assert answers[0.0] == own["demo-base"]
    assert answers[1.0] == own[POST]
    # mergekit at 0.5 and the zoo's own merge: the same weights to float rounding
    ours = load_model(zoo.model("demo-merge").path)[0].state_dict()
    theirs = load_model(merged[0.5])[0].state_dict()
    assert all(torch.allclose(ours[k], theirs[k], atol=1e-6) for k in ours)
    # the curve (Total F_true and BT_true against the base) and the fates along it
    curve = {
        mix: forgetting(answers[0.0], answers[mix], benchmarks, SEEDS).categories["Total"]
        for mix in mixes[1:]
    }
    by_question = {
        mix: {f"{b}/{sid}/{seed}": right for (b, sid, seed), right in answers[mix].items()}
        for mix in mixes
    }
    counts = fate_counts(question_fates(by_question), list(mixes))
    print("\nlinear sweep of demo-base -> demo-sft-math (Total, 3 seeds):")
    for mix, total in curve.items():
        print(f"  mix {mix:g}: F_true {total['f_true']:.3f} BT_true {total['bt_true']:.3f}")
    print(f"  fates: {counts}")
    assert curve[1.0]["f_true"] == pytest.approx(report.pairs[POST].categories["Total"]["f_true"])
