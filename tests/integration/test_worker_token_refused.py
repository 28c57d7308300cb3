"""A worker whose token the app refuses stops at once and loses nothing: real `forgetmap serve`,
real Redis (the test's own database number) or the embedded filesystem queue, real `forgetmap
worker` processes.

Misconfigured workers meet one queued job: one whose token is revoked after it started (its first
shard's start is a 401: the message goes back), one with a read token (403 at its start check)
and one with a token the app never made (401 at its start check). Each exits non-zero within
seconds naming the fix, the queue still holds every message, and the job page and API say why
nothing moves. Then a worker with a good token runs every shard once."""

from __future__ import annotations

import collections
import subprocess
import time

import pytest
import redis
from forgetmap.services.queue import _shard_of

import tests.support.server as server_module
from tests.integration.test_worker import _deployment, _job, models  # noqa: F401 - shared fixture
from tests.support.server import Server
from tests.support.worker_env import FORGETMAP, Deployment, write_toy_benchmark

pytestmark = [pytest.mark.integration, pytest.mark.slow]
N_ITEMS = 6
SEEDS = (0, 1)
FIX = "forgetmap token create NAME --role worker"


def _cli(db, *args: str) -> str:
    command = [FORGETMAP, "--db", str(db), *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def _refused_worker(dep: Deployment, name: str, token: str) -> tuple[int, float, str]:
    """Run a worker with ``token`` until it exits: (exit status, seconds, its output)."""
    dep.worker_env.update({"FORGETMAP_API_TOKEN": token, "FORGETMAP_WORKER_NAME": name})
    started = time.monotonic()
    proc = dep.start_worker(log_name="refused")
    dep.workers.remove(proc)  # dep.wait treats a worker that exits as a failure
    status = proc.wait(timeout=60)
    log = (dep.root / f"refused-{len(dep.workers)}.log").read_text()
    return status, time.monotonic() - started, log


def _waiting(dep: Deployment, job_id: int) -> tuple[str | None, str]:
    """The job's waiting reason in its JSON, and its page."""
    return dep.job(job_id)["waiting_reason"], dep.http.get(f"/jobs/{job_id}").text


def _restart_server(dep: Deployment, monkeypatch, *cli_calls: tuple[str, ...]) -> list[str]:
    """Stop the app, run CLI commands on its database, serve it again on the same port (the
    workers' FORGETMAP_APP_URL). Returns the commands' output."""
    dep.server.stop()
    outputs = [_cli(dep.db, *args) for args in cli_calls]
    monkeypatch.setattr(server_module, "free_port", lambda: dep.server.port)
    for key, value in dep.env.items():
        if key.startswith("FORGETMAP_"):
            monkeypatch.setenv(key, value)  # the same queue as before
    dep.server = Server(dep.db)
    return outputs


def _revoked_worker_gives_its_message_back(
    dep: Deployment, zoo: dict, monkeypatch, queued
) -> tuple:
    """A worker whose token is fine at its start and revoked while it waits for work takes one
    message of a new job, is refused (401), puts it back and exits naming the fix. ``queued``:
    the shard ids of the messages the broker holds. Returns (job id, shard ids, a worker token)."""
    dep.worker_env["FORGETMAP_WORKER_NAME"] = "revoked<b>"
    doomed = dep.start_worker()
    dep.wait_ready()
    dep.workers.remove(doomed)  # dep.wait treats a worker that exits as a failure
    try:
        return _refused_after_revocation(dep, zoo, monkeypatch, queued, doomed)
    finally:
        if doomed.poll() is None:  # a failed check must not leave it consuming the queue
            dep.kill(doomed)


def _refused_after_revocation(dep: Deployment, zoo: dict, monkeypatch, queued, doomed) -> tuple:
    _, good_token = _restart_server(
        dep,
        monkeypatch,
        ("token", "revoke", "worker"),
        ("token", "create", "worker-2", "--role", "worker"),
    )
    job_id = dep.submit(_job(zoo, "transformers", seeds=SEEDS, mode="loglik"))
    shard_ids = sorted(s["id"] for s in dep.job(job_id)["shards"])
    assert len(shard_ids) == 2 * len(SEEDS)
    status = doomed.wait(timeout=60)
    log = (dep.root / "worker-0.log").read_text()
    assert status != 0, log
    assert "received" in log  # it took a message
    assert "does not accept its token" in log and FIX in log and "goes back to the queue" in log
    assert queued() == shard_ids  # the message it took is back, nothing lost
    reason, page = _waiting(dep, job_id)
    # named by nothing the caller sends: its revoked token has no name, its header is not trusted
    assert reason.startswith("waiting: worker (unnamed) rejected: invalid or revoked token ("), (
        reason
    )
    assert (
        'id="job-waiting"' in page and "revoked&lt;b&gt;" not in page and "revoked<b>" not in page
    )
    return job_id, shard_ids, good_token


def _good_worker_runs_every_shard_once(dep: Deployment, job_id: int, token: str, queued) -> None:
    dep.worker_env.update({"FORGETMAP_API_TOKEN": token, "FORGETMAP_WORKER_NAME": "good"})
    dep.start_worker(log_name="good")
    job = dep.wait(job_id, timeout=300)
    assert job["status"] == "done", job
    assert all(s["status"] == "done" and s["attempts"] == 1 for s in job["shards"]), job
    assert {s["worker"] for s in job["shards"]} == {"good"}
    assert job["waiting_reason"] is None
    assert 'id="job-waiting"' not in dep.http.get(f"/jobs/{job_id}").text
    assert queued() == []


def _check_rows(dep: Deployment) -> None:
    rows = dep.results()
    assert len(rows) == 2 * len(SEEDS) * N_ITEMS and max(collections.Counter(rows).values()) == 1


def test_refused_workers_stop_and_keep_the_redis_queue_then_a_good_one_runs_it(
    tmp_path,
    models,  # noqa: F811
    monkeypatch,
):
    reader = _cli(tmp_path / "fm.duckdb", "token", "create", "reader", "--role", "read")
    dep = _deployment(tmp_path, models)
    broker = redis.Redis.from_url(dep.redis_url)

    def queued() -> list[int]:
        return sorted(_shard_of(m) for m in broker.lrange(dep.queue, 0, -1))

    try:
        write_toy_benchmark(dep.benchmarks / "toy.jsonl", N_ITEMS)
        job_id, shard_ids, good_token = _revoked_worker_gives_its_message_back(
            dep, models, monkeypatch, queued
        )

        # a read token: refused (403) at the worker's start check, before it takes any message
        status, seconds, log = _refused_worker(dep, "reader-worker", reader)
        assert status != 0 and seconds < 30, log
        assert "refuses its token's role" in log and "has role read" in log and FIX in log
        assert "ready." not in log  # it never consumed
        assert queued() == shard_ids
        reason, page = _waiting(dep, job_id)
        assert reason.startswith(  # named by its token, which an admin named, not by its header
            "waiting: worker token 'reader' rejected: this needs a token with role worker"
        )
        assert "token &#39;reader&#39;" in page and "reader-worker" not in page

        # a token the app never made: refused (401) at the start check
        status, seconds, log = _refused_worker(dep, "stranger", "fm_" + "x" * 43)
        assert status != 0 and seconds < 30, log
        assert "does not accept its token" in log and "invalid or revoked token" in log
        assert "ready." not in log
        assert queued() == shard_ids
        assert dep.job(job_id)["status"] == "queued"
        assert all(s["attempts"] == 0 for s in dep.job(job_id)["shards"])

        _good_worker_runs_every_shard_once(dep, job_id, good_token, queued)
    finally:
        dep.close()
    _check_rows(dep)


def test_a_refused_worker_gives_its_message_back_to_the_embedded_queue(
    tmp_path,
    models,  # noqa: F811
    monkeypatch,
):
    """The embedded filesystem queue of `forgetmap up` (one file per waiting message)."""
    data = tmp_path / "data"
    dep = _deployment(
        tmp_path, models, extra_env={"FORGETMAP_BROKER_URL": "", "FORGETMAP_DATA_DIR": str(data)}
    )
    folder = data / "broker" / "queue"

    def queued() -> list[int]:
        return sorted(_shard_of(p.read_bytes()) for p in folder.iterdir())

    try:
        write_toy_benchmark(dep.benchmarks / "toy.jsonl", N_ITEMS)
        job_id, _, good_token = _revoked_worker_gives_its_message_back(
            dep, models, monkeypatch, queued
        )
        _good_worker_runs_every_shard_once(dep, job_id, good_token, queued)
    finally:
        dep.close()
    _check_rows(dep)
