"""The Every Eval Ever reader: hand-written instance files in the datastore's layout give the
rows their lines say (tests/support/eee_files.py); repeats become seeds by the documented rule;
a file with one line per (sample, metric) imports one result id; a file and its aggregate must
agree; every refusal is one line that names the file and the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from forgetmap.core.errors import InputError
from forgetmap.importers import read_source
from forgetmap.importers.eee.reader import read_eee

from tests.support import eee_files as files
from tests.support.eee_files import BASE, LONG_THOUGHT, POST


def _rows(table) -> dict[tuple, dict]:
    return {(r["model"], r["benchmark"], r["seed"], r["sample_id"]): r for r in table.to_pylist()}


def test_lines_become_the_rows_they_describe(tmp_path):
    rows = _rows(read_eee(files.write_pair(tmp_path)))
    assert len(rows) == 2 * (8 + 8)
    first = rows[(BASE, "toy_mc", 0, "mc-0")]
    assert first == {
        "model": BASE,
        "benchmark": "toy_mc",
        "sample_id": "mc-0",
        "seed": 0,
        "correct": True,
        "num_choices": 4,
        "category": "Toy",
        "prompt": "Answer with a letter.\n\nWhich city is number 0?\nAnswer:",
        "question": "Which city is number 0?",
        "response": LONG_THOUGHT + "\n\nThe answer is A.",  # the reasoning, then the answer
        "prediction": "A",  # the terminal attribution, not the earlier "A."
        "gold": "A",
        "choices": '["Paris", "Rome", "Madrid", "Berlin"]',
        "doc_hash": "doc0",
        "prompt_tokens": 20,
        "completion_tokens": 5,
        "prompt_prefix": None,
        "prompt_suffix": None,
        "answer_status": None,
    }
    assert rows[(POST, "toy_mc", 0, "mc-2")]["prediction"] == "D"  # wrong: the next letter
    assert rows[(BASE, "toy_mc", 0, "mc-7")]["answer_status"] == "truncated"  # max_tokens
    generated = rows[(POST, "toy_gen", 1, "gen-3")]  # epoch 2 is seed 1
    shown = {
        k: generated[k] for k in ("correct", "num_choices", "prediction", "prompt", "question")
    }
    assert shown == {
        "correct": True,
        "num_choices": None,
        "prediction": "4",
        "prompt": "question gen-3",
        "question": None,
    }
    assert sorted({s for (_, b, s, _) in rows if b == "toy_gen"}) == [0, 1]


def _one_file(tmp_path: Path, *lines: dict, aggregate: bool = False) -> Path:
    return files.write_run(tmp_path, BASE, "toy_gen", list(lines), aggregate=aggregate)


@pytest.mark.parametrize(
    ("metadata", "seed"),
    [
        ({}, 0),
        ({"epoch": "1"}, 0),
        ({"epoch": "3"}, 2),
        ({"seed": "7", "epoch": "3"}, 7),
        ({"seed": "-2"}, -2),
    ],
)
def test_the_seed_is_metadata_seed_else_the_epoch_from_one(tmp_path, metadata, seed):
    path = _one_file(tmp_path, files.line(BASE, "toy_gen", "g", 1, metadata=metadata))
    assert read_eee(path)["seed"].to_pylist() == [seed]


def test_correct_falls_back_to_a_score_of_0_or_1(tmp_path):
    path = _one_file(tmp_path, files.line(BASE, "toy_gen", "g", 1, evaluation={"score": 0}))
    assert read_eee(path)["correct"].to_pylist() == [False]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"evaluation": {"score": 0.5}},
            ":1: evaluation.is_correct is not true or false and "
            "evaluation.score 0.5 is not 0 or 1; forgetmap counts per-sample 0/1 flips",
        ),
        (
            {"metadata": {"epoch": "0"}},
            ":1: metadata.epoch is '0'; it must be a whole number from 1",
        ),
        ({"metadata": {"seed": "x"}}, ":1: metadata.seed is 'x'; it must be a whole number"),
        ({"sample_id": ""}, ":1: the line has no sample_id (is this an Every Eval Ever"),
        ({"evaluation": None}, ":1: evaluation must be an object"),
        (
            {"input": {"raw": "q", "reference": "a", "choices": 3}},
            ":1: input.choices must be a list of texts, got int",
        ),
    ],
)
def test_a_bad_line_is_refused_naming_it(tmp_path, change, message):
    path = _one_file(tmp_path, files.line(BASE, "toy_gen", "g", 1, **change))
    with pytest.raises(InputError) as caught:
        read_eee(path)
    assert str(caught.value).startswith(f"{path}{message}")
    assert "\n" not in str(caught.value)


def test_a_line_that_is_not_json_is_named(tmp_path):
    path = _one_file(tmp_path, files.line(BASE, "toy_gen", "g", 1))
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(InputError) as caught:
        read_eee(path)
    assert str(caught.value).startswith(f"{path}: line 2 is not valid JSON (")


def test_conversations_keep_the_assistants_turns(tmp_path):
    messages = [
        {"turn_idx": 0, "role": "user", "content": "hi"},
        {"turn_idx": 1, "role": "assistant", "content": "call", "reasoning_trace": "plan"},
        {"turn_idx": 2, "role": "tool", "content": "42"},
        {"turn_idx": 3, "role": "assistant", "content": "it is 42"},
    ]
    path = _one_file(
        tmp_path,
        files.line(
            BASE, "toy_gen", "g", 1, interaction_type="agentic", output=None, messages=messages
        ),
    )
    assert read_eee(path)["response"].to_pylist() == ["plan\n\ncall\n\nit is 42"]


def test_one_line_per_metric_needs_a_result_id(tmp_path):
    folder = files.write_helm(tmp_path)
    with pytest.raises(InputError) as caught:
        read_eee(folder)
    assert str(caught.value) == (
        "evaluation 'toy_helm' has one line per sample and metric (evaluation_result_id "
        "exact_match, f1); choose one with --evaluation-result-id ID"
    )
    told = []
    rows = _rows(read_eee(folder, result_id="exact_match", notice=told.append))
    assert told == ["toy_helm: evaluation_result_id exact_match, f1; took exact_match"]
    assert {k: r["correct"] for k, r in rows.items()} == {
        (model, "toy_helm", 0, f"h-{i}"): bool(c)
        for model, values in files.HELM_CORRECT.items()
        for i, c in enumerate(values)
    }
    with pytest.raises(InputError) as caught:
        read_eee(folder, result_id="rouge")
    assert (
        str(caught.value)
        == "no line has evaluation_result_id 'rouge'; the ids are: exact_match, f1"
    )


def test_a_chosen_id_leaves_evaluations_of_one_result_whole(tmp_path):
    files.write_helm(tmp_path)
    files.write_pair(tmp_path)
    table = read_eee(tmp_path, result_id="f1")
    assert table.num_rows == 2 * (8 + 8) + 2 * 3


def test_the_aggregate_beside_a_file_must_describe_it(tmp_path):
    samples = files.write_run(tmp_path, BASE, "toy_mc", files.mc_lines(BASE))
    aggregate = samples.with_name(samples.name.replace("_samples.jsonl", ".json"))
    assert read_eee(aggregate).num_rows == read_eee(samples).num_rows == 8  # either file
    lines = samples.read_text().splitlines()
    samples.write_text("\n".join(lines[:-1]) + "\n")  # a copy cut short
    with pytest.raises(InputError) as caught:
        read_eee(samples)
    assert str(caught.value) == (
        f"{samples}: holds 7 lines, its aggregate {aggregate.name} says 8: an incomplete or "
        "edited copy; fetch the run's files again"
    )
    files.write_run(tmp_path, BASE, "toy_mc", files.mc_lines(BASE))
    samples.write_text(samples.read_text().replace("Paris", "Lyon"))  # same lines, other bytes
    with pytest.raises(InputError, match="its sha256 is not the checksum its aggregate"):
        read_eee(samples)


def test_lines_of_another_run_are_refused(tmp_path):
    stray = files.line(BASE, "toy_gen", "g", 1, evaluation_id="another-run")
    samples = files.write_run(
        tmp_path, BASE, "toy_gen", [files.line(BASE, "toy_gen", "f", 1), stray]
    )
    with pytest.raises(InputError) as caught:
        read_eee(samples)
    assert str(caught.value) == (
        f"{samples}:2: evaluation_id 'another-run' is not its aggregate's "
        f"('{files.evaluation_id(BASE, 'toy_gen')}', {samples.name[:-14]}.json): the file "
        "belongs to another run"
    )


def test_an_aggregate_found_by_its_file_path_is_checked_too(tmp_path):
    samples = files.write_run(tmp_path, BASE, "toy_gen", files.gen_lines(BASE), total_rows=3)
    aggregate = samples.with_name(samples.name.replace("_samples.jsonl", ".json"))
    aggregate.rename(aggregate.with_name("results.json"))  # not named by the uuid any more
    with pytest.raises(InputError, match="holds 8 lines, its aggregate results.json says 3"):
        read_eee(samples)


def test_a_broken_aggregate_of_the_same_uuid_is_refused(tmp_path):
    samples = _one_file(tmp_path, files.line(BASE, "toy_gen", "g", 1))
    samples.with_name(samples.name.replace("_samples.jsonl", ".json")).write_text("{")
    with pytest.raises(InputError, match=r"\.json: not a JSON aggregate of Every Eval Ever"):
        read_eee(samples)


def test_model_names_the_files_model_or_is_refused_for_several(tmp_path):
    folder = files.write_pair(tmp_path)
    with pytest.raises(InputError) as caught:
        read_eee(folder, model="m")
    assert str(caught.value) == (
        f"{folder}: holds 2 models ({BASE}, {POST}); --model stores every line under one name: "
        "import one model's files, or leave --model out"
    )
    one = folder / "data" / "toy_gen" / "acme" / "base-1b"
    assert set(read_eee(one, model="m")["model"].to_pylist()) == {"m"}


def test_paths_without_instance_files_are_refused(tmp_path):
    with pytest.raises(InputError, match=r"nope: no such file or folder \(expected an Every"):
        read_eee(tmp_path / "nope")
    with pytest.raises(InputError, match=r": no instance files \(\*_samples.jsonl\) below it"):
        read_eee(tmp_path)
    lonely = tmp_path / "agg.json"
    lonely.write_text(json.dumps({"evaluation_id": "x"}))
    with pytest.raises(InputError, match="an aggregate without instance-level results"):
        read_eee(lonely)


def test_the_importer_takes_the_kind(tmp_path):
    folder = files.write_pair(tmp_path)
    assert read_source("eee", folder, model=None).num_rows == 32
