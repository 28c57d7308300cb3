"""`forgetmap series add/list/show` on a real DuckDB file against hand-computed values.

The run is tests/support/series_fixtures.py. mixbench's chance term sums its k-groups with weights
n_g/N: the k = 2 group (s0, s1) is always right under the base, so its term is 0; the k = 4 group
(s2, s3) has acc_pre = 1/2, so c = (2/4) * (1/2) * (1 - acc_post_k4) / 3 = (1 - acc_post_k4) / 12.
"""

from __future__ import annotations

import csv
import io
import math

import pytest
from forgetmap.services.series import SERIES_EXTRA, SERIES_FIELDS, SERIES_MARGINS

from tests.support.cli import cli_both_ways
from tests.support.series_fixtures import load_run

cli = cli_both_ways()  # every test with the owner absent, then with a real serve owning the file

# F_true per seed at step 2 (seeds 0, 1, 2):
#   mixbench: seed 0/1 post 0110 -> n_10 = 1, k4 post 10 (acc 1/2), c = 1/24:
#               F_true = 1/4 - 1/24 = 5/24
#             seed 2   post 1100 -> n_10 = 1, k4 post 00 (acc 0),   c = 1/12:
#               F_true = 1/4 - 1/12 = 4/24
#   genbench: 10, 11, 10 -> F_true = 1/2, 0, 1/2 (generative: no chance term)
KNOW_2 = [5 / 24, 5 / 24, 4 / 24]
MATH_2 = [0.5, 0.0, 0.5]
TOTAL_2 = [(k + m) / 2 for k, m in zip(KNOW_2, MATH_2, strict=True)]  # 17/48, 5/48, 16/48


def mean_std(xs):
    mean = sum(xs) / len(xs)
    return mean, math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


@pytest.fixture
def run(cli, tmp_path):
    load_run(cli, tmp_path)
    return cli


def test_series_records_match_hand_computed_values(run):
    records = run.json("series", "show", "run", "--format", "json")
    assert all(tuple(r) == SERIES_FIELDS + SERIES_EXTRA + SERIES_MARGINS for r in records)
    by = {(r["step"], r["category"]): r for r in records}
    assert sorted(by) == [(s, c) for s in (1, 2, 3, 4) for c in ("Knowledge/QA", "Math", "Total")]
    assert [r["step"] for r in records] == sorted(r["step"] for r in records)

    # step 1 repeats the base: nothing forgotten, nothing gained, no seed noise
    for c in ("Knowledge/QA", "Math", "Total"):
        r = by[(1, c)]
        assert (r["f_true"], r["f_true_std"], r["bt_true"], r["noise_floor"]) == (0, 0, 0, 0)
        assert r["post"] == "run-step1" and r["series"] == "run" and r["seeds"] == 3
        assert r["clears_noise"] is False

    # step 2: hand-computed means and sample stds across the three seeds
    know, math_, total = by[(2, "Knowledge/QA")], by[(2, "Math")], by[(2, "Total")]
    assert know["f_true"] == pytest.approx(7 / 36, abs=1e-12)
    assert know["f_true_std"] == pytest.approx(math.sqrt(3) / 72, abs=1e-12)
    assert math_["f_true"] == pytest.approx(1 / 3, abs=1e-12)
    assert math_["f_true_std"] == pytest.approx(math.sqrt(1 / 12), abs=1e-12)
    assert total["f_true"] == pytest.approx(19 / 72, abs=1e-12)
    assert total["f_true_std"] == pytest.approx(math.sqrt(399) / 144, abs=1e-12)
    assert (total["f_true"], total["f_true_std"]) == pytest.approx(mean_std(TOTAL_2), abs=1e-12)
    assert all(by[(2, c)]["bt_true"] == 0 for c in ("Knowledge/QA", "Math", "Total"))
    assert (know["n_benchmarks"], math_["n_benchmarks"], total["n_benchmarks"]) == (1, 1, 2)
    # noise floor: step 2's seeds disagree; per benchmark the mean over seed pairs (0,1), (0,2),
    # (1,2) of (F + BT) / 2 is (0 + 1/4 + 1/4) / 3 = 1/6 on both benchmarks; the base's is 0, and
    # a pair's floor is the mean of its two models' floors: 1/12
    for c in ("Knowledge/QA", "Math", "Total"):
        assert by[(2, c)]["noise_floor"] == pytest.approx(1 / 12, abs=1e-12)
    # 95% t-interval over 3 seeds (t = 4.3027): Knowledge/QA's lower end 0.1347 > 1/12; Math's and
    # Total's are below 0
    assert (know["clears_noise"], math_["clears_noise"], total["clears_noise"]) == (
        True,
        False,
        False,
    )

    # step 3: every seed alike. mixbench: s0 1->0, s3 0->1, k4 post 11 (c = 0): F = BT = 1/4;
    # genbench: g1 1->0: F = 1/2
    assert (by[(3, "Knowledge/QA")]["f_true"], by[(3, "Knowledge/QA")]["bt_true"]) == (0.25, 0.25)
    assert (by[(3, "Math")]["f_true"], by[(3, "Math")]["bt_true"]) == (0.5, 0.0)
    assert by[(3, "Total")]["f_true"] == pytest.approx(0.375, abs=1e-15)
    assert by[(3, "Total")]["bt_true"] == pytest.approx(0.125, abs=1e-15)
    assert by[(3, "Total")]["f_true_std"] == 0 and by[(3, "Total")]["clears_noise"] is True
    # step 4: mixbench s1 1->0, s3 0->1 (c = 0); genbench all kept
    assert (by[(4, "Knowledge/QA")]["f_true"], by[(4, "Knowledge/QA")]["bt_true"]) == (0.25, 0.25)
    assert (by[(4, "Math")]["f_true"], by[(4, "Math")]["clears_noise"]) == (0.0, False)
    assert by[(4, "Total")]["f_true"] == pytest.approx(0.125, abs=1e-15)


def test_series_records_are_the_maps_records_of_each_pair(run):
    records = run.json("series", "show", "run", "--format", "json")
    pairs = {r["pair_id"]: r["step"] for r in records}
    category_map = run.json("map", "--format", "json")
    for m in category_map:
        if m["pair_id"] in pairs:
            s = next(
                r
                for r in records
                if r["pair_id"] == m["pair_id"] and r["category"] == m["category"]
            )
            assert {
                k: s[k] for k in ("f_true", "f_true_std", "bt_true", "noise_floor", "seeds")
            } == {k: m[k] for k in ("f_true", "f_true_std", "bt_true", "noise_floor", "seeds")}
    assert {m["label"] for m in category_map} == {f"run @ {s}" for s in (1, 2, 3, 4)}


def test_series_csv_and_table(run):
    text = run("series", "show", "run", "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == list(SERIES_FIELDS + SERIES_EXTRA + SERIES_MARGINS)
    assert len(rows) == 12 and rows[0]["series"] == "run" and rows[0]["step"] == "1"
    table = run("series", "show", "run").stdout
    assert "run-step2" in table and "Total" in table


def test_series_list_and_extending_a_series(run, tmp_path):
    listed = run.json("series", "list", "--format", "json")
    assert listed == [
        {"id": 1, "name": "run", "base": "base", "steps": [1, 2, 3, 4], "axis": "step"}
    ]
    # a second series over the same checkpoints placed out of order, extended later
    out = run(
        "series",
        "add",
        "late",
        "--base",
        "base",
        "--checkpoint",
        "run-step3@30",
        "--checkpoint",
        "run-step1@10",
    ).stdout
    assert "created series 2 late" in out
    out = run(
        "series",
        "add",
        "late",
        "--base",
        "base",
        "--checkpoint",
        "run-step2@20",
        "--checkpoint",
        "run-step1@10",
    ).stdout
    assert "extended series 2 late: run-step2@20" in out and "run-step1@10" not in out
    steps = [r["step"] for r in run.json("series", "show", "late", "--format", "json")]
    assert steps == sorted(steps) and set(steps) == {10, 20, 30}
    # the pairs already existed (series "run" made them): no new pair
    assert len(run.json("map", "--format", "json")) == 12


def test_a_runs_stage_is_its_pairs_so_a_stage_filter_keeps_it(run):
    out = run(
        "series",
        "add",
        "tuned",
        "--base",
        "base",
        "--checkpoint",
        "run-step1@10",
        "--checkpoint",
        "run-step2@20",
        "--stage",
        "sft",
    ).stdout
    assert "created series 2 tuned" in out
    listed = run("pair", "list").stdout.splitlines()
    staged = {
        post
        for post in ("run-step1", "run-step2", "run-step3", "run-step4")
        for line in listed
        if f" {post} " in line and " sft " in line
    }
    assert staged == {"run-step1", "run-step2"}
    refused = run(
        "series",
        "add",
        "tuned",
        "--base",
        "base",
        "--checkpoint",
        "run-step3@30",
        "--stage",
        "bogus",
        ok=False,
    )
    assert refused.exit_code == 2 and "--stage" in refused.stderr and "sft" in refused.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--checkpoint", "run-step1"], "must be MODEL@STEP"),
        (["--checkpoint", "run-step1@x"], "must be an integer"),
        (["--checkpoint", "nope@5"], "unknown checkpoint model 'nope'"),
        (["--checkpoint", "run-step2@1"], "already has 'run-step1' at step 1"),
        (["--checkpoint", "run-step1@9"], "already in series 'run' at step 1"),
        (["--checkpoint", "base@9"], "is the series' base model"),
    ],
)
def test_series_add_refuses_bad_input_and_writes_nothing(run, args, message):
    before = run.contents()
    result = run("series", "add", "run", "--base", "base", *args, ok=False)
    assert result.exit_code == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert run.contents() == before


def test_series_add_refuses_another_base(run):
    result = run(
        "series", "add", "run", "--base", "run-step1", "--checkpoint", "run-step2@9", ok=False
    )
    assert result.exit_code == 2 and "is over base 'base'" in result.stderr
    missing = run("series", "show", "nope", ok=False)
    assert missing.exit_code == 2 and "no series named 'nope'" in missing.stderr
