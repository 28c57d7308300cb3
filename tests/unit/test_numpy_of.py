"""numpy_of: numeric Arrow columns as numpy without pyarrow's to_numpy; the quick commands'
processes never load pandas."""

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


def _pandas_loaded(args: list[str]) -> tuple[bool, str]:
    """Run ``forgetmap ARGS`` as the executable does (``python -m app.cli``); whether the process
    had pandas loaded at its end, and its output."""
    probe = (
        "import sys, runpy; sys.argv = ['forgetmap', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('app.cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('pandas loaded' if 'pandas' in sys.modules else 'no pandas', file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True
    )
    return done.stderr.strip().splitlines()[-1] == "pandas loaded", done.stdout + done.stderr


def test_import_pair_and_map_processes_do_not_load_pandas(tmp_path):
    """pyarrow loads pandas (0.2 s) on its first array unless the process keeps it out
    (app.cli.common.keep_pandas_out): the commands of bench/harness_import.py run without it."""
    from tests.paper_layout import make_items, write_run

    items = {"community|piqa_reasoning_letter:main|0": make_items("piqa", 30, options=2)}
    out = tmp_path / "out"
    for model, style in (("org/base", "base"), ("org/post", "chat")):
        write_run(out, model, "2025-07-01T10-00-00.000001",
                  {t: (its, [i % 2 == 0 for i in range(30)]) for t, its in items.items()},
                  style=style, seed=0)  # fmt: skip
    db = ["--db", str(tmp_path / "fm.duckdb")]
    for args in (
        [*db, "import", "lighteval", str(out / "details" / "org" / "base"), "--model", "base"],
        [*db, "import", "lighteval", str(out / "details" / "org" / "post"), "--model", "post"],
        [*db, "pair", "add", "base", "post"],
        [*db, "map"],
    ):
        loaded, output = _pandas_loaded(args)
        assert not loaded, output
    assert "Total" in output, output


def test_a_test_process_keeps_pandas_importable(tmp_path):
    """Only the executable keeps pandas out: ``main`` run in-process (tests, CliRunner) leaves
    the process as it was, so a later ``import pandas`` (``datasets`` does one) still works."""
    from click.testing import CliRunner

    from app.cli import main
    from app.cli.common import _WithoutPandas

    result = CliRunner().invoke(main, ["--db", str(tmp_path / "fm.duckdb"), "map"])
    assert result.exit_code in (0, 2), result.output
    assert not any(isinstance(f, _WithoutPandas) for f in sys.meta_path)
