"""Starting a shard is idempotent across deliveries, and the reconciler finds lost messages."""

from __future__ import annotations

import base64
import json
import time

from forgetmap.contract.base import validated
from forgetmap.contract.jobs import EvaluateJobIn
from forgetmap.db import jobs as jobs_db
from forgetmap.db import open_store
from forgetmap.runtime.broker import TASK_NAME, BrokerSettings
from forgetmap.services import job_view, jobs
from forgetmap.services.queue import Enqueuer, Reconciler, _shard_of

JOB = {"models": [{"name": "m", "path": "org/m"}], "benchmarks": ["piqa"], "seeds": [0, 1]}


def _store_with_job(tmp_path):
    store = open_store(tmp_path / "fm.duckdb")
    with store.transaction() as conn:
        job_id, shard_ids = jobs.create_job(conn, validated(EvaluateJobIn, JOB))
    return store, job_id, shard_ids


def test_a_duplicate_delivery_does_not_run_a_live_shard_twice(tmp_path):
    store, _, (shard, _) = _store_with_job(tmp_path)
    with store.transaction() as conn:
        assert jobs.start_shard(conn, shard, "w1", "task-a")["status"] == "running"
        # a re-sent copy of the message (another task id) while w1 is alive: nothing to run
        assert jobs.start_shard(conn, shard, "w2", "task-b") is None
        # Redis re-delivering the claiming message (its worker died): taken over
        assert jobs.start_shard(conn, shard, "w3", "task-a")["attempts"] == 2
        # any delivery takes over a shard whose worker has been silent past the bound
        assert jobs.start_shard(conn, shard, "w4", "task-c", stale_seconds=0)["attempts"] == 3
        jobs.finish_shard(conn, shard)
        assert jobs.start_shard(conn, shard, "w5", "task-a") is None  # finished: nothing to run
    store.close()


class FakeBroker(Enqueuer):
    """Records sends; reports which shard messages it holds (as Redis would be asked)."""

    def __init__(self, holds):
        super().__init__(BrokerSettings(url="redis://unused"))
        self.holds, self.sent = holds, []

    def send(self, shard_ids):
        self.sent.append(list(shard_ids))
        return list(shard_ids), None

    def held(self):
        return self.holds


def test_reconciler_resends_only_what_the_broker_lost(tmp_path):
    store, job_id, (a, b) = _store_with_job(tmp_path)
    with store.transaction() as conn:
        jobs_db.mark_sent(conn, [a, b])
        conn.execute("UPDATE shards SET sent_at = now() - INTERVAL 1 MINUTE")
    broker = FakeBroker(holds={a})
    reconciler = Reconciler(store, broker, interval=1, resend_after=3600)
    assert reconciler.run_once() == 1 and broker.sent == [[b]]
    with store.read() as conn:
        detail = job_view.job_detail(conn, job_id)
    assert [s["resends"] for s in detail["shards"]] == [0, 1] and detail["resends"] == 1
    assert reconciler.run_once() == 0  # just sent again: within the grace period
    store.close()


def test_a_shard_just_saved_is_left_to_the_request_that_saved_it(tmp_path):
    """The reconciler sends an unsent shard only once it has seen it unsent for the grace period:
    a round between a job's commit and its own send must not queue a second, uncounted copy."""
    store, job_id, (a, b) = _store_with_job(tmp_path)
    broker = FakeBroker(holds={a})
    reconciler = Reconciler(store, broker, interval=1, grace=0.3)
    assert reconciler.run_once() == 0 and broker.sent == []  # just saved: its request sends it
    with store.transaction() as conn:
        jobs_db.mark_sent(conn, [a])  # the request's own send
    time.sleep(0.4)
    assert reconciler.run_once() == 1 and broker.sent == [[b]]  # still unsent past the grace
    with store.read() as conn:
        assert [s["resends"] for s in job_view.job_detail(conn, job_id)["shards"]] == [0, 0]
    store.close()


def test_without_a_broker_to_ask_the_time_bound_applies_with_backoff(tmp_path):
    store, _, (a, b) = _store_with_job(tmp_path)
    with store.transaction() as conn:
        jobs_db.mark_sent(conn, [a, b])
        conn.execute(f"UPDATE shards SET sent_at = now() - INTERVAL 100 SECOND WHERE id = {a}")
    broker = FakeBroker(holds=None)
    reconciler = Reconciler(store, broker, interval=1, resend_after=60)
    assert reconciler.run_once() == 1 and broker.sent == [[a]]
    with store.transaction() as conn:  # after one re-send the bound doubles: 100 s < 120 s
        conn.execute(f"UPDATE shards SET sent_at = now() - INTERVAL 100 SECOND WHERE id = {a}")
    assert reconciler.run_once() == 0
    store.close()


def test_shard_ids_are_read_from_celery_messages():
    body = base64.b64encode(json.dumps([[42], {}, {}]).encode()).decode()
    message = {
        "body": body,
        "headers": {"task": TASK_NAME},
        "properties": {"body_encoding": "base64"},
    }
    assert _shard_of(json.dumps(message).encode()) == 42
    assert _shard_of(json.dumps({**message, "headers": {"task": "other"}})) is None
    assert _shard_of(b"not json") is None


def test_a_repeated_job_reuses_finished_shards_and_big_jobs_are_refused(tmp_path):
    import pytest
    from forgetmap.core.errors import InputError

    store, _, shard_ids = _store_with_job(tmp_path)
    with store.transaction() as conn:
        jobs.finish_shard(conn, shard_ids[0])
        again, to_send = jobs.create_job(conn, validated(EvaluateJobIn, JOB))
        statuses = [s["status"] for s in job_view.job_detail(conn, again)["shards"]]
    assert statuses == ["reused", "queued"] and len(to_send) == 1
    # within every list's own limit (1,000 benchmarks, 20 seeds), over the limit on shards
    big = {**JOB, "benchmarks": [f"b{i}" for i in range(101)], "seeds": list(range(20))}
    with pytest.raises(InputError, match="2020 shards .* over the limit of 2000; split it"):
        validated(EvaluateJobIn, big).check()
    with pytest.raises(
        InputError, match="config.temperature: Input should be less than or equal to 2"
    ):
        validated(EvaluateJobIn, {**JOB, "config": {"temperature": 2.5}})
    with pytest.raises(InputError, match="pairs.0.stage: Input should be 'instruct'"):
        validated(EvaluateJobIn, {**JOB, "pairs": [{"base": "m", "post": "m", "stage": "dpo"}]})
    store.close()
