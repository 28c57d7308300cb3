"""The app remembers the workers it refuses and says so on a waiting job: `GET /api/workers/me`,
a 401 and a 403 on the worker routes, the job's `waiting_reason` and its page (escaped; a refused
call named by its token, never by its `X-Forgetmap-Worker` header)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.web import create_app

JOB = {
    "models": [{"name": "m-base", "path": "org/base"}, {"name": "m-post", "path": "org/post"}],
    "benchmarks": ["piqa"],
    "seeds": [0],
    "config": {"engine": "vllm"},
}


@pytest.fixture
def world(cli, tmp_path):
    tokens = {
        role: cli("token", "create", role, "--role", role).stdout.strip()
        for role in ("read", "submit", "worker")
    }
    settings = WebSettings(secret_key="k" * 40, reconcile_seconds=3600)
    broker = BrokerSettings(url=None, data_dir=tmp_path)  # the embedded queue: sends succeed
    with TestClient(create_app(cli.db, broker=broker, settings=settings)) as client:
        r = client.post("/api/jobs", json=JOB, headers=_as(tokens["submit"]))
        assert r.status_code == 201, r.text
        yield client, tokens, r.json()["id"]


def _as(token: str, worker: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {token}"}
    return {**headers, "X-Forgetmap-Worker": worker} if worker else headers


def test_a_worker_checks_its_token(world):
    client, tokens, _ = world
    r = client.get("/api/workers/me", headers=_as(tokens["worker"], "gpu-1"))
    assert r.status_code == 200 and r.json() == {
        "token": "worker",
        "role": "worker",
        "worker": "gpu-1",
    }
    r = client.get("/api/workers/me", headers=_as(tokens["read"], "gpu-1"))
    assert r.status_code == 403 and "has role read" in r.json()["detail"]
    assert client.get("/api/workers/me").status_code == 401


def test_a_refused_worker_is_the_reason_a_job_waits_until_a_worker_is_accepted(world):
    client, tokens, job_id = world
    assert client.get(f"/api/jobs/{job_id}").json()["waiting_reason"] is None
    shard_id = client.get(f"/api/jobs/{job_id}").json()["shards"][0]["id"]
    name = "<script>alert(1)</script>"
    r = client.post(
        f"/api/shards/{shard_id}/start", json={"worker": "x"}, headers=_as(tokens["read"], name)
    )
    assert r.status_code == 403
    # named by its token: the header's text is taken only with a worker's token (issue 50)
    reason = client.get(f"/api/jobs/{job_id}").json()["waiting_reason"]
    assert reason.startswith(
        "waiting: worker token 'read' rejected: this needs a token with role worker or admin; "
        "token 'read' has role read ("
    )
    page = client.get(f"/jobs/{job_id}").text
    assert 'id="job-waiting"' in page and "worker token &#39;read&#39; rejected" in page
    assert name not in page and "alert(1)" not in page
    # a token the app never made, from a worker that sends no name
    r = client.post(
        f"/api/shards/{shard_id}/progress", json={"done": 1}, headers=_as("fm_" + "x" * 43)
    )
    assert r.status_code == 401
    reason = client.get(f"/api/jobs/{job_id}").json()["waiting_reason"]
    assert reason.startswith("waiting: worker (unnamed) rejected: invalid or revoked token (")
    # a worker the app accepts (its call is a 404, not a refusal): shards can run again
    r = client.post(
        "/api/shards/999999/progress", json={"done": 1}, headers=_as(tokens["worker"], "gpu-2")
    )
    assert r.status_code == 404
    assert client.get(f"/api/jobs/{job_id}").json()["waiting_reason"] is None
    assert 'id="job-waiting"' not in client.get(f"/jobs/{job_id}").text
