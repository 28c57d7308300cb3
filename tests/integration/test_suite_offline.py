"""An offline GPU node in miniature: `forgetmap suite fetch` from rows in the hub's Parquet-export
layout -> `forgetmap suite check` with HF_HUB_OFFLINE=1 -> a real `forgetmap worker` (Celery over
Redis, transformers on a tiny model, HF_HUB_OFFLINE=1) evaluates the fetched copies; the shards
record the copies' sha256, and a benchmark without a copy fails with the fix."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.support.hub_layout import write_hub
from tests.support.services import require_modules
from tests.support.worker_env import FORGETMAP, Deployment, require_redis

pytestmark = [pytest.mark.integration, pytest.mark.slow]

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
FETCHED = ["bbh:causal_judgment", "piqa"]


def _cli(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [FORGETMAP, *args],
        env={**os.environ, **OFFLINE, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_fetch_check_offline_then_a_worker_job_on_the_copies(tmp_path):
    require_modules("datasets", "torch", "transformers")
    require_redis()
    from forgetmap.demo.tiny_model import build_tiny_model

    models = tmp_path / "zoo"
    base = build_tiny_model(models / "tiny-base", seed=1)
    post = build_tiny_model(models / "tiny-post", seed=2)
    hub = write_hub(tmp_path / "hub", FETCHED)
    copies = tmp_path / "dep" / "benchmarks"

    # where the hub is reachable (here: a folder of its Parquet exports)
    fetch = _cli(
        [
            "suite",
            "fetch",
            "--benchmarks",
            ",".join(FETCHED),
            "--out",
            str(copies),
            "--hub-dir",
            str(hub),
        ],
        {},
    )
    assert fetch.returncode == 0, fetch.stderr
    manifest = json.loads((copies / "manifest.json").read_text())["benchmarks"]
    assert {name: entry["rows"] for name, entry in manifest.items()} == {
        "bbh:causal_judgment": 2,
        "piqa": 2,
    }

    # on the offline node, before the first job
    node = {"FORGETMAP_BENCHMARK_DIRS": str(copies)}
    check = _cli(["suite", "check", "--benchmarks", ",".join(FETCHED), "--format", "json"], node)
    assert check.returncode == 0, check.stderr
    assert [(r["name"], r["n"], r["source"]) for r in json.loads(check.stdout)] == [
        ("bbh:causal_judgment", 2, "local"),
        ("piqa", 2, "local"),
    ]
    missing = _cli(["suite", "check", "--benchmarks", "mmlu:anatomy"], node)
    assert missing.returncode == 1 and "forgetmap suite fetch" in " ".join(missing.stdout.split())

    (tmp_path / "dep").mkdir(exist_ok=True)
    dep = Deployment(tmp_path / "dep", extra_env=OFFLINE)
    try:
        assert dep.benchmarks == copies
        dep.models.symlink_to(models, target_is_directory=True)
        dep.start_worker()
        body = {
            "models": [
                {"name": "tiny-base", "path": str(base), "prompting": "base"},
                {"name": "tiny-post", "path": str(post), "prompting": "chat"},
            ],
            "benchmarks": [*FETCHED, "mmlu:anatomy"],
            "seeds": [0],
            "config": {"engine": "transformers", "mode": "loglik"},
            "pairs": [{"base": "tiny-base", "post": "tiny-post", "label": "tiny"}],
        }
        job_id = dep.submit(body)
        job = dep.wait(job_id, timeout=400)
        by = {(s["model"], s["benchmark"]): s for s in job["shards"]}
        for model in ("tiny-base", "tiny-post"):
            for name in FETCHED:
                shard = by[(model, name)]
                assert (shard["status"], shard["done"], shard["total"]) == ("done", 2, 2), shard
            error = by[(model, "mmlu:anatomy")]["error"]
            assert "no local copy mmlu_anatomy.jsonl" in error
            assert "run `forgetmap suite fetch --out DIR`" in error
        assert job["status"] == "failed"
        page = dep.http.get(f"/jobs/{job_id}")
        assert page.status_code == 200 and "forgetmap suite fetch" in page.text
        records = dep.http.get("/api/map", params={"level": "benchmark"}).json()
        assert sorted((r["benchmark"], r["n"], r["num_choices"]) for r in records) == [
            ("bbh:causal_judgment", 2, 2),
            ("piqa", 2, 2),
        ]
    finally:
        dep.close()

    # each finished shard names the exact copy it evaluated
    from forgetmap.db import open_store

    store = open_store(dep.db, read_only=True)
    try:
        with store.read() as conn:
            rows = conn.execute(
                "SELECT benchmark, spec FROM shards WHERE status = 'done'"
            ).fetchall()
    finally:
        store.close()
    assert len(rows) == 4
    for benchmark, spec in rows:
        data = json.loads(spec)["config"]["data"]
        entry = manifest[benchmark]
        assert data == {"source": "local", "file": entry["file"], "sha256": entry["sha256"]}
