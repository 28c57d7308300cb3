"""Jobs under trouble: the broker down at submission, two workers on one job, cancel mid-job."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

from tests.integration.test_worker import _job, models  # noqa: F401 - shared fixture
from tests.support.services import service_missing
from tests.support.worker_env import Deployment, require_redis, write_toy_benchmark

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OwnRedis:
    """A throwaway redis-server on a free port, so the test can stop and restart "the broker"."""

    def __init__(self, workdir):
        if not shutil.which("redis-server"):
            service_missing("redis-server binary not installed")
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.workdir = workdir
        self.proc = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        for _ in range(100):
            try:
                redis.Redis(port=self.port, socket_connect_timeout=0.2).ping()
                return
            except redis.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def _dep(tmp_path, models, **kwargs) -> Deployment:  # noqa: F811
    dep = Deployment(tmp_path, **kwargs)
    dep.models.symlink_to(models["root"] / "models", target_is_directory=True)
    return dep


def test_broker_down_at_submission_keeps_the_job_and_runs_it_when_back(tmp_path, models):  # noqa: F811
    redis_server = OwnRedis(tmp_path)
    redis_server.start()
    dep = _dep(
        tmp_path, models, redis_url=redis_server.url, extra_env={"FORGETMAP_RECONCILE_SECONDS": "1"}
    )
    try:
        write_toy_benchmark(dep.benchmarks / "toy.jsonl", 6)
        redis_server.stop()
        response = dep.http.post(
            "/api/jobs", json=_job(models, "transformers", seeds=(0,), mode="loglik")
        )
        assert response.status_code == 201
        body = response.json()
        assert body["sent"] == 0 and "queue is unreachable" in body["queue_error"]
        assert dep.job(body["id"])["status"] == "queued"  # saved before anything was sent
        redis_server.start()
        dep.start_worker()
        job = dep.wait(body["id"], timeout=300)
        assert job["status"] == "done"
    finally:
        dep.close()
        redis_server.stop()


def test_two_workers_share_one_job(tmp_path, models):  # noqa: F811
    require_redis()
    dep = _dep(tmp_path, models)
    try:
        write_toy_benchmark(dep.benchmarks / "toy.jsonl", 10)
        dep.start_worker()
        dep.start_worker()
        dep.wait_ready()  # both consume before the first shard is sent
        body = _job(models, "transformers", seeds=(0, 1, 2), mode="loglik")
        job = dep.wait(dep.submit(body), timeout=400)
        assert job["status"] == "done"
        assert len({s["worker"] for s in job["shards"]}) == 2, [s["worker"] for s in job["shards"]]
    finally:
        dep.close()
    rows = dep.results()
    assert len(rows) == len(set(rows)) == 2 * 3 * 10


def test_cancel_stops_the_remaining_shards(tmp_path, models):  # noqa: F811
    require_redis()
    dep = _dep(tmp_path, models, upload_batch=2)
    try:
        write_toy_benchmark(dep.benchmarks / "toy.jsonl", 16)
        dep.start_worker()
        job_id = dep.submit(_job(models, "transformers", seeds=(0, 1, 2, 3), max_tokens=24))
        dep.wait(
            job_id, timeout=300, until=lambda j: any(s["status"] == "done" for s in j["shards"])
        )
        cancelled = dep.http.post(f"/api/jobs/{job_id}/cancel").json()
        assert cancelled["cancelled_shards"] >= 1
        # a running shard stops at its next progress report
        job = dep.wait(
            job_id,
            timeout=120,
            until=lambda j: not {"queued", "running"} & {s["status"] for s in j["shards"]},
        )
        assert job["status"] == "cancelled"
        done_before = sum(s["status"] == "done" for s in job["shards"])
        # the negative below means something only once the worker has taken every shard's
        # message from the queue (and been refused the cancelled ones): Celery logs each end
        dep.wait_handled(len(job["shards"]), timeout=120)
        assert sum(s["status"] == "done" for s in dep.job(job_id)["shards"]) == done_before
    finally:
        dep.close()
