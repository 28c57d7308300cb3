"""The app in-process (FastAPI's TestClient) on a test's database, as an admin calls it, with a
worker's token at hand: what the job and shard API tests drive."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fastapi.testclient import TestClient
from forgetmap.runtime.config import WebSettings
from forgetmap.web import create_app


@contextmanager
def admin_client(cli) -> Iterator[TestClient]:
    """A client sending an admin token; ``client.worker``: the headers of a worker's token. The
    reconciler waits an hour, so nothing moves a job but the test."""
    token = cli("token", "create", "admin").stdout.strip()
    worker = cli("token", "create", "worker", "--role", "worker").stdout.strip()
    settings = WebSettings(secret_key="k", reconcile_seconds=3600)
    with TestClient(create_app(cli.db, settings=settings)) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        client.worker = {"Authorization": f"Bearer {worker}"}
        yield client


def finished_job(client, job_id: int, *, timeout: float = 60.0) -> dict:
    """``GET /api/jobs/{id}`` until the job has ended (an import job runs in the app's thread);
    an AssertionError naming the job when it has not within ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["status"] not in ("queued", "running"):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} did not end in {timeout:.0f} s: {job}")
        time.sleep(0.1)
