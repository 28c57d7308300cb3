"""Adaptive jobs, the parts without a database: the rounds' decisions (app/services/rounds.py),
the boundary's limits, the worker's slice of the evaluation order, and the CLI's choices."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from forgetmap.analysis.adaptive import StoppingRule, evaluation_order, prefix_intervals
from forgetmap.cli import jobs as cli_jobs
from forgetmap.cli import main
from forgetmap.contract.base import validated
from forgetmap.contract.jobs import AdaptiveIn, Engine, EvaluateJobIn, Mode, Prompting
from forgetmap.contract.shards import EvaluationShardSpec
from forgetmap.core.errors import InputError
from forgetmap.services.rounds import (
    PairLook,
    Stop,
    look,
    model_ends,
    round_end,
    rounds_until,
    rule_of,
)
from forgetmap.worker.adaptive_slice import slice_items
from forgetmap.worker.benchmarks.items import Item

RULE = StoppingRule(target_half_width=0.015, min_samples=30, chunk_size=20, max_samples=None)


def test_round_ends_are_the_rules_looks_and_grow_the_prefix_by_half():
    # first look: min_samples rounded up to a chunk end; then the first chunk end at or past 1.5n
    assert round_end(RULE, 0, None) == 40
    assert round_end(RULE, 40, 200) == 60 and round_end(RULE, 45, 200) == 80
    assert round_end(RULE, 80, None) == 120  # size unknown: still a chunk end past 1.5n
    assert round_end(RULE, 10, 200) == 40  # a prefix below the first look goes to it
    assert round_end(RULE, 120, 200) == 180
    assert round_end(RULE, 140, 200) == 200 and round_end(RULE, 199, 200) == 200  # the end
    capped = StoppingRule(0.04, min_samples=30, chunk_size=20, max_samples=70)
    assert round_end(capped, 40, None) == 60 and round_end(capped, 60, 500) == 70


def _one_chunk_rounds(rule: StoppingRule, stop: int) -> tuple[int, int]:
    """(rounds, samples evaluated) with one chunk per round, as before: the first look, then
    every chunk end."""
    n, rounds = round_end(rule, 0, None), 1
    while n < stop:
        n, rounds = n + rule.chunk_size, rounds + 1
    return rounds, n


def test_growing_rounds_make_few_shards_and_overshoot_less_than_half_the_stopping_point():
    rule = StoppingRule(0.015, min_samples=100, chunk_size=50)
    stops = [100, 150, 250, 400, 550, 800, 1050, 1600, 2000]
    table = [(s, _one_chunk_rounds(rule, s), rounds_until(rule, s, 2000)) for s in stops]
    # the table of app/services/rounds.py's module docstring
    assert [one[0] for _, one, _ in table] == [1, 2, 4, 7, 10, 15, 20, 31, 39]
    assert [one[1] for _, one, _ in table] == stops  # one chunk per round: nothing past s
    assert [grown[0] for _, _, grown in table] == [1, 2, 3, 4, 5, 6, 7, 8, 8]
    assert [grown[1] for _, _, grown in table] == [100, 150, 250, 400, 600, 900, 1350, 2000, 2000]
    for s in range(100, 2001, 50):  # the worst case the docstring states
        rounds, evaluated = rounds_until(rule, s, 2000)
        assert s <= evaluated < max(1.5 * s, s + 1)
        assert rounds <= 2 + math.ceil(math.log(s / 100, 1.5))  # log1.5 of n / first look
    # a continuation off a chunk end: at most 1.5 times the stopping point and one chunk
    assert round_end(rule, 120, 2000) == 200 and 200 <= 1.5 * 150 + rule.chunk_size


def _zeros(n, seeds=1):
    return np.zeros((seeds, n), np.int8), np.zeros((seeds, n), np.int8), np.zeros(n, np.int64)


def test_a_stopped_pair_reports_the_interval_of_its_whole_prefix():
    """A round runs past the stopping look to its end; the half-widths shown are those of every
    sample evaluated (a later stopping time: the coverage holds there too), as the map's are."""
    pre, post, k = _zeros(140)
    at_end = look(RULE, "a", "b", pre, post, k, 200)
    assert at_end.stopped == Stop.target and at_end.n == 140  # met at the look 60 already
    whole = prefix_intervals(pre, post, k, np.array([140]), RULE.level)
    # no flips: theta's interval is [-h, h], the reported one [0, h], half of it h / 2
    reported = (whole["f_true_high"][0] - whole["f_true_low"][0]) / 2
    assert reported == whole["f_true_half_width"][0] / 2
    assert at_end.f_half_points == round(float(reported) * 100, 3)
    assert at_end.f_half_points < look(RULE, "a", "b", *_zeros(40), 200).f_half_points


def test_a_look_stops_on_target_max_or_end_and_otherwise_says_how_far_to_go():
    pre, post, k = _zeros(80)
    stopped = look(RULE, "a", "b", pre, post, k, 200)
    assert (stopped.stopped, stopped.next_end) == (Stop.target, None)
    assert stopped.f_half_points <= 1.5 and stopped.bt_half_points <= 1.5
    pre, post, k = _zeros(40)
    going = look(RULE, "a", "b", pre, post, k, 200)
    assert (going.stopped, going.next_end, going.n) == (None, 60, 40)
    assert going.f_half_points > 1.5
    # flips everywhere: the interval stays wide; the cap or the end stops it
    rng = np.random.default_rng(0)
    pre = rng.integers(0, 2, (2, 100)).astype(np.int8)
    post = 1 - pre
    k = np.full(100, 4)
    tight = StoppingRule(0.005, min_samples=20, chunk_size=20, max_samples=100)
    assert look(tight, "a", "b", pre, post, k, 300).stopped == Stop.max
    assert look(tight, "a", "b", pre, post, k, 100).stopped == Stop.end
    # nothing evaluated yet, size unknown: the first round
    empty = look(RULE, "a", "b", *_zeros(0), None)
    assert (empty.stopped, empty.next_end, empty.f_half_points) == (None, 40, None)


def test_a_shared_base_goes_as_far_as_its_furthest_running_pair():
    looks = [
        PairLook("a", "b", 40, None, 60),
        PairLook("a", "c", 40, None, 100),
        PairLook("d", "e", 80, Stop.target, None),
    ]
    assert model_ends(looks) == {"a": 100, "b": 60, "c": 100}


def test_the_job_setting_is_the_rule():
    rule = rule_of(
        {"target_points": 1.5, "min_samples": 100, "max_samples": None, "chunk_size": 50}
    )
    assert rule == StoppingRule(0.015, 100, None, 50)  # a job from before round_growth: 1.5
    doubling = rule_of(
        {
            "target_points": 1.5,
            "min_samples": 100,
            "max_samples": None,
            "chunk_size": 50,
            "round_growth": 2.0,
        }
    )
    assert doubling == StoppingRule(0.015, 100, None, 50, round_growth=2.0)


def test_round_growth_is_a_setting():
    """A job's ``round_growth`` sets how far each round reaches: 2 doubles the prefix (to the
    next chunk end), 1 is one chunk per round (never past the stopping point)."""
    doubling = StoppingRule(0.015, min_samples=100, chunk_size=50, round_growth=2.0)
    assert [round_end(doubling, n, 2000) for n in (100, 200, 250)] == [200, 400, 500]
    assert rounds_until(doubling, 1050, 2000) == (5, 1600)  # 100, 200, 400, 800, 1600
    one_chunk = StoppingRule(0.015, min_samples=100, chunk_size=50, round_growth=1.0)
    assert [round_end(one_chunk, n, 2000) for n in (0, 100, 120, 1950)] == [100, 150, 150, 2000]
    assert rounds_until(one_chunk, 1050, 2000) == (20, 1050)  # the docstring's table
    assert rounds_until(StoppingRule(0.015, 100, None, 50), 1050, 2000) == (7, 1350)
    with pytest.raises(ValueError, match="round_growth must be >= 1"):
        StoppingRule(round_growth=0.5)


@pytest.mark.parametrize(
    "setting, problem",
    [
        (
            {"target_points": 0.05},
            "adaptive.target_points: Input should be greater than or equal to 0.1",
        ),
        ({"target_points": 51}, "adaptive.target_points: Input should be less than or equal to 50"),
        ({"min_samples": 0}, "adaptive.min_samples"),
        ({"chunk_size": 100_001}, "adaptive.chunk_size"),
        (
            {"round_growth": 0.9},
            "adaptive.round_growth: Input should be greater than or equal to 1",
        ),
        ({"round_growth": 11}, "adaptive.round_growth: Input should be less than or equal to 10"),
        ({"min_samples": 100, "max_samples": 99}, "max_samples (99) must be >= min_samples (100)"),
        ({"steps": 3}, "adaptive.steps: Extra inputs are not permitted"),
    ],
)
def test_the_boundary_refuses_bad_settings(setting, problem):
    body = {"models": [{"name": "a", "path": "org/a"}], "benchmarks": ["piqa"], "adaptive": setting}
    with pytest.raises(InputError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        validated(EvaluateJobIn, body)
    assert AdaptiveIn().model_dump() == {
        "target_points": 1.5,
        "min_samples": 100,
        "max_samples": None,
        "chunk_size": 50,
        "round_growth": 1.5,
    }


def _item(i: int) -> Item:
    return Item(
        benchmark="toy",
        sample_id=f"s{i}",
        question=f"q{i}",
        choices=None,
        gold=str(i),
        gold_index=None,
        category=None,
    )


def test_the_worker_evaluates_its_slice_of_the_shared_order():
    items = [_item(i) for i in range(50)]
    order = evaluation_order("toy", [it.sample_id for it in items])
    spec = EvaluationShardSpec.model_validate(
        {
            "model": {"name": "m", "path": "org/m"},
            "config": {},
            "slice": {"start": 10, "end": 25, "order": "toy", "round": 1},
        }
    )
    assert [it.sample_id for it in slice_items(items, spec.slice)] == order[10:25]
    # the end may pass the benchmark's size; no slice: everything in the loader's order
    past = spec.slice.model_copy(update={"start": 40, "end": 100})
    assert [it.sample_id for it in slice_items(items, past)] == order[40:]
    assert slice_items(items, None) == items
    # the order does not depend on the loader's order
    assert slice_items(items[::-1], spec.slice) == slice_items(items, spec.slice)


def test_the_clis_choices_are_the_boundarys():
    assert cli_jobs.ENGINES == [e.value for e in Engine]
    assert cli_jobs.MODES == [m.value for m in Mode]
    assert cli_jobs.PROMPTINGS == [p.value for p in Prompting]


def test_the_cli_builds_the_apis_body_and_refuses_adaptive_flags_alone():
    runner = CliRunner()
    args = [
        "job",
        "submit",
        "--base",
        "a=org/a",
        "--post",
        "b=org/b",
        "--benchmarks",
        "piqa,arc",
        "--seeds",
        "0,1",
        "--dry-run",
    ]
    plain = runner.invoke(main, args)
    assert plain.exit_code == 0, plain.output
    body = json.loads(plain.output)
    # the options the command sets, nothing more: the app's defaults fill the rest
    assert body == {
        "models": [
            {"name": "a", "path": "org/a", "prompting": "base"},
            {"name": "b", "path": "org/b", "prompting": "chat"},
        ],
        "benchmarks": ["piqa", "arc"],
        "seeds": [0, 1],
        "config": {
            "engine": "vllm",
            "mode": "generate",
            "temperature": 0.6,
            "top_p": 0.95,
            "max_tokens": 2048,
            "shots": 3,
            "limit": None,
        },
        "pairs": [{"base": "a", "post": "b", "label": None, "stage": None}],
    }
    adaptive = json.loads(
        runner.invoke(main, [*args, "--adaptive", "--target", "2", "--max-samples", "500"]).output
    )
    assert adaptive["adaptive"] == {"target_points": 2.0, "max_samples": 500}
    checked = validated(EvaluateJobIn, adaptive)
    assert checked.adaptive.min_samples == 100 and checked.adaptive.target_points == 2.0
    assert checked.adaptive.round_growth == 1.5
    grown = json.loads(runner.invoke(main, [*args, "--adaptive", "--round-growth", "2"]).output)
    assert grown["adaptive"] == {"round_growth": 2.0}
    alone = runner.invoke(main, [*args, "--target", "2"])
    assert alone.exit_code == 2 and "need --adaptive" in alone.output
    bad = runner.invoke(main, [*args[:5], "b", *args[6:]])
    assert bad.exit_code == 2 and "NAME=PATH" in bad.output
