"""lighteval log-likelihood details (MMLU-style multiple choice: a score per choice, no generated
text) are read with Arrow kernels, and give what the row-by-row reader gives."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from forgetmap.demo.layouts.lighteval import write_lighteval_details
from forgetmap.importers.lighteval import files as lighteval_files
from forgetmap.importers.lighteval import uniform
from forgetmap.importers.lighteval.reader import read_lighteval
from forgetmap.importers.lighteval.rows import row_columns

TASK = "leaderboard|mmlu:anatomy|5"
CORRECT = [1, 0, 1, 1, 0, 0, 1, 0]
SCHEMAS = ["flat", "nested"]


def _stringified(path: Path, out: Path) -> Path:
    """The same file with every cell stored as ``str(value)`` (lighteval's fallback when rows do
    not convert to Arrow): only the row reader reads those."""
    rows = pq.read_table(path).to_pylist()
    table = pa.Table.from_pylist([{k: str(v) for k, v in row.items()} for row in rows])
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out / path.name)
    return out / path.name


def _vectorized(path: Path) -> pa.Table:
    """``_uniform`` of the file, raising if it would go row by row."""
    table, nested = lighteval_files.read_columns(path)
    return uniform.uniform_table(table, nested, None)


@pytest.mark.parametrize("schema", SCHEMAS)
def test_log_likelihood_rows_read_by_kernels_equal_the_row_reader(tmp_path, schema):
    path = write_lighteval_details(tmp_path / "arrow", TASK, CORRECT, schema=schema, shuffle_seed=3)
    _vectorized(path)  # no _SlowPath: the file is read with Arrow kernels
    by_kernels = read_lighteval(path, model="m", seed=0)
    by_rows = read_lighteval(_stringified(path, tmp_path / "text"), model="m", seed=0)
    assert by_kernels.to_pylist() == by_rows.to_pylist()
    for row in by_kernels.to_pylist():
        scores = json.loads(row["response"])
        assert len(scores) == 4
        assert row["prediction"] == str(scores.index(max(scores)))
    assert sorted(by_kernels["correct"].to_pylist()) == sorted(bool(c) for c in CORRECT)


def _flat_with_scores(tmp_path: Path, scores: list[list[float]]) -> Path:
    """A v0.10 file whose rows carry these per-choice log-likelihoods ((logprob, is_greedy))."""
    path = write_lighteval_details(tmp_path, TASK, [1] * len(scores), schema="flat")
    rows = pq.read_table(path).to_pylist()
    for row, lls in zip(rows, scores, strict=True):
        row["predictions"] = [[ll, 0.0] for ll in lls]
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)
    return path


def test_ties_infinities_and_the_text_written(tmp_path):
    """Hand-computed: the first of equal scores wins (as Python's max), -inf is a score, and the
    response is the scores as JSON that json.loads reads back exactly."""
    scores = [
        [-1.5, float("-inf"), -1.5, -3.0],
        [-0.25, -0.125, -7.0, -1e-05],
        [float("-inf")] * 4,
        [-2.0, -1.0, -1.0, -4.5],
    ]
    path = _flat_with_scores(tmp_path, scores)
    uniform = _vectorized(path)
    assert [t[0] for t in uniform["post"].to_pylist()] == ["0", "3", "0", "1"]
    texts = [t[0] for t in uniform["texts"].to_pylist()]
    assert texts == [
        "[-1.5,-Infinity,-1.5,-3]",
        "[-0.25,-0.125,-7,-0.00001]",
        "[-Infinity,-Infinity,-Infinity,-Infinity]",
        "[-2,-1,-1,-4.5]",
    ]
    assert [json.loads(t) for t in texts] == scores
    # the row reader writes the same texts and predictions
    table, nested = lighteval_files.read_columns(path)
    rows = row_columns(table, nested, None, path)
    assert rows["response"].to_pylist() == texts
    assert rows["prediction"].to_pylist() == ["0", "3", "0", "1"]


def test_a_nan_score_is_left_to_the_row_reader(tmp_path):
    """Python's max over a NaN depends on where it stands: the row reader decides such a file."""
    path = _flat_with_scores(tmp_path, [[-1.0, float("nan"), -0.5, -2.0], [-1.0, -2.0, -3.0, -4.0]])
    with pytest.raises(uniform.SlowPath):
        _vectorized(path)
    table = read_lighteval(path, model="m", seed=0)
    assert table["prediction"].to_pylist()[1] == "0"


def test_scores_that_do_not_match_the_choices_go_row_by_row(tmp_path):
    """v0.10: a row whose scores are not one per choice is not a log-likelihood row to the row
    reader (its first prediction is its text); the file goes row by row and reads as before."""
    path = _flat_with_scores(tmp_path, [[-1.0, -2.0, -3.0], [-1.0, -2.0, -3.0, -0.5]])
    with pytest.raises(uniform.SlowPath):
        _vectorized(path)
    table = read_lighteval(path, model="m", seed=0)
    assert table["prediction"].to_pylist() == ["[-1.0, 0.0]", "3"]


def test_nested_rows_without_scores_have_no_prediction(tmp_path):
    """v0.11+: a row with neither text nor log-likelihoods has no response and no prediction,
    as the row reader has it."""
    path = write_lighteval_details(tmp_path, TASK, [1, 0, 1], schema="nested")
    rows = pq.read_table(path).to_pylist()
    rows[1]["model_response"]["logprobs"] = []
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)
    uniform = _vectorized(path)
    assert [t[0] for t in uniform["texts"].to_pylist()][1] is None
    assert [t[0] for t in uniform["post"].to_pylist()][1] is None
    table, nested = lighteval_files.read_columns(path)
    rows_read = row_columns(table, nested, None, path)
    assert rows_read["prediction"].to_pylist() == [t[0] for t in uniform["post"].to_pylist()]
    assert rows_read["response"].to_pylist() == [t[0] for t in uniform["texts"].to_pylist()]
