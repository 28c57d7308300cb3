"""lm-eval 0.4.0-0.4.2 output: ``<model_args>_<task>.jsonl`` files holding one JSON array each,
beside the run's ``results.json`` (app/importers/lm_eval/legacy.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from forgetmap.demo.layouts.lm_eval import write_lm_eval_results, write_lm_eval_samples
from forgetmap.importers.common import InputError
from forgetmap.importers.lm_eval.legacy import legacy_tasks
from forgetmap.importers.lm_eval.reader import read_lm_eval

MODEL_ARGS = "pretrained=EleutherAI/pythia-160m,dtype=float"
PREFIX = "pretrained__EleutherAI__pythia-160m,dtype__float"
MMLU = [1, 0, 1, 1, 0]
GSM8K = {"strict-match": [1, 0, 0], "flexible-extract": [1, 1, 0]}


def write_run(out: Path, *, results_name: str | None = None) -> Path:
    """What ``lm_eval --log_samples --output_path OUT`` 0.4.2 leaves in OUT."""
    write_lm_eval_samples(out, "mmlu_anatomy", MMLU, legacy_model_args=MODEL_ARGS)
    write_lm_eval_samples(out, "gsm8k", GSM8K, kind="generate_until", legacy_model_args=MODEL_ARGS)
    results = write_lm_eval_results(
        out,
        {"gsm8k": list(GSM8K), "mmlu_anatomy": None},
        legacy_model_args=MODEL_ARGS,
    )
    if results_name is not None:
        results = results.rename(out / results_name)
    return results


def task_rows(table: pa.Table, task: str) -> list[dict]:
    rows = table.filter(pc.equal(table["benchmark"], task)).to_pylist()
    return sorted(rows, key=lambda r: int(r["sample_id"]))


def test_the_fixture_writes_one_json_array_per_task(tmp_path: Path) -> None:
    write_run(tmp_path)
    path = tmp_path / f"{PREFIX}_gsm8k.jsonl"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("[\n  {")
    samples = json.loads(text)
    assert [s["doc_id"] for s in samples] == [0, 1, 2, 0, 1, 2]
    assert not {"filter", "metrics", "doc_hash"} & set(samples[0])
    assert isinstance(samples[0]["arguments"][0], list)


def test_a_run_folder_imports_every_task(tmp_path: Path) -> None:
    write_run(tmp_path / "out")
    told = []
    table = read_lm_eval(tmp_path, model="m", on_filter=lambda *a: told.append(a))
    mmlu = task_rows(table, "mmlu_anatomy")
    assert [r["correct"] for r in mmlu] == [bool(v) for v in MMLU]
    assert {r["num_choices"] for r in mmlu} == {4}
    assert json.loads(mmlu[0]["choices"]) == [" A", " B", " C", " D"]
    assert all((r["prediction"] == r["gold"]) == r["correct"] for r in mmlu)
    assert len(json.loads(mmlu[0]["response"])) == 4
    assert mmlu[0]["doc_hash"] is None  # 0.4.2 wrote no hashes
    gsm8k = task_rows(table, "gsm8k")
    assert [r["correct"] for r in gsm8k] == [True, True, False]  # flexible-extract
    assert told == [("gsm8k", "flexible-extract", ["strict-match", "flexible-extract"], "default")]


def test_the_same_samples_read_alike_in_both_layouts(tmp_path: Path) -> None:
    write_run(tmp_path / "old")
    new = tmp_path / "new"
    write_lm_eval_samples(new, "mmlu_anatomy", MMLU)
    write_lm_eval_samples(new, "gsm8k", GSM8K, kind="generate_until")
    for option in (None, "strict-match"):
        old_table = read_lm_eval(tmp_path / "old", model="m", filter_name=option)
        new_table = read_lm_eval(new, model="m", filter_name=option)
        for task in ("mmlu_anatomy", "gsm8k"):
            old_rows, new_rows = task_rows(old_table, task), task_rows(new_table, task)
            for row in (*old_rows, *new_rows):
                row.pop("doc_hash")
            assert old_rows == new_rows


@pytest.mark.parametrize("option", ["strict-match", ["gsm8k=strict-match"]])
def test_filter_option_selects(tmp_path: Path, option) -> None:
    write_run(tmp_path)
    table = read_lm_eval(tmp_path, model="m", filter_name=option)
    assert [r["correct"] for r in task_rows(table, "gsm8k")] == [True, False, False]


def test_a_samples_file_or_the_results_file_given_alone(tmp_path: Path) -> None:
    results = write_run(tmp_path)
    one = read_lm_eval(tmp_path / f"{PREFIX}_mmlu_anatomy.jsonl", model="m")
    assert set(one["benchmark"].to_pylist()) == {"mmlu_anatomy"}
    assert one.num_rows == len(MMLU)
    both = read_lm_eval(results, model="m")
    assert sorted(set(both["benchmark"].to_pylist())) == ["gsm8k", "mmlu_anatomy"]


def test_a_results_file_named_by_output_path(tmp_path: Path) -> None:
    """``--output_path OUT/pythia.json`` writes the results there, the samples beside it."""
    write_run(tmp_path, results_name="pythia.json")
    found = legacy_tasks(tmp_path)
    assert [(t.task, t.results.name) for t in found] == [
        ("gsm8k", "pythia.json"),
        ("mmlu_anatomy", "pythia.json"),
    ]


def test_samples_without_their_results_file_are_not_guessed(tmp_path: Path) -> None:
    results = write_run(tmp_path)
    results.unlink()
    with pytest.raises(InputError, match=r"no lm-eval samples files found.*results\.json"):
        read_lm_eval(tmp_path, model="m")


def test_a_broken_array_names_the_file(tmp_path: Path) -> None:
    write_run(tmp_path)
    path = tmp_path / f"{PREFIX}_mmlu_anatomy.jsonl"
    path.write_text(path.read_text(encoding="utf-8")[:-40], encoding="utf-8")
    with pytest.raises(InputError, match=rf"{path.name}: not valid JSON .*one JSON array"):
        read_lm_eval(tmp_path, model="m")
    path.write_text('[{"doc_id": 0}, 7]', encoding="utf-8")
    with pytest.raises(InputError, match=rf"{path.name}:2: sample 2 is not a JSON object"):
        read_lm_eval(tmp_path, model="m")


def test_a_task_in_both_layouts_is_refused(tmp_path: Path) -> None:
    write_run(tmp_path)
    write_lm_eval_samples(tmp_path, "mmlu_anatomy", MMLU)
    with pytest.raises(InputError, match=r"task 'mmlu_anatomy' has more than one samples file"):
        read_lm_eval(tmp_path, model="m")


def test_other_json_files_are_not_results(tmp_path: Path) -> None:
    write_run(tmp_path)
    (tmp_path / "notes.json").write_text('{"config": 1}', encoding="utf-8")
    (tmp_path / "list.json").write_text("[1, 2]", encoding="utf-8")
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    assert [t.task for t in legacy_tasks(tmp_path)] == ["gsm8k", "mmlu_anatomy"]


def test_a_results_file_with_a_byte_order_mark_is_found(tmp_path: Path) -> None:
    """Found through the same reader that names filters (``read_results``): a results file
    saved with a byte-order mark is a results file to both."""
    results = write_run(tmp_path)
    results.write_bytes(b"\xef\xbb\xbf" + results.read_bytes())
    assert [t.task for t in legacy_tasks(tmp_path)] == ["gsm8k", "mmlu_anatomy"]
    table = read_lm_eval(tmp_path, model="m", filter_name="gsm8k=strict-match")
    assert len(task_rows(table, "gsm8k")) == 3
