"""A merge sweep under trouble (issue 54), with real workers: cancelled mid-sweep it stops and
leaves no merged checkpoint behind; a worker killed mid-sweep leaves its merge shard to the next
worker, which finds the checkpoint already built, takes the evaluations over and stores each row
once."""

from __future__ import annotations

import time

import pytest

from tests.integration.test_merge_job import SEEDS, _models, tiny_pair
from tests.support.services import require_modules
from tests.support.worker_env import Deployment, require_redis

pytestmark = [pytest.mark.integration, pytest.mark.slow]
MIXES = [0, 0.2, 0.4, 0.6, 0.8, 1]


def _evaluated_pair(dep: Deployment, n_items: int) -> dict:
    """The tiny pair evaluated by the workers and stored; the sweep's body."""
    assert (
        dep.wait(dep.submit(tiny_pair(dep, n_items, max_tokens=24)), timeout=600)["status"]
        == "done"
    ), dep.logs()
    return {"kind": "merge", **_models(dep), "mixes": MIXES}


def _merges(dep: Deployment) -> list:
    folder = dep.models / "forgetmap-merges"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_a_cancelled_sweep_stops_and_leaves_no_merge(tmp_path):
    require_redis()
    require_modules("mergekit", "torch", "transformers", why="the merge path's checkpoints")
    dep = Deployment(tmp_path, upload_batch=2)
    try:
        dep.start_worker()
        dep.wait_ready()
        job_id = dep.submit(_evaluated_pair(dep, n_items=16))

        def evaluating(job: dict) -> bool:
            return any(s["status"] == "done" and s["benchmark"] != "merge" for s in job["shards"])

        dep.wait(job_id, timeout=300, until=lambda j: evaluating(j) and _merges(dep))
        cancelled = dep.http.post(f"/api/jobs/{job_id}/cancel").json()
        assert cancelled["cancelled_shards"] >= 1
        job = dep.wait(
            job_id,
            timeout=120,
            until=lambda j: not {"queued", "running"} & {s["status"] for s in j["shards"]},
        )
        assert job["status"] == "cancelled"
        # the merge shard stops at its next report and removes what it built
        deadline = time.time() + 60
        while _merges(dep) and time.time() < deadline:
            time.sleep(0.5)
        assert _merges(dep) == [], dep.logs()
        merges = [s for s in job["shards"] if s["benchmark"] == "merge"]
        assert sum(s["status"] == "done" for s in merges) < len(merges)
    finally:
        dep.close()


def test_a_worker_killed_mid_sweep(tmp_path):
    require_redis()
    require_modules("mergekit", "torch", "transformers", why="the merge path's checkpoints")
    dep = Deployment(
        tmp_path,
        upload_batch=2,
        extra_env={"FORGETMAP_STALE_SECONDS": "4", "FORGETMAP_RECONCILE_SECONDS": "1"},
    )
    try:
        first = dep.start_worker()
        dep.wait_ready()
        body = {**_evaluated_pair(dep, n_items=16), "mixes": [0, 0.5, 1]}
        job_id = dep.submit(body)

        def mid_merge(job: dict) -> bool:
            return any(
                s["status"] == "running" and s["benchmark"] != "merge" and s["done"] > 0
                for s in job["shards"]
            )

        dep.wait(job_id, timeout=300, until=mid_merge)
        dep.kill(first)
        built = _merges(dep)
        assert built == ["tiny-base-tiny-post-linear-0.5"]  # left by the dead worker
        dep.start_worker()
        job = dep.wait(job_id, timeout=600)
        assert job["status"] == "done", (job, dep.logs())
        assert "using the checkpoint already at" in dep.logs()
        assert _merges(dep) == []
    finally:
        dep.close()
    rows = [r for r in dep.results() if r[0] == "tiny-base+tiny-post@linear-0.5"]
    assert len(rows) == len(set(rows)) == 16 * len(SEEDS)
