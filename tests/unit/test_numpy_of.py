"""numpy_of: numeric Arrow columns as numpy without pyarrow's to_numpy (which imports pandas),
and a quick command that therefore never loads pandas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from app.columns import numpy_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("type_", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint32(),
                                   pa.float32(), pa.float64()])  # fmt: skip
def test_numeric_columns_equal_to_numpy_across_chunks_and_slices(type_):
    chunked = pa.chunked_array([pa.array([1, 2, 3], type_), pa.array([], type_),
                                pa.array([4, 5, 6, 7], type_).slice(1, 2)])  # fmt: skip
    got = numpy_of(chunked)
    assert got.dtype == chunked.to_numpy().dtype
    assert got.tolist() == [1, 2, 3, 5, 6]
    assert numpy_of(pa.array([9, 8, 7], type_).slice(1)).tolist() == [8, 7]
    assert numpy_of(pa.chunked_array([], type_)).tolist() == []


def test_nulls_booleans_and_strings_go_through_to_numpy():
    with_null = numpy_of(pa.array([1.0, None]))
    assert with_null[0] == 1.0 and np.isnan(with_null[1])
    assert numpy_of(pa.array([True, False])).tolist() == [True, False]
    assert numpy_of(pa.chunked_array([["a"], ["b"]])).tolist() == ["a", "b"]


def test_forgetmap_map_on_a_small_database_does_not_load_pandas(tmp_path):
    csv = tmp_path / "rows.csv"
    lines = ["model,benchmark,sample_id,seed,correct"]
    lines += [
        f"{m},piqa,s{i},0,{(i + (m == 'post')) % 2}" for m in ("base", "post") for i in range(40)
    ]
    csv.write_text("\n".join(lines) + "\n")
    db = str(tmp_path / "fm.duckdb")
    cli = [sys.executable, "-m", "app.cli", "--db", db]
    subprocess.run([*cli, "import", "table", str(csv)], cwd=ROOT, check=True, capture_output=True)
    subprocess.run([*cli, "pair", "add", "base", "post"], cwd=ROOT, check=True, capture_output=True)
    probe = (
        "import sys, runpy; sys.argv = ['forgetmap', '--db', sys.argv[1], 'map']\n"
        "try:\n    runpy.run_module('app.cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('pandas loaded' if 'pandas' in sys.modules else 'no pandas', file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, db], cwd=ROOT, capture_output=True, text=True
    )
    assert "piqa" in done.stdout or "Total" in done.stdout, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == "no pandas", done.stderr
