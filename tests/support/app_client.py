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
