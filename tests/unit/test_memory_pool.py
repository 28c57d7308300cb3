"""use_jemalloc_pool: imports allocate from Arrow's jemalloc pool (pages reused, not zeroed afresh
by the kernel for every temporary), in a fresh process so the test process keeps its pool."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _has_jemalloc() -> bool:
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True


@pytest.mark.skipif(not _has_jemalloc(), reason="this pyarrow build has no jemalloc")
def test_reading_an_import_switches_the_process_to_jemalloc(tmp_path):
    table = tmp_path / "rows.csv"
    table.write_text("model,benchmark,sample_id,correct\nm,arc:easy,1,1\n")
    code = (
        "import pyarrow as pa\n"
        "from forgetmap.importers import read_source\n"
        "before = pa.default_memory_pool().backend_name\n"
        f"read_source('table', {str(table)!r}, model=None)\n"
        "print(before, pa.default_memory_pool().backend_name)\n"
    )
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system"}  # a known start, not jemalloc
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["system", "jemalloc"]
