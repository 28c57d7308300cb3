"""Bad input: a one-line error naming the problem, and the database content unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.cli import cli_both_ways

# every test with the owner absent, then through one real serve that owns the module's database:
# each test imports GOOD (a no-op the second time) and checks that a bad file changes nothing
cli = cli_both_ways(shared_owner=True)

GOOD = "model,benchmark,sample_id,seed,correct\nm,piqa,1,0,1\nm,piqa,2,0,0\n"


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


CASES = {
    "missing_column": (
        "bad.csv",
        "model,benchmark,correct\nm,piqa,1\n",
        "missing column sample_id",
    ),
    "missing_model_column": (
        "bad.csv",
        "benchmark,sample_id,correct\npiqa,1,1\n",
        "missing column model (or pass --model NAME)",
    ),
    "non_binary_correct": (
        "bad.csv",
        "model,benchmark,sample_id,correct\nm,piqa,1,1\nm,piqa,2,0.5\n",
        "row 2: correct must be 0/1 or true/false, got '0.5'",
    ),
    "non_binary_word": (
        "bad.csv",
        "model,benchmark,sample_id,correct\nm,piqa,1,yes\n",
        "got 'yes'",
    ),
    "empty_correct": (
        "bad.csv",
        "model,benchmark,sample_id,correct\nm,piqa,1,\n",
        "correct must be 0/1 or true/false",
    ),
    "duplicate_key": (
        "bad.csv",
        "model,benchmark,sample_id,seed,correct\nm,piqa,1,0,1\nm,piqa,1,0,0\n",
        "duplicate (benchmark, sample_id, seed)",
    ),
    "duplicate_after_canonical_names": (
        "bad.csv",
        "model,benchmark,sample_id,correct\nm,mmlu_anatomy,1,1\nm,mmlu:anatomy,1,1\n",
        "benchmark='mmlu:anatomy' sample_id='1' seed=0 appears 2 times",
    ),
    "non_utf8": (
        "bad.csv",
        b"model,benchmark,sample_id,correct,prompt\nm,piqa,1,1,caf" + b"\xe9\xff\n",
        "not UTF-8",
    ),
    "non_utf8_header": ("bad.csv", b"mod\xffel,benchmark\n", "not UTF-8"),
    "empty_file": ("bad.csv", "", "the file is empty"),
    "header_only": ("bad.csv", "model,benchmark,sample_id,correct\n", "no rows to import"),
    "empty_jsonl": ("bad.jsonl", "\n\n", "no rows to import"),
    "malformed_jsonl": (
        "bad.jsonl",
        '{"model": "m", "benchmark": "piqa", "sample_id": 1, "correct": 1}\n{"model": \n',
        "line 2 is not valid JSON",
    ),
    "non_utf8_jsonl": ("bad.jsonl", b'{"model": "\xff"}\n', "line 1 is not UTF-8"),
    "bad_seed": (
        "bad.csv",
        "model,benchmark,sample_id,seed,correct\nm,piqa,1,x,1\n",
        "seed must be an integer",
    ),
    "bad_num_choices": (
        "bad.csv",
        "model,benchmark,sample_id,correct,num_choices\nm,piqa,1,1,1\n",
        "num_choices 1; it must be >= 2",
    ),
    "empty_sample_id": (
        "bad.csv",
        "model,benchmark,sample_id,correct\nm,piqa,,1\n",
        "row 1 has an empty sample_id",
    ),
    "unknown_extension": ("bad.xlsx", "whatever", "unknown file type '.xlsx'"),
    "not_parquet": ("bad.parquet", "this is not parquet", "not a readable Parquet file"),
    "conflicting_categories": (
        "bad.csv",
        "model,benchmark,sample_id,correct,category\nm,mine,1,1,Math\nm,mine,2,1,Logic\n",
        "benchmark 'mine' is given 2 categories",
    ),
    # contradicts the stored row m/piqa/1/seed 0 (correct=1)
    "contradicts_stored_row": (
        "bad.csv",
        "model,benchmark,sample_id,seed,correct\nm,piqa,3,0,1\nm,piqa,1,0,0\n",
        "is already stored with correct=1 but this file says 0",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_file_is_refused_with_one_line_and_nothing_changes(cli, tmp_path, case):
    cli("import", "table", _write(tmp_path / "good.csv", GOOD))
    before = cli.contents()
    name, content, expected = CASES[case]
    result = cli("import", "table", _write(tmp_path / name, content), ok=False)
    assert result.exit_code == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert expected in lines[0]
    assert "nothing was imported" in lines[0]
    assert cli.contents() == before


def test_bad_parquet_correct_column(cli, tmp_path):
    cli("import", "table", _write(tmp_path / "good.csv", GOOD))
    before = cli.contents()
    path = tmp_path / "bad.parquet"
    pq.write_table(
        pa.table({"model": ["m"], "benchmark": ["piqa"], "sample_id": [9], "correct": [0.7]}), path
    )
    result = cli("import", "table", path, ok=False)
    assert result.exit_code == 2
    assert "got 0.7" in result.stderr
    assert cli.contents() == before


def test_missing_file(cli, tmp_path):
    result = cli("import", "table", tmp_path / "nope.csv", ok=False)
    assert result.exit_code == 2
    assert "no such file" in result.stderr


def test_a_bad_row_late_in_a_large_file_still_writes_nothing(cli, tmp_path):
    rows = [
        {"model": "big", "benchmark": "piqa", "sample_id": i, "correct": i % 2}
        for i in range(50_000)
    ]
    rows[-1]["correct"] = 2
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    cli("import", "table", _write(tmp_path / "good.csv", GOOD))
    before = cli.contents()
    result = cli("import", "table", path, ok=False)
    assert "row 50000" in result.stderr
    assert cli.contents() == before


def test_model_flag_conflicting_with_model_column(cli, tmp_path):
    result = cli("import", "table", _write(tmp_path / "a.csv", GOOD), "--model", "other", ok=False)
    assert result.exit_code == 2
    assert "--model 'other' given but the model column also names 'm'" in result.stderr
