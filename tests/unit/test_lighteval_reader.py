"""lighteval details reader: parquet in lighteval's v0.10 (flat) and v0.11+ (nested) layouts."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from forgetmap.demo.layouts.common import MC_DOCS
from forgetmap.demo.layouts.lighteval import write_lighteval_details
from forgetmap.importers.common import NORMALIZED_SCHEMA, InputError, validate_normalized
from forgetmap.importers.lighteval.reader import read_lighteval
from forgetmap.importers.lighteval.runs import task_from_filename

from tests.support.prompts import whole_prompts

TASK = "leaderboard|mmlu:anatomy|5"
CORRECT = [1, 0, 1, 1, 0, 0]
SCHEMAS = ["nested", "flat"]


@pytest.mark.parametrize("schema", SCHEMAS)
@pytest.mark.parametrize("stringify", [False, True])
def test_multiple_choice_rows(tmp_path: Path, schema: str, stringify: bool) -> None:
    path = write_lighteval_details(tmp_path, TASK, CORRECT, schema=schema, stringify=stringify)
    table = read_lighteval(path, model="base", seed=2)

    # name columns may come dictionary-encoded (see forgetmap.importers.common)
    assert table.cast(NORMALIZED_SCHEMA).schema == NORMALIZED_SCHEMA.remove_metadata()
    validate_normalized(table, source="test")
    assert table.num_rows == len(CORRECT)
    assert table["correct"].to_pylist() == [bool(c) for c in CORRECT]
    assert set(table["benchmark"].to_pylist()) == {TASK}
    assert set(table["model"].to_pylist()) == {"base"}
    assert set(table["seed"].to_pylist()) == {2}
    assert set(table["num_choices"].to_pylist()) == {4}
    first = table.to_pylist()[0]
    first["prompt"] = whole_prompts(table)[0].as_py()  # the reader keeps each file's template apart
    assert json.loads(first["choices"]) == [" A", " B", " C", " D"]
    assert first["gold"] == f" {'ABCD'[MC_DOCS[0].answer]}"
    assert MC_DOCS[0].question in first["prompt"]
    assert first["prompt"].endswith("Answer:")
    assert len(json.loads(first["response"])) == 4
    for row, c in zip(table.to_pylist(), CORRECT, strict=True):
        gold_letter = row["gold"].strip()
        assert (" ABCD"[int(row["prediction"]) + 1] == gold_letter) == bool(c)
    if schema == "nested":
        assert table["sample_id"].to_pylist() == [str(i) for i in range(len(CORRECT))]
    else:
        assert all(s.startswith("q:") and len(s) == 18 for s in table["sample_id"].to_pylist())


def test_flat_reads_the_real_column_set(tmp_path: Path) -> None:
    path = write_lighteval_details(tmp_path, TASK, [1], schema="flat")
    assert pq.read_schema(path).names == sorted(
        [
            "example",
            "instruction",
            "full_prompt",
            "num_effective_few_shots",
            "num_asked_few_shots",
            "predictions",
            "prediction_logits",
            "input_tokens",
            "cont_tokens",
            "truncated",
            "padded",
            "gold",
            "pred_logits",
            "choices",
            "gold_index",
            "metrics",
            "specifics",
        ]
    )
    nested = write_lighteval_details(tmp_path / "n", TASK, [1], schema="nested")
    assert pq.read_schema(nested).names == ["doc", "metric", "model_response"]


@pytest.mark.parametrize("schema", SCHEMAS)
@pytest.mark.parametrize("stringify", [False, True])
def test_generative_rows(tmp_path: Path, schema: str, stringify: bool) -> None:
    path = write_lighteval_details(
        tmp_path,
        "lighteval|gsm8k|0",
        [1, 0, 1],
        schema=schema,
        kind="generative",
        stringify=stringify,
    )
    table = read_lighteval(path, model="m", seed=0)
    validate_normalized(table, source="test")
    assert table["correct"].to_pylist() == [True, False, True]
    assert table["num_choices"].to_pylist() == [None, None, None]
    first = table.to_pylist()[0]
    assert first["gold"] == "72"
    assert first["response"].endswith("the final answer is 72.")
    # the prediction is what the extractive metric took out of the text, as it scored it
    # (the fixture's texts end "the final answer is <n>.")
    said = [text.rsplit(" ", 1)[1].rstrip(".") for text in table["response"].to_pylist()]
    assert table["prediction"].to_pylist() == said
    assert first["prediction"] == "72"
    assert whole_prompts(table)[0].as_py().startswith("Question: Natalia sold clips")


@pytest.mark.parametrize("schema", SCHEMAS)
def test_default_metric_order(tmp_path: Path, schema: str) -> None:
    path = write_lighteval_details(
        tmp_path,
        TASK,
        [1, 1, 0],
        schema=schema,
        metric="extractive_match",
        extra_metrics={"acc": [0, 0, 1], "acc_norm": [1, 1, 1]},
    )
    assert read_lighteval(path, model="m", seed=0)["correct"].to_pylist() == [False, False, True]


def test_em_is_a_default(tmp_path: Path) -> None:
    path = write_lighteval_details(
        tmp_path,
        "lighteval|gsm8k|0",
        [0, 1],
        kind="generative",
        metric="em",
        extra_metrics={"qem": [1, 1]},
    )
    assert read_lighteval(path, model="m", seed=0)["correct"].to_pylist() == [False, True]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_metric_option(tmp_path: Path, schema: str) -> None:
    path = write_lighteval_details(
        tmp_path, TASK, [1, 1, 0], schema=schema, extra_metrics={"acc_norm": [0, 1, 1]}
    )
    table = read_lighteval(path, model="m", seed=0, metric="acc_norm")
    assert table["correct"].to_pylist() == [False, True, True]
    with pytest.raises(InputError, match=r"'pqem'.*metrics present: acc, acc_norm"):
        read_lighteval(path, model="m", seed=0, metric="pqem")


def test_no_default_metric_lists_present_ones(tmp_path: Path) -> None:
    path = write_lighteval_details(
        tmp_path,
        "lighteval|gsm8k|0",
        [1, 0],
        kind="generative",
        metric="maj@4",
        extra_metrics={"qem": [1, 0]},
    )
    with pytest.raises(InputError, match=r"metrics present: maj@4, qem.*--metric"):
        read_lighteval(path, model="m", seed=0)


@pytest.mark.parametrize("schema", SCHEMAS)
def test_non_binary_refused(tmp_path: Path, schema: str) -> None:
    path = write_lighteval_details(
        tmp_path, TASK, [1, 0, 0.25], schema=schema, extra_metrics={"acc_norm": [1, 0, 1]}
    )
    with pytest.raises(InputError) as info:
        read_lighteval(path, model="m", seed=0)
    message = str(info.value)
    assert f"{path}:row 3" in message
    assert "'acc'" in message and "0.25" in message
    assert "non-binary" in message and "--metric" in message and "acc_norm" in message
    assert read_lighteval(path, model="m", seed=0, metric="acc_norm").num_rows == 3


@pytest.mark.parametrize("schema", SCHEMAS)
def test_sample_ids_stable_under_shuffling(tmp_path: Path, schema: str) -> None:
    correct = [1, 0, 1, 0, 0, 1]  # one per distinct MMLU doc
    a = write_lighteval_details(tmp_path / "a", TASK, correct, schema=schema, with_ids=False)
    b = write_lighteval_details(
        tmp_path / "b", TASK, correct, schema=schema, with_ids=False, shuffle_seed=7
    )
    ta, tb = read_lighteval(a, model="m", seed=0), read_lighteval(b, model="m", seed=0)
    assert whole_prompts(ta).to_pylist() != whole_prompts(tb).to_pylist()  # really reordered
    ids_a = dict(zip(ta["sample_id"].to_pylist(), ta["correct"].to_pylist(), strict=True))
    ids_b = dict(zip(tb["sample_id"].to_pylist(), tb["correct"].to_pylist(), strict=True))
    assert ids_a == ids_b
    assert len(ids_a) == len(correct)
    # the id is the hash of the question, options and gold, not the row number
    row = ta.to_pylist()[0] | {"prompt": whole_prompts(ta)[0].as_py()}
    assert all(not s.isdigit() for s in ids_a)
    rows_b = {
        r["sample_id"]: r | {"prompt": p}
        for r, p in zip(tb.to_pylist(), whole_prompts(tb).to_pylist(), strict=True)
    }
    assert rows_b[row["sample_id"]]["prompt"] == row["prompt"]


def test_nested_ids_survive_shuffling(tmp_path: Path) -> None:
    path = write_lighteval_details(tmp_path, TASK, CORRECT, shuffle_seed=3)
    got = dict(
        zip(
            (t := read_lighteval(path, model="m", seed=0))["sample_id"].to_pylist(),
            t["correct"].to_pylist(),
            strict=True,
        )
    )
    assert got == {str(i): bool(c) for i, c in enumerate(CORRECT)}


def test_directory_search_and_task_names(tmp_path: Path) -> None:
    out = tmp_path / "details" / "meta-llama" / "Llama-3.1-8B" / "2024-05-13T16-13-22.123456"
    write_lighteval_details(out, TASK, [1, 0])
    write_lighteval_details(out, "lighteval|gsm8k|0", [1], kind="generative", schema="flat")
    (tmp_path / "results_2024-05-13T16-13-22.123456.json").write_text("{}", encoding="utf-8")
    table = read_lighteval(tmp_path, model="m", seed=0)
    assert sorted(set(table["benchmark"].to_pylist())) == [
        "leaderboard|mmlu:anatomy|5",
        "lighteval|gsm8k|0",
    ]
    assert table.num_rows == 3


@pytest.mark.parametrize(
    ("name", "task"),
    [
        (
            "details_leaderboard|mmlu:anatomy|5_2024-05-13T16-13-22.123456.parquet",
            "leaderboard|mmlu:anatomy|5",
        ),
        (
            "details_harness|hendrycksTest-us_foreign_policy|5_2023-09-03T10-57-04.203304.parquet",
            "harness|hendrycksTest-us_foreign_policy|5",
        ),
        ("details_lighteval|gsm8k|0_2025-01-02T03-04-05.parquet", "lighteval|gsm8k|0"),
        ("results_2024-05-13T16-13-22.123456.parquet", None),
    ],
)
def test_task_from_filename(name: str, task: str | None) -> None:
    assert task_from_filename(name) == task


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no lighteval details files found.*details_<task>_"):
        read_lighteval(tmp_path, model="m", seed=0)


def test_not_parquet(tmp_path: Path) -> None:
    path = tmp_path / "details_leaderboard|arc:challenge|25_2024-05-13T16-13-22.123456.parquet"
    path.write_bytes(b"not a parquet file at all")
    with pytest.raises(InputError, match="not a readable parquet file"):
        read_lighteval(path, model="m", seed=0)


def test_wrong_columns(tmp_path: Path) -> None:
    import pyarrow as pa

    path = tmp_path / "details_leaderboard|arc:challenge|25_2024-05-13T16-13-22.123456.parquet"
    pq.write_table(pa.table({"question": ["q"], "score": [1.0]}), path)
    with pytest.raises(InputError, match=r"not a lighteval details table \(columns: question"):
        read_lighteval(path, model="m", seed=0)


def test_triviaqa_style_aliases_are_not_options(tmp_path: Path) -> None:
    """Generative docs whose choices are all gold answers have no options to guess among."""
    import pyarrow as pa

    path = write_lighteval_details(tmp_path, "lighteval|triviaqa|0", [1, 0], kind="generative")
    table = pq.read_table(path).to_pylist()
    for row in table:
        row["doc"]["choices"] = ["Paris", "paris", "Paris, France"]
        row["doc"]["gold_index"] = [0, 1, 2]
    pq.write_table(pa.Table.from_pylist(table), path)
    got = read_lighteval(path, model="m", seed=0)
    assert got["num_choices"].to_pylist() == [None, None]
    assert json.loads(got["gold"][0].as_py()) == ["Paris", "paris", "Paris, France"]
