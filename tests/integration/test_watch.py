"""`forgetmap watch` with a real app, Redis and `forgetmap worker`: a checkpoint folder written
while the watcher runs (a partial save first, completed later) is submitted once, after it is
complete; an earlier step appearing later is placed by step; a restart submits nothing new."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest

from tests.support.worker_env import FORGETMAP, Deployment, require_redis, write_toy_benchmark

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from tests.support.services import service_missing

    try:
        from forgetmap.demo.tiny_model import build_tiny_model
    except ImportError as exc:
        service_missing(f"torch/transformers not installed: {exc}")
    root = tmp_path_factory.mktemp("zoo")
    return {
        "base": build_tiny_model(root / "tiny-base", seed=1),
        "a": build_tiny_model(root / "tiny-a", seed=2),
        "b": build_tiny_model(root / "tiny-b", seed=3),
    }


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_watcher_submits_each_complete_checkpoint_once(tmp_path, models):
    require_redis()
    dep = Deployment(tmp_path, extra_env={"FORGETMAP_MODEL_ROOTS": str(tmp_path / "models")})
    run = dep.models / "run"
    run.mkdir(parents=True)
    shutil.copytree(models["base"], dep.models / "tiny-base")
    write_toy_benchmark(dep.benchmarks / "toy.jsonl", 8)
    watch_log = tmp_path / "watch.log"
    args = [
        FORGETMAP,
        "watch",
        str(run),
        "--base",
        "tiny-base",
        "--series",
        "run",
        "--base-path",
        str(dep.models / "tiny-base"),
        "--benchmarks",
        "local:toy.jsonl",
        "--seeds",
        "0",
        "--engine",
        "transformers",
        "--max-tokens",
        "8",
        "--stage",
        "sft",
    ]
    env = {**dep.worker_env, "FORGETMAP_APP_URL": dep.url, "FORGETMAP_API_TOKEN": dep.submit_token}
    watcher = None
    try:
        dep.start_worker()
        # a save in progress: config and tokenizer written, the weights half-way
        partial = run / "checkpoint-2"
        shutil.copytree(models["a"], partial)
        weights = (partial / "model.safetensors").read_bytes()
        (partial / "model.safetensors").write_bytes(weights[: len(weights) // 2])
        shutil.copytree(models["b"], run / "tmp-checkpoint-3")  # the trainer's temporary folder
        with watch_log.open("w") as log:
            watcher = subprocess.Popen(
                [*args, "--every", "0.5"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            _wait_for(lambda: "watching" in watch_log.read_text(), 60, "the watcher to start")
            time.sleep(3)  # several scans over the partial save
            assert dep.http.get("/api/jobs").json() == []
            assert "submitted" not in watch_log.read_text()

            (partial / "model.safetensors").write_bytes(weights)  # the save completes
            _wait_for(lambda: "(step 2) as job" in watch_log.read_text(), 60, "step 2's submission")
            # an earlier checkpoint shows up later (copied from elsewhere): placed by step
            shutil.copytree(models["b"], run / "checkpoint-1")
            _wait_for(lambda: "(step 1) as job" in watch_log.read_text(), 60, "step 1's submission")
            jobs = dep.http.get("/api/jobs").json()
            assert len(jobs) == 2
            for job in jobs:
                assert dep.wait(job["id"], timeout=300)["status"] == "done"
            time.sleep(2)  # more scans while nothing changes
        os.killpg(watcher.pid, signal.SIGINT)
        watcher.wait(timeout=30)
        text = watch_log.read_text()
        assert text.count("submitted") == 2, text
        assert "tmp-checkpoint-3" not in text

        series = dep.http.get("/api/series").json()
        assert series == [
            {"id": 1, "name": "run", "base": "tiny-base", "steps": [1, 2], "axis": "step"}
        ]
        view = dep.http.get("/api/series/1").json()
        assert [c["post"] for c in view["checkpoints"]] == ["run/checkpoint-1", "run/checkpoint-2"]
        assert {p["stage"] for p in dep.http.get("/api/pairs").json()} == {"sft"}  # --stage
        totals = [r for r in view["records"] if r["category"] == "Total"]
        assert [r["step"] for r in totals] == [1, 2] and all(r["seeds"] == 1 for r in totals)
        # the base was evaluated once: one job holds its shard, the other job only the checkpoint's
        shards = [dep.job(j["id"])["shards"] for j in jobs]
        assert sorted(len(s) for s in shards) == [1, 2]

        # a restart submits nothing new
        again = subprocess.run(
            [*args, "--once"], env=env, capture_output=True, text=True, timeout=120
        )
        assert again.returncode == 0, again.stderr
        assert "submitted" not in again.stderr + again.stdout
        assert len(dep.http.get("/api/jobs").json()) == 2
    finally:
        if watcher is not None and watcher.poll() is None:
            os.killpg(watcher.pid, signal.SIGKILL)
        dep.close()
