"""lm-evaluation-harness samples reader: files written in lm-eval's exact format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from forgetmap.demo.layouts.common import MC_DOCS
from forgetmap.demo.layouts.lm_eval import write_lm_eval_samples
from forgetmap.importers.common import NORMALIZED_SCHEMA, InputError, validate_normalized
from forgetmap.importers.lm_eval.reader import read_lm_eval, task_from_filename

CORRECT = [1, 0, 1, 1, 0, 1, 0, 0]


def rows_by_id(table) -> dict[str, dict]:
    return {r["sample_id"]: r for r in table.to_pylist()}


def test_multiple_choice_rows(tmp_path: Path) -> None:
    write_lm_eval_samples(tmp_path, "mmlu_anatomy", CORRECT)
    table = read_lm_eval(tmp_path, model="base", seed=3)

    assert table.schema == NORMALIZED_SCHEMA.remove_metadata()
    validate_normalized(table, source="test")
    assert table.num_rows == len(CORRECT)
    rows = rows_by_id(table)
    assert [rows[str(i)]["correct"] for i in range(len(CORRECT))] == [bool(c) for c in CORRECT]
    first = rows["0"]
    assert first["model"] == "base"
    assert first["benchmark"] == "mmlu_anatomy"
    assert first["seed"] == 3
    assert first["num_choices"] == 4
    assert first["category"] is None
    assert json.loads(first["choices"]) == [" A", " B", " C", " D"]
    assert first["prompt"].startswith("The following are multiple choice questions")
    assert first["prompt"].endswith("Answer:")
    assert MC_DOCS[0].question in first["prompt"]
    assert first["gold"] == str(MC_DOCS[0].answer)
    lls = json.loads(first["response"])
    assert len(lls) == 4 and all(isinstance(v, float) for v in lls)
    # prediction is the argmax option: the gold one exactly when the sample is correct
    for i, c in enumerate(CORRECT):
        row = rows[str(i)]
        assert (row["prediction"] == row["gold"]) == bool(c)
    assert len(first["doc_hash"]) == 64


def test_k_from_the_options_shown(tmp_path: Path) -> None:
    write_lm_eval_samples(tmp_path, "arc_challenge", [1, 0, 1], num_choices=5)
    table = read_lm_eval(tmp_path, model="m")
    assert set(table["num_choices"].to_pylist()) == {5}


def test_older_list_shaped_arguments(tmp_path: Path) -> None:
    path = write_lm_eval_samples(tmp_path, "mmlu_anatomy", CORRECT, arguments_style="list")
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert isinstance(first["arguments"], list) and len(first["arguments"][0]) == 2
    table = read_lm_eval(path, model="m")
    assert table["num_choices"].to_pylist() == [4] * len(CORRECT)
    assert table["correct"].to_pylist() == [bool(c) for c in CORRECT]
    assert json.loads(table["choices"][0].as_py()) == [" A", " B", " C", " D"]


def test_generate_until_takes_k_from_the_taxonomy(tmp_path: Path) -> None:
    write_lm_eval_samples(tmp_path, "bbh_cot_fewshot_navigate", [1, 0, 1, 0], kind="generate_until")
    table = read_lm_eval(tmp_path, model="m")
    rows = rows_by_id(table)
    assert table["num_choices"].to_pylist() == [2, 2, 2, 2]
    assert table["choices"].to_pylist() == [None] * 4
    first = rows["0"]
    assert first["benchmark"] == "bbh_cot_fewshot_navigate"
    assert first["response"].strip().endswith("So the answer is No.")
    assert first["prediction"] == "No"
    assert first["gold"] == "No"
    assert first["prompt"].endswith("Let's think step by step.")
    assert rows["1"]["correct"] is False and rows["1"]["prediction"] == "No"


def test_generate_until_unknown_task_is_generative(tmp_path: Path) -> None:
    write_lm_eval_samples(tmp_path, "gsm8k", {"strict-match": [1, 0, 1]}, kind="generate_until")
    table = read_lm_eval(tmp_path, model="m")
    assert table["num_choices"].to_pylist() == [None, None, None]
    assert table["correct"].to_pylist() == [True, False, True]
    assert table["prediction"].to_pylist()[0] == "72"


def test_default_metric_order(tmp_path: Path) -> None:
    # acc beats exact_match when both are present
    write_lm_eval_samples(
        tmp_path,
        "mmlu_anatomy",
        [1, 1, 0],
        metric="exact_match",
        extra_metrics={"acc": [0, 0, 1], "acc_norm": [1, 1, 1]},
    )
    table = read_lm_eval(tmp_path, model="m")
    assert table["correct"].to_pylist() == [False, False, True]


def test_extractive_match_used_when_alone(tmp_path: Path) -> None:
    write_lm_eval_samples(
        tmp_path, "gsm8k", [1, 0, 0], kind="generate_until", metric="extractive_match"
    )
    assert read_lm_eval(tmp_path, model="m")["correct"].to_pylist() == [True, False, False]


def test_metric_option(tmp_path: Path) -> None:
    write_lm_eval_samples(
        tmp_path, "mmlu_anatomy", [1, 1, 0], extra_metrics={"acc_norm": [0, 1, 1]}
    )
    table = read_lm_eval(tmp_path, model="m", metric="acc_norm")
    assert table["correct"].to_pylist() == [False, True, True]


def test_missing_metric_names_the_present_ones(tmp_path: Path) -> None:
    write_lm_eval_samples(tmp_path, "mmlu_anatomy", [1, 0], extra_metrics={"acc_norm": [1, 1]})
    with pytest.raises(InputError, match=r"'brier'.*metrics present: acc, acc_norm"):
        read_lm_eval(tmp_path, model="m", metric="brier")


def test_no_default_metric_asks_for_metric(tmp_path: Path) -> None:
    write_lm_eval_samples(tmp_path, "triviaqa", [1, 0], kind="generate_until", metric="f1")
    with pytest.raises(InputError, match=r"metrics present: f1.*--metric"):
        read_lm_eval(tmp_path, model="m")


def test_non_binary_value_refused(tmp_path: Path) -> None:
    path = write_lm_eval_samples(
        tmp_path,
        "drop",
        [1, 0.5, 0],
        kind="generate_until",
        metric="exact_match",
        extra_metrics={"f1": [1, 0.5, 0]},
    )
    with pytest.raises(InputError) as info:
        read_lm_eval(tmp_path, model="m")
    message = str(info.value)
    assert f"{path}:2" in message
    assert "'exact_match'" in message
    assert "0.5" in message
    assert "--metric" in message and "non-binary" in message
    with pytest.raises(InputError, match=r":2: metric 'f1' has the non-binary value 0.5"):
        read_lm_eval(tmp_path, model="m", metric="f1")


def test_several_filters_take_the_documented_default(tmp_path: Path) -> None:
    write_lm_eval_samples(
        tmp_path,
        "gsm8k",
        {"strict-match": [1, 0, 0], "flexible-extract": [1, 1, 0]},
        kind="generate_until",
    )
    told = []
    default = read_lm_eval(tmp_path, model="m", on_filter=lambda *a: told.append(a))
    assert default["correct"].to_pylist() == [True, True, False]  # flexible-extract
    assert told == [("gsm8k", "flexible-extract", ["strict-match", "flexible-extract"], "default")]
    strict = read_lm_eval(tmp_path, model="m", filter_name="strict-match")
    per_task = read_lm_eval(tmp_path, model="m", filter_name=["gsm8k=strict-match"])
    flexible = read_lm_eval(tmp_path, model="m", filter_name="flexible-extract")
    assert strict["correct"].to_pylist() == [True, False, False]
    assert per_task["correct"].to_pylist() == [True, False, False]
    assert flexible["correct"].to_pylist() == [True, True, False]
    assert strict["sample_id"].to_pylist() == ["0", "1", "2"]
    with pytest.raises(InputError, match=r"no filter 'majority'.*strict-match.*gsm8k=NAME"):
        read_lm_eval(tmp_path, model="m", filter_name="majority")
    with pytest.raises(InputError, match=r"two filters for task 'gsm8k'"):
        read_lm_eval(tmp_path, model="m", filter_name=["gsm8k=a", "gsm8k=b"])


def test_two_filter_task_beside_others_in_one_directory(tmp_path: Path) -> None:
    """A run directory where one task has two filters imports whole, each task its filter."""
    write_lm_eval_samples(
        tmp_path,
        "gsm8k",
        {"strict-match": [0, 0], "flexible-extract": [1, 0]},
        kind="generate_until",
    )
    write_lm_eval_samples(
        tmp_path,
        "bbh_cot_fewshot_navigate",
        {"strict-match": [1, 0], "get-answer": [0, 0]},
        kind="generate_until",
    )
    write_lm_eval_samples(tmp_path, "mmlu_anatomy", [0, 1])
    table = read_lm_eval(tmp_path, model="m")
    got = {(r["benchmark"], r["sample_id"]): r["correct"] for r in table.to_pylist()}
    assert got == {
        ("gsm8k", "0"): True,  # flexible-extract
        ("gsm8k", "1"): False,
        ("bbh_cot_fewshot_navigate", "0"): False,  # get-answer before strict-match
        ("bbh_cot_fewshot_navigate", "1"): False,
        ("mmlu_anatomy", "0"): False,
        ("mmlu_anatomy", "1"): True,
    }
    chosen = read_lm_eval(
        tmp_path, model="m", filter_name=["bbh_cot_fewshot_navigate=strict-match"]
    )
    assert {
        r["sample_id"]: r["correct"]
        for r in chosen.to_pylist()
        if r["benchmark"] == "bbh_cot_fewshot_navigate"
    } == {"0": True, "1": False}


def test_filter_name_ignored_for_single_filter_tasks(tmp_path: Path) -> None:
    write_lm_eval_samples(
        tmp_path,
        "gsm8k",
        {"strict-match": [1, 0], "flexible-extract": [1, 1]},
        kind="generate_until",
    )
    write_lm_eval_samples(tmp_path, "mmlu_anatomy", [0, 1])
    table = read_lm_eval(tmp_path, model="m", filter_name="flexible-extract")
    got = {(r["benchmark"], r["sample_id"]): r["correct"] for r in table.to_pylist()}
    assert got == {
        ("gsm8k", "0"): True,
        ("gsm8k", "1"): True,
        ("mmlu_anatomy", "0"): False,
        ("mmlu_anatomy", "1"): True,
    }


def test_directory_is_searched_recursively(tmp_path: Path) -> None:
    nested = tmp_path / "out" / "meta-llama__Llama-3.1-8B"
    write_lm_eval_samples(nested, "mmlu_anatomy", [1, 0])
    write_lm_eval_samples(nested, "bbh_cot_fewshot_navigate", [1], kind="generate_until")
    (nested / "results_2024-05-13T16-13-22.123456.json").write_text("{}", encoding="utf-8")
    table = read_lm_eval(tmp_path, model="m")
    assert sorted(set(table["benchmark"].to_pylist())) == [
        "bbh_cot_fewshot_navigate",
        "mmlu_anatomy",
    ]
    assert table.num_rows == 3


@pytest.mark.parametrize(
    ("name", "task"),
    [
        ("samples_mmlu_anatomy_2024-05-13T16-13-22.123456.jsonl", "mmlu_anatomy"),
        (
            "samples_leaderboard_bbh_navigate_2024-06-26T10-02-09.371427.jsonl",
            "leaderboard_bbh_navigate",
        ),
        ("samples_arc_easy_2024-05-13T16-13-22.jsonl", "arc_easy"),
        ("samples_gsm8k_cot_2025-01-02T03-04-05.000001.jsonl", "gsm8k_cot"),
        ("results_2024-05-13T16-13-22.123456.json", None),
    ],
)
def test_task_from_filename(name: str, task: str | None) -> None:
    assert task_from_filename(name) == task


def test_malformed_line(tmp_path: Path) -> None:
    path = write_lm_eval_samples(tmp_path, "mmlu_anatomy", [1, 0, 1])
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1][: len(lines[1]) // 2]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"{path.name}: line 2 is not valid JSON"):
        read_lm_eval(path, model="m")


def test_non_utf8(tmp_path: Path) -> None:
    path = write_lm_eval_samples(tmp_path, "mmlu_anatomy", [1, 0])
    path.write_bytes(path.read_bytes().replace(b"pituitary", b"pituit\xe4ry"))
    with pytest.raises(InputError, match=rf"{path.name}: line 1 is not UTF-8"):
        read_lm_eval(tmp_path, model="m")


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no lm-eval samples files found.*samples_<task>_"):
        read_lm_eval(tmp_path, model="m")


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or directory"):
        read_lm_eval(tmp_path / "nope", model="m")


def test_file_with_another_name(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text("{}\n", encoding="utf-8")
    with pytest.raises(InputError, match="not an lm-eval samples file name"):
        read_lm_eval(path, model="m")


def test_missing_doc_id(tmp_path: Path) -> None:
    path = write_lm_eval_samples(tmp_path, "mmlu_anatomy", [1, 0])
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    del lines[1]["doc_id"]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with pytest.raises(InputError, match=rf"{path.name}:2: the sample has no doc_id"):
        read_lm_eval(path, model="m")


def test_two_runs_of_one_task_refused(tmp_path: Path) -> None:
    write_lm_eval_samples(tmp_path, "mmlu_anatomy", [1, 0])
    write_lm_eval_samples(
        tmp_path / "later", "mmlu_anatomy", [1, 1], timestamp="2024-05-14T09-00-00.000001"
    )
    with pytest.raises(InputError, match="more than one samples file"):
        read_lm_eval(tmp_path, model="m")


def test_blank_lines_skipped_and_empty_file_refused(tmp_path: Path) -> None:
    path = write_lm_eval_samples(tmp_path, "mmlu_anatomy", [1, 0])
    path.write_text(path.read_text(encoding="utf-8") + "\n\n", encoding="utf-8")
    assert read_lm_eval(path, model="m").num_rows == 2
    path.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="contain no samples"):
        read_lm_eval(path, model="m")
