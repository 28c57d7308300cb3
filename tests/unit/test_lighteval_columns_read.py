"""What the lighteval reader decodes of a details file: a flat file's ``full_prompt`` stored as the
same bytes as its ``example`` (a base model's prompt is its query) once, any difference in the
stored bytes both; of the nested layout's structs only the fields it uses (no token ids, few-shot
documents or logits), with the same rows as a whole read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from forgetmap.demo.layouts.lighteval import write_lighteval_details
from forgetmap.demo.layouts.paper import (
    DETAILS_SCHEMA,
    detail_row,
    details_table,
    make_items,
    write_run,
)
from forgetmap.importers.lighteval import files as lighteval_files
from forgetmap.importers.lighteval.reader import read_lighteval

TASK = "community|piqa_reasoning_letter:main|0"


def _details(path: Path, style: str, n: int = 40, **write) -> list[dict]:
    items = make_items(TASK, n, options=3)
    rows = [detail_row(item, i % 2 == 0, style=style, fewshot=0) for i, item in enumerate(items)]
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(details_table(rows), path, **write)
    return rows


def _alike(path: Path) -> bool:
    parquet = pq.ParquetFile(path)
    return lighteval_files.stored_alike(
        parquet, path, "example", "full_prompt", arrow=parquet.schema_arrow
    )


def test_a_base_models_prompts_are_decoded_once_and_read_as_written(tmp_path):
    path = tmp_path / "base.parquet"
    rows = _details(path, "base", row_group_size=15)  # three row groups, each compared
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    assert _alike(path)
    table, nested = lighteval_files.read_columns(path)
    assert not nested
    assert table["full_prompt"].to_pylist() == [r["full_prompt"] for r in rows]
    assert table["example"].to_pylist() == [r["example"] for r in rows]


def test_a_chat_models_prompts_differ_from_its_queries_and_both_are_read(tmp_path):
    path = tmp_path / "chat.parquet"
    rows = _details(path, "chat")
    assert not _alike(path)
    table, _ = lighteval_files.read_columns(path)
    assert table["full_prompt"].to_pylist() == [r["full_prompt"] for r in rows]
    assert table["full_prompt"].to_pylist() != table["example"].to_pylist()


def test_one_prompt_differing_by_one_character_keeps_its_own_text(tmp_path):
    path = tmp_path / "base.parquet"
    items = make_items(TASK, 30, options=3)
    rows = [detail_row(item, True, style="base", fewshot=0) for item in items]
    # same length, same compressed size, other bytes: only comparing the bytes tells them apart
    changed = rows[17]["full_prompt"]
    rows[17]["full_prompt"] = changed[:-1] + ("?" if changed[-1] != "?" else "!")
    pq.write_table(details_table(rows), path, compression="none", use_dictionary=False)
    chunks = [pq.ParquetFile(path).metadata.row_group(0).column(i) for i in (2, 3)]
    assert [c.path_in_schema for c in chunks] == ["example", "full_prompt"]
    assert chunks[0].total_compressed_size == chunks[1].total_compressed_size
    assert not _alike(path)
    table, _ = lighteval_files.read_columns(path)
    assert table["full_prompt"][17].as_py() == rows[17]["full_prompt"]
    assert table["example"][17].as_py() == rows[17]["example"]


def test_columns_of_other_types_or_shapes_are_never_twins(tmp_path):
    path = tmp_path / "large.parquet"
    rows = _details(tmp_path / "plain.parquet", "base")
    schema = DETAILS_SCHEMA.set(
        DETAILS_SCHEMA.get_field_index("full_prompt"), pa.field("full_prompt", pa.large_string())
    )
    pq.write_table(details_table(rows, schema), path)
    assert not _alike(path)
    assert lighteval_files.read_columns(path)[0]["full_prompt"].to_pylist() == [
        r["full_prompt"] for r in rows
    ]
    # a nested column has several leaves: not compared
    nested = pq.ParquetFile(path)
    assert not lighteval_files.stored_alike(
        nested, path, "example", "metrics", arrow=nested.schema_arrow
    )


def test_an_import_reads_the_same_rows_with_and_without_the_twin_shortcut(tmp_path, monkeypatch):
    items = {TASK: make_items(TASK, 25, options=3)}
    for seed in range(2):
        write_run(
            tmp_path / "out",
            "org/base",
            f"2025-07-01T10-0{seed}-00.000001",
            {TASK: (items[TASK], [(i + seed) % 3 == 0 for i in range(25)])},
            style="base",
            seed=seed,
            shuffle_seed=seed,
        )
    folder = tmp_path / "out" / "details" / "org" / "base"
    assert all(_alike(f) for f in folder.rglob("*.parquet"))
    shortcut = read_lighteval(folder, model="base")
    monkeypatch.setattr(lighteval_files, "stored_alike", lambda *args, **kwargs: False)
    decoded_twice = read_lighteval(folder, model="base")
    assert shortcut.equals(decoded_twice)


@pytest.mark.parametrize("kind", ["multiple_choice", "generative"])
def test_the_nested_layout_decodes_only_the_fields_the_reader_uses(tmp_path, monkeypatch, kind):
    folder = tmp_path / "run"
    path = write_lighteval_details(
        folder, "lighteval|mmlu:anatomy|0", [1, 0, 1, 1, 0, 0, 1], kind=kind, shuffle_seed=3
    )
    stored = pq.read_schema(path)
    assert {"input_tokens", "fewshot_samples"} <= {
        *stored.field("model_response").type.names,
        *stored.field("doc").type.names,
    }
    table, nested = lighteval_files.read_columns(path)
    assert nested
    names = table["doc"].type.names
    assert [name for name in names if name != "specific"] == [
        "query",
        "choices",
        "gold_index",
        "id",
    ]
    if kind == "generative":  # of the specifics an extractive metric left, only its answers
        assert table["doc"].type.field("specific").type.names == ["extracted_predictions"]
    else:
        assert "specific" not in names  # none left: the column is null
    assert table["model_response"].type.names == [
        "input",
        "text",
        "text_post_processed",
        "logprobs",
        "truncated_tokens_count",
    ]
    assert table["metric"].type == stored.field("metric").type  # metrics are read whole
    selected = read_lighteval(folder, model="m", seed=0)
    monkeypatch.setattr(lighteval_files, "used_fields", lambda schema, column: [column])
    assert lighteval_files.read_columns(path)[0]["doc"].type == stored.field("doc").type
    assert selected.equals(read_lighteval(folder, model="m", seed=0))


def test_of_a_flat_files_specifics_only_the_extracted_answers_are_read(tmp_path):
    path = write_lighteval_details(
        tmp_path, "lighteval|gsm8k|0", [1, 0, 1], schema="flat", kind="generative"
    )
    assert pq.read_schema(path).field("specifics").type.names == [
        "extracted_predictions",
        "extracted_golds",
    ]
    table, nested = lighteval_files.read_columns(path)
    assert not nested
    assert table["specifics"].type.names == ["extracted_predictions"]
    # a log-likelihood task's specifics hold nothing (null): not read at all
    loglik = write_lighteval_details(
        tmp_path / "mc", "lighteval|mmlu:anatomy|0", [1, 0], schema="flat"
    )
    assert "specifics" not in lighteval_files.read_columns(loglik)[0].column_names


def test_a_nested_column_stored_as_text_is_read_whole(tmp_path):
    path = write_lighteval_details(tmp_path, "lighteval|mmlu:anatomy|0", [1, 0, 1], stringify=True)
    table, nested = lighteval_files.read_columns(path)
    assert nested and pa.types.is_string(table["doc"].type)
    assert read_lighteval(path, model="m", seed=0)["correct"].to_pylist() == [True, False, True]


def _harness_file(path: Path, **columns) -> Path:
    base = {
        "example": ["q0", "q1"],
        "predictions": [[-1.0, -2.0], [-3.0, -0.5]],
        "choices": [["a", "b"], ["a", "b"]],
        "gold": [0, 1],
    }
    pq.write_table(pa.table({**base, **columns}), path)
    return path


def test_the_leaderboard_v1_harness_columns_read_as_the_flat_layout(tmp_path):
    # DROP's f1 was stored as text; em as numbers; a metric column that holds no numbers is left
    file = _harness_file(tmp_path / "d.parquet", em=[1, 0], f1=["1.0", "0.25"], acc=["x", "y"])
    table, nested = lighteval_files.read_columns(file)
    assert not nested
    assert table["metrics"].to_pylist() == [{"em": 1, "f1": 1.0}, {"em": 0, "f1": 0.25}]
    assert table["gold_index"].to_pylist() == [[0], [1]]
    assert table["example"].to_pylist() == ["q0", "q1"]
    assert "gold" not in table.column_names  # an index, not v0.10's gold texts


def test_a_leaderboard_v1_file_without_a_numeric_metric_is_one_clear_error(tmp_path):
    file = _harness_file(tmp_path / "d.parquet", acc=["x", "y"])
    with pytest.raises(
        lighteval_files.InputError, match=r"d\.parquet: no per-sample metric of acc"
    ):
        lighteval_files.read_columns(file)
