"""A refused worker token on both ends: the worker's client tells a refused token (401, 403) from
a refused request (other 4xx), and the app's memory of refusals says why a job waits."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import httpx
import pytest
from forgetmap.contract.shards import WORKER_HEADER
from forgetmap.services.job_view import waiting_reason
from forgetmap.services.rejections import MAX_NAME, RECENT_SECONDS, UNNAMED, RejectionLog
from forgetmap.worker.client import AppClient, AppRejected, TokenRefused

NOW = 1_700_000_000.0


def _client(status: int, detail: str, seen: list) -> AppClient:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, json={"detail": detail})

    client = AppClient("http://app", "fm_token", worker_name="gpu-1", attempts=2, backoff=0)
    client._http = httpx.Client(transport=httpx.MockTransport(answer), headers=client._http.headers)
    return client


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_token_is_told_apart_and_not_retried(status):
    seen: list[httpx.Request] = []
    with pytest.raises(TokenRefused) as refused:
        _client(status, "invalid or revoked token", seen).whoami()
    assert refused.value.status == status and refused.value.detail == "invalid or revoked token"
    assert not isinstance(refused.value, RuntimeError)  # shard code never turns it into a failure
    assert len(seen) == 1 and seen[0].url.path == "/api/workers/me"
    assert seen[0].headers[WORKER_HEADER] == "gpu-1"


@pytest.mark.parametrize("status", [404, 422])
def test_other_refusals_stay_a_refused_request(status):
    seen: list[httpx.Request] = []
    with pytest.raises(AppRejected, match=f"POST /api/shards/7/fail -> {status}"):
        _client(status, "shard 7 does not exist", seen).fail(7, "boom")
    assert len(seen) == 1


def test_the_newest_recent_refusal_blocks_until_a_worker_call_is_accepted():
    log = RejectionLog()
    assert log.blocking(NOW) is None
    log.refused("gpu-1", "invalid or revoked token", at=NOW - 20)
    log.refused("gpu-2", "this needs a token with role worker or admin", at=NOW - 10)
    assert log.blocking(NOW).worker == "gpu-2"
    log.refused("gpu-1", "invalid or revoked token", at=NOW - 5)  # again: now the newest
    assert log.blocking(NOW).worker == "gpu-1" and len(log) == 2
    assert log.blocking(NOW + RECENT_SECONDS) is None  # too old to explain a wait
    log.accepted(at=NOW - 1)
    assert log.blocking(NOW) is None


def test_names_are_one_bounded_line_and_the_memory_is_bounded():
    log = RejectionLog(max_workers=3)
    assert log.refused(None, "no token").worker == UNNAMED
    assert log.refused("  ", "no token").worker == UNNAMED
    assert log.refused("a\nb", "x\r\ny").worker == "a b"
    assert len(log.refused("w" * 1000, "r").worker) == MAX_NAME
    for i in range(10):
        log.refused(f"w{i}", "r", at=NOW + i)
    assert len(log) == 3 and log.blocking(NOW + 10).worker == "w9"
    with pytest.raises(ValueError, match="at least 1"):
        RejectionLog(max_workers=0)


def _job(*statuses: str) -> dict:
    return {"shards": [{"status": s} for s in statuses]}


def test_a_job_waits_on_a_refusal_only_with_queued_shards_and_none_running():
    refusal = RejectionLog().refused("gpu-<1>", "invalid or revoked token", at=NOW - 12)
    assert waiting_reason(_job("queued", "done"), refusal, NOW) == (
        "waiting: worker gpu-<1> rejected: invalid or revoked token (12 s ago, at 22:13:08 UTC)"
    )
    assert waiting_reason(_job("queued", "running"), refusal, NOW) is None
    assert waiting_reason(_job("done", "failed"), refusal, NOW) is None
    assert waiting_reason(_job("queued"), None, NOW) is None


def _job_made(seconds_ago: float, *statuses: str) -> dict:
    made = datetime.fromtimestamp(NOW - seconds_ago, UTC).replace(tzinfo=None).isoformat()
    return {**_job(*statuses), "created_at": made}


def test_a_job_says_when_no_worker_has_called_since_the_app_started():
    started = NOW - 3600  # 2023-11-14 21:13:20 UTC
    said = waiting_reason(_job_made(60, "queued"), None, NOW, app_started_at=started)
    assert said == (
        "waiting: no worker has called this app since it started (2023-11-14 21:13:20 UTC); "
        "start one on a machine that reaches the queue: `forgetmap worker`, with a token of role "
        "worker (`forgetmap token create NAME --role worker`)"
    )
    # a worker's accepted call, a fresh job, a running shard or nothing queued: no such word
    assert (
        waiting_reason(
            _job_made(60, "queued"), None, NOW, app_started_at=started, worker_heard_at=NOW - 50
        )
        is None
    )
    assert waiting_reason(_job_made(29, "queued"), None, NOW, app_started_at=started) is None
    assert (
        waiting_reason(_job_made(60, "queued", "running"), None, NOW, app_started_at=started)
        is None
    )
    assert waiting_reason(_job_made(60, "done"), None, NOW, app_started_at=started) is None
    # a refusal explains the wait better than the silence
    refusal = RejectionLog().refused("gpu-1", "invalid or revoked token", at=NOW - 12)
    assert waiting_reason(_job_made(60, "queued"), refusal, NOW, app_started_at=started).startswith(
        "waiting: worker gpu-1 rejected"
    )


def test_the_log_knows_when_it_started_and_when_a_worker_was_last_accepted():
    log = RejectionLog()
    assert log.accepted_at is None and abs(log.started_at - time.time()) < 5
    log.accepted(at=NOW)
    log.accepted(at=NOW - 10)
    assert log.accepted_at == NOW
