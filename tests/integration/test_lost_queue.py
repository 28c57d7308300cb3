"""A broker that loses its queued messages mid-job (a Redis restart without persistence, a
failover, a new container): FLUSHDB on the test's own Redis database while a real Celery worker
process runs a job. The app notices the queued shards the broker no longer holds, sends them
again, and the job finishes with exactly one row per sample."""

from __future__ import annotations

import collections

import pytest
import redis
from forgetmap.services.queue import _shard_of

from tests.integration.test_worker import _deployment, _job, models  # noqa: F401 - shared fixture
from tests.support.worker_env import write_toy_benchmark

pytestmark = [pytest.mark.integration, pytest.mark.slow]
N_ITEMS = 6
SEEDS = (0, 1, 2, 3)


def test_flushdb_mid_job_loses_nothing(tmp_path, models):  # noqa: F811
    # the time bound is far away: only asking the broker can find the lost messages this fast
    dep = _deployment(
        tmp_path,
        models,
        extra_env={"FORGETMAP_RECONCILE_SECONDS": "1", "FORGETMAP_RESEND_SECONDS": "3600"},
    )
    try:
        write_toy_benchmark(dep.benchmarks / "toy.jsonl", N_ITEMS)
        dep.start_worker()
        job_id = dep.submit(_job(models, "transformers", seeds=SEEDS, mode="loglik"))
        job = dep.wait(
            job_id, timeout=300, until=lambda j: any(s["status"] == "done" for s in j["shards"])
        )
        assert job["resends"] == 0  # while the broker holds the messages nothing is sent twice
        broker = redis.Redis.from_url(dep.redis_url)
        # Read the waiting messages and flush in one MULTI, so no worker can take one in between:
        # a message still in the list at the flush is gone for good, and only a re-send can run
        # its shard. (A message a worker already took is not lost, and may run without one.)
        flush = broker.pipeline(transaction=True)
        flush.lrange(dep.queue, 0, -1)
        flush.flushdb()  # this test's own database number (FORGETMAP_TEST_REDIS)
        messages, _ = flush.execute()
        assert broker.llen(dep.queue) == 0
        waiting = sorted({_shard_of(m) for m in messages})
        assert waiting and None not in waiting, "some shards must still be waiting in the queue"
        job = dep.wait(job_id, timeout=400)
        assert job["status"] == "done", job
        by_id = {s["id"]: s for s in job["shards"]}
        assert all(by_id[s]["resends"] >= 1 for s in waiting), [by_id[s] for s in waiting]
        assert job["resends"] >= len(waiting)
        assert all(s["done"] == s["total"] == N_ITEMS for s in job["shards"])
        page = dep.http.get(f"/jobs/{job_id}").text
        assert 'id="job-resends"' in page and f"{job['resends']} re-send" in page
    finally:
        dep.close()
    rows = dep.results()
    counts = collections.Counter(rows)
    assert len(rows) == 2 * len(SEEDS) * N_ITEMS and max(counts.values()) == 1
