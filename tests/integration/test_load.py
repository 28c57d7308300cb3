"""Under load, nothing lost: browsing clients, two upload-imports and four workers posting
results at once against a real `forgetmap serve` over real Redis, small. The harness is
bench/load.py itself, run as the program it is (its latency figures are the benchmark's business,
not asserted here: the machine is shared); this test holds it to 0 failed requests and counts
every model's rows in the database file itself: each imported and posted row stored once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from forgetmap.db import open_store

from tests.support.worker_env import REDIS_URL, require_redis

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("map page", "/api/map", "pair page", "drill-down", "drill-down JSON")
SIZES = {
    "--clients": 5,
    "--rounds": 1,
    "--imports": 2,
    "--import-rows": 6_500,
    "--workers": 4,
    "--shards": 2,
    "--worker-rows": 512,
    "--batch": 128,
    "--seed-rows": 12_000,
    "--seed-benchmarks": 10,
    "--warmup": 1,
    "--after": 1,
    "--think": 0.1,
}
EXPECTED = {
    "model-00": 6_000,  # the browsed pair's two models: 12,000 rows
    "model-01": 6_000,
    "load-import-0-0": 6_500,
    "load-import-0-1": 6_500,
    "load-worker-0": 4 * 2 * 512,  # workers x shards x rows a shard
}


def stored(db: Path) -> dict[str, tuple[int, int]]:
    """Per model: rows and distinct (benchmark, seed, sample) keys."""
    store = open_store(db, read_only=True)
    try:
        with store.read() as conn:
            found = conn.execute(
                "SELECT m.name, count(*), count(DISTINCT (r.benchmark_id, r.seed, r.sample_id)) "
                "FROM results r JOIN models m ON m.id = r.model_id GROUP BY m.name"
            ).fetchall()
    finally:
        store.close()
    return {name: (rows, keys) for name, rows, keys in found}


def test_browsing_imports_and_workers_at_once_fail_nothing_and_store_each_row_once(tmp_path):
    require_redis()
    figures = tmp_path / "load.json"
    sizes = [str(part) for option, value in SIZES.items() for part in (option, value)]
    command = [
        sys.executable,
        str(ROOT / "bench" / "load.py"),
        *sizes,
        "--broker",
        REDIS_URL,
        "--workdir",
        str(tmp_path / "run"),
        "--json",
        str(figures),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    result = json.loads(figures.read_text())
    assert result["failed"] == 0 and result["problems"] == [], result["summary"]
    assert all(result["kinds"][page]["requests"] > 0 for page in PAGES), result["kinds"]
    assert sum(result["kinds"][page]["during_imports"]["n"] for page in PAGES) > 0  # overlapped
    assert result["imported_rows_added"] == 2 * 6_500
    assert stored(tmp_path / "run" / "load.duckdb") == {m: (n, n) for m, n in EXPECTED.items()}
