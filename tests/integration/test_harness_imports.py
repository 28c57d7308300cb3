"""lm-eval-harness and lighteval files through the CLI into the map, values by hand."""

from __future__ import annotations

import json

import pytest
from forgetmap.demo.layouts.lighteval import write_lighteval_details
from forgetmap.demo.layouts.lm_eval import write_lm_eval_results, write_lm_eval_samples

from tests.support.cli import cli_both_ways

cli = cli_both_ways()  # every test with the owner absent, then with a real serve owning the file

BASE = [1, 1, 1, 0, 0, 1, 1, 1]
POST = [1, 0, 1, 0, 1, 1, 1, 1]
# transitions: 1->1 at 0,2,5,6,7 (5); 1->0 at 1; 0->0 at 3; 0->1 at 4
EXPECTED = {"n_00": 1, "n_01": 1, "n_10": 1, "n_11": 5}


def _check_record(rec, benchmark="mmlu:anatomy"):
    assert rec["benchmark"] == benchmark and rec["category"] == "Science/Tech"
    assert {k: rec[k] for k in EXPECTED} == EXPECTED
    assert rec["num_choices"] == 4
    # acc .75 -> .75; c = .25 * .25 / 3; F = 1/8
    assert rec["f_chance"] == pytest.approx(0.0625 / 3, abs=1e-15)
    assert rec["f_true"] == pytest.approx(0.125 - 0.0625 / 3, abs=1e-15)
    assert rec["bt_true"] == pytest.approx(0.125 - 0.0625 / 3, abs=1e-15)


def test_lm_eval_samples_to_map(cli, tmp_path):
    write_lm_eval_samples(tmp_path / "base", "mmlu_anatomy", BASE)
    write_lm_eval_samples(tmp_path / "post", "mmlu_anatomy", POST)
    cli("import", "lm-eval", tmp_path / "base", "--model", "base")
    cli("import", "lm-eval", tmp_path / "post", "--model", "post")
    cli("pair", "add", "base", "post")
    [rec] = cli.json("map", "--level", "benchmark", "--format", "json")
    _check_record(rec)


def test_lm_eval_doc_hash_mismatch_is_reported_and_excluded(cli, tmp_path):
    write_lm_eval_samples(tmp_path / "base", "mmlu_anatomy", BASE)
    path = write_lm_eval_samples(tmp_path / "post", "mmlu_anatomy", POST)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[1]["doc_hash"] = "0" * 64  # doc 1 (the only 1->0 flip) was a different document
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    cli("import", "lm-eval", tmp_path / "base", "--model", "base")
    cli("import", "lm-eval", tmp_path / "post", "--model", "post")
    out = cli("pair", "add", "base", "post").stdout
    assert "1 with mismatched documents" in out
    [rec] = cli.json("map", "--level", "benchmark", "--format", "json")
    assert rec["n"] == 7 and rec["n_10"] == 0 and rec["mismatched"] == 1


def test_lm_eval_non_binary_metric_is_refused(cli, tmp_path):
    write_lm_eval_samples(tmp_path / "base", "mmlu_anatomy", BASE)
    cli("import", "lm-eval", tmp_path / "base", "--model", "base")
    before = cli.contents()
    write_lm_eval_samples(tmp_path / "bad", "mmlu_anatomy", [1, 0.5, 1])
    result = cli("import", "lm-eval", tmp_path / "bad", "--model", "other", ok=False)
    assert result.exit_code == 2
    assert "0.5" in result.stderr and "--metric" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert cli.contents() == before


@pytest.mark.parametrize("schemas", [("flat", "flat"), ("nested", "nested"), ("flat", "nested")])
def test_lighteval_details_to_map(cli, tmp_path, schemas):
    task = "leaderboard|mmlu:anatomy|5"
    # flat details carry no doc id: pair them by content hash (nested ones without ids too)
    with_ids = schemas == ("nested", "nested")
    kwargs = [{"with_ids": with_ids} if s == "nested" else {} for s in schemas]
    write_lighteval_details(tmp_path / "base", task, BASE, schema=schemas[0], **kwargs[0])
    write_lighteval_details(
        tmp_path / "post", task, POST, schema=schemas[1], shuffle_seed=3, **kwargs[1]
    )
    cli("import", "lighteval", tmp_path / "base", "--model", "base", "--seed", "0")
    cli("import", "lighteval", tmp_path / "post", "--model", "post", "--seed", "0")
    out = cli("pair", "add", "base", "post").stdout
    [rec] = cli.json("map", "--level", "benchmark", "--format", "json")
    if with_ids:
        _check_record(rec)
        return
    # without ids, rows 6 and 7 repeat the questions of rows 0 and 1 (six distinct MMLU docs):
    # those four rows per model cannot be told apart, so they stay unpaired and are reported
    assert "8 ambiguous" in out
    # rows 2-5: base 1,0,0,1 -> post 1,0,1,1
    assert {k: rec[k] for k in EXPECTED} == {"n_00": 1, "n_01": 1, "n_10": 0, "n_11": 2}


def test_harness_import_needs_a_model_name(cli, tmp_path):
    write_lm_eval_samples(tmp_path / "base", "mmlu_anatomy", BASE)
    result = cli("import", "lm-eval", tmp_path / "base", ok=False)
    assert result.exit_code == 2
    assert "--model" in result.stderr


def test_lm_eval_run_folders_whose_lines_do_not_name_the_filter(cli, tmp_path):
    """lm-eval 0.4.3-0.4.6 output (OUT/<model>/samples_*.jsonl beside results_*.json, lines
    without a filter field): a two-filter task imports in one command per model, the default
    filter told, --filter selecting, values by hand."""
    runs = {
        "base": {"strict-match": [1, 0, 0, 1, 0], "flexible-extract": [1, 1, 0, 1, 1]},
        "post": {"strict-match": [0, 0, 0, 1, 0], "flexible-extract": [1, 0, 0, 1, 1]},
    }
    for name, scores in runs.items():
        folder = tmp_path / name / f"org__{name}"
        write_lm_eval_samples(folder, "gsm8k", scores, kind="generate_until", filters_named=False)
        write_lm_eval_samples(
            folder, "mmlu_anatomy", BASE if name == "base" else POST, filters_named=False
        )
        write_lm_eval_results(folder, {"gsm8k": list(scores), "mmlu_anatomy": None})
    for name in runs:
        told = cli("import", "lm-eval", tmp_path / name, "--model", name).stderr
        assert (
            "gsm8k: filters strict-match, flexible-extract; took flexible-extract (default)" in told
        )
        cli(
            "import",
            "lm-eval",
            tmp_path / name,
            "--model",
            f"{name}-strict",
            "--filter",
            "gsm8k=strict-match",
        )
    cli("pair", "add", "base", "post")
    cli("pair", "add", "base-strict", "post-strict")
    records = cli.json("map", "--level", "benchmark", "--format", "json")
    counts = {
        (r["base"], r["benchmark"]): {k: r[k] for k in ("n_00", "n_01", "n_10", "n_11")}
        for r in records
    }
    # flexible-extract: 1->1 at docs 0, 3, 4; 1->0 at doc 1; 0->0 at doc 2
    assert counts[("base", "gsm8k")] == {"n_00": 1, "n_01": 0, "n_10": 1, "n_11": 3}
    # strict-match: 1->0 at doc 0; 1->1 at doc 3; 0->0 at docs 1, 2, 4
    assert counts[("base-strict", "gsm8k")] == {"n_00": 3, "n_01": 0, "n_10": 1, "n_11": 1}
    for base in ("base", "base-strict"):
        assert counts[(base, "mmlu:anatomy")] == EXPECTED


def test_lm_eval_042_base_beside_a_045_post(cli, tmp_path):
    """A base evaluated with lm-eval 0.4.2 (a JSON array per task beside results.json), its
    post-trained model with 0.4.5: both import in one command each and pair by doc_id."""
    model_args = "pretrained=org/base,dtype=bfloat16"
    old, new = tmp_path / "base-out", tmp_path / "post-out" / "org__post"
    write_lm_eval_samples(old, "mmlu_anatomy", BASE, legacy_model_args=model_args)
    write_lm_eval_samples(
        old,
        "gsm8k",
        {"strict-match": [1, 0, 1], "flexible-extract": [1, 1, 1]},
        kind="generate_until",
        legacy_model_args=model_args,
    )
    write_lm_eval_results(
        old,
        {"gsm8k": ["strict-match", "flexible-extract"], "mmlu_anatomy": None},
        legacy_model_args=model_args,
    )
    write_lm_eval_samples(new, "mmlu_anatomy", POST, filters_named=False)
    write_lm_eval_samples(
        new,
        "gsm8k",
        {"strict-match": [0, 0, 1], "flexible-extract": [0, 1, 1]},
        kind="generate_until",
        filters_named=False,
    )
    write_lm_eval_results(
        new, {"gsm8k": ["strict-match", "flexible-extract"], "mmlu_anatomy": None}
    )
    assert "took flexible-extract" in cli("import", "lm-eval", old, "--model", "base").stderr
    assert "took flexible-extract" in cli("import", "lm-eval", new, "--model", "post").stderr
    cli("pair", "add", "base", "post")
    records = {
        r["benchmark"]: r for r in cli.json("map", "--level", "benchmark", "--format", "json")
    }
    _check_record(records["mmlu:anatomy"])
    # flexible-extract: doc 0 1->0, docs 1 and 2 1->1
    assert {k: records["gsm8k"][k] for k in EXPECTED} == {
        "n_00": 0,
        "n_01": 0,
        "n_10": 1,
        "n_11": 2,
    }
