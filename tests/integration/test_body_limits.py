"""Bodies bounded before they are held (forgetmap.web.limits), against a real `forgetmap serve`: a
write without a valid token is refused before its body is read, a body over its route's limit is a
413 whatever its Content-Length says (or without one), and the legitimate writes beside them (a
worker's results, a job, a pair, a login form, an import upload, a command line) still work."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from forgetmap.core.display import binary_size
from forgetmap.web.limits import FORM_MAX_BYTES, JSON_MAX_BYTES, WORKER_UPLOAD_MAX_BYTES, rule_for

from tests.support.cli import Cli
from tests.support.server import Server
from tests.support.tables import BASE, POST, rows_for, write_csv

MB = 1 << 20


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> Iterator[dict]:
    """A served app with a token of each role; the broker is down (jobs stay queued)."""
    root = tmp_path_factory.mktemp("body-limits")
    db = root / "app.duckdb"
    cli = Cli(db)
    tokens = {
        role: cli("token", "create", f"t-{role}", "--role", role).stdout.strip()
        for role in ("read", "submit", "worker")
    }
    for name in ("base", "post"):
        (root / "models" / name).mkdir(parents=True)
    env = {
        **_environ(),
        "FORGETMAP_MODEL_ROOTS": str(root / "models"),
        "FORGETMAP_BROKER_URL": "redis://127.0.0.1:1/0",  # nothing listens there
        "FORGETMAP_IMPORT_MAX_BYTES": str(10 * MB),
    }
    server = Server(db, env=env)
    yield {"server": server, "tokens": tokens, "root": root}
    server.stop()


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("FORGETMAP_")}


def _client(app, role: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {app['tokens'][role]}"} if role else {}
    return httpx.Client(base_url=app["server"].url, timeout=60, headers=headers)


def _peak_rss(app) -> int:
    """The app process's peak resident set (VmHWM), in bytes."""
    status = Path(f"/proc/{app['server'].proc.pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024


def _partial_post(
    app, path: str, headers: dict[str, str], declared: int | None, send: int, then_send: int = 0
) -> tuple[int, str]:
    """POST ``path`` declaring ``declared`` body bytes (None: chunked), send only ``send`` of
    them, and read the answer; then send ``then_send`` bytes more (what an attacker streams on
    after the answer). The answer must come while the body is still mostly unsent."""
    port = app["server"].port
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head.append(
        f"Content-Length: {declared}" if declared is not None else "Transfer-Encoding: chunked"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sock.sendall(_body_bytes(send, chunked=declared is None))
        answer = http.client.HTTPResponse(sock)
        answer.begin()
        text = answer.read().decode()
        sent = 0
        while sent < then_send:  # the server discards what comes after its answer
            piece = min(MB, then_send - sent)
            sock.sendall(b" " * piece)
            sent += piece
        return answer.status, text


def _body_bytes(n: int, *, chunked: bool) -> bytes:
    if not chunked or n == 0:
        return b" " * n
    return b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in _pieces(n, 64 * 1024))


def _pieces(n: int, size: int) -> Iterator[bytes]:
    while n > 0:
        yield b" " * min(size, n)
        n -= size


# ---------------------------------------------------------------------------- attacks refused


WRITES = [
    "/api/jobs",
    "/api/results",
    "/api/cli",
    "/api/pairs",
    "/api/shards/1/start",
    "/api/imports?kind=table&filename=a.csv",
]


@pytest.mark.parametrize("path", WRITES)
def test_a_write_without_a_token_is_refused_before_its_body_is_read(app, path):
    """The 401 comes after 64 KiB of a declared 300 MB: the app did not wait for the body."""
    for headers in ({}, {"Authorization": "Bearer fm_forged"}):
        status, text = _partial_post(app, path, headers, declared=300 * MB, send=64 * 1024)
        assert status == 401, text
        assert "token" in json.loads(text)["detail"]


def test_unauthenticated_bodies_streamed_in_full_leave_the_app_flat(app):
    """The attack of issue 50 row 2: four 50 MB bodies without a token (each grew the app by
    ~3x its size before its 401). Now each is answered at once and the rest is discarded as it
    arrives: the app's peak memory stays within a few MB."""
    before = _peak_rss(app)
    for _ in range(4):
        status, _ = _partial_post(
            app, "/api/jobs", {}, declared=50 * MB, send=MB, then_send=49 * MB
        )
        assert status == 401
    time.sleep(0.5)
    assert _peak_rss(app) - before < 20 * MB


def test_a_read_token_is_refused_by_the_worker_routes_before_the_upload(app):
    headers = {"Authorization": f"Bearer {app['tokens']['read']}"}
    status, text = _partial_post(app, "/api/results", headers, declared=60 * MB, send=64 * 1024)
    assert status == 403 and "role worker" in text


def test_an_upload_declared_over_the_limit_is_413_not_422(app):
    """A worker's 100 MB body to /api/results: 413 before it is read (it was a 422 after the
    whole body was parsed)."""
    headers = {"Authorization": f"Bearer {app['tokens']['worker']}"}
    status, text = _partial_post(app, "/api/results", headers, declared=100 * MB, send=64 * 1024)
    assert status == 413, text
    assert f"over {binary_size(WORKER_UPLOAD_MAX_BYTES)}, the limit" in json.loads(text)["detail"]


def test_a_chunked_body_is_counted_as_it_arrives(app):
    """No Content-Length: the 413 comes at the chunk that passes the limit, whatever the body."""
    headers = {"Authorization": f"Bearer {app['tokens']['submit']}"}
    status, text = _partial_post(
        app, "/api/pairs", headers, declared=None, send=JSON_MAX_BYTES + 64 * 1024
    )
    assert status == 413, text
    assert "the limit of an API body" in json.loads(text)["detail"]
    with _client(app, "worker") as client:  # the worker routes' larger limit, through httpx
        reply = client.post(
            "/api/results",
            content=_pieces(WORKER_UPLOAD_MAX_BYTES + MB, MB),
            headers={"Content-Type": "application/json"},
        )
    assert reply.status_code == 413, reply.text


def test_a_form_over_its_limit_is_413(app):
    with _client(app) as client:
        csrf = _csrf(client.get("/login").text)
        reply = client.post("/login", data={"token": "x" * FORM_MAX_BYTES, "csrf": csrf})
        assert reply.status_code == 413
        assert f"over {binary_size(FORM_MAX_BYTES)}, the limit" in reply.text  # the page says it


# ---------------------------------------------------------------------- legitimate use beside


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def test_a_body_under_the_limit_is_parsed_as_before(app):
    """Just under the limit (JSON padded with spaces) the body reaches the route, which answers
    about its content; bad JSON is a 422 as before."""
    body = json.dumps({"base": "nobody", "post": "nobody-else"}).encode()
    body += b" " * (JSON_MAX_BYTES - len(body))
    with _client(app, "submit") as client:
        reply = client.post(
            "/api/pairs", content=body, headers={"Content-Type": "application/json"}
        )
        assert reply.status_code == 422 and "unknown base model 'nobody'" in reply.text
        bad = client.post(
            "/api/pairs", content=b"{not json", headers={"Content-Type": "application/json"}
        )
        assert bad.status_code == 422


def test_a_job_its_shard_and_its_results_go_through(app):
    models = app["root"] / "models"
    job = {
        "models": [
            {"name": "base", "path": str(models / "base")},
            {"name": "post", "path": str(models / "post")},
        ],
        "benchmarks": ["local:toy.jsonl"],
        "seeds": [0],
        "config": {"engine": "transformers", "max_tokens": 4},
        "pairs": [{"base": "base", "post": "post"}],
    }
    with _client(app, "submit") as client:
        created = client.post("/api/jobs", json=job)
        assert created.status_code == 201, created.text
        shard = client.get(f"/api/jobs/{created.json()['id']}").json()["shards"][0]
    with _client(app, "worker") as worker:
        start = worker.post(f"/api/shards/{shard['id']}/start", json={"worker": "w"})
        assert start.status_code == 200 and start.json()["run"], start.text
        rows = [
            {"sample_id": f"q{i}", "correct": i % 2 == 0, "prompt": "p" * 2000} for i in range(2000)
        ]  # a 4 MB batch: over the JSON default
        reply = worker.post("/api/results", json={"shard_id": shard["id"], "rows": rows})
        assert reply.status_code == 200, reply.text
        assert reply.json()["rows_added"] == 2000
        done = worker.post(f"/api/shards/{shard['id']}/finish", json={"full_size": 2000})
        assert done.status_code == 200, done.text


def test_a_login_form_and_a_logout_go_through(app):
    with _client(app) as client:
        csrf = _csrf(client.get("/login").text)
        login = client.post(
            "/login", data={"token": app["tokens"]["submit"], "csrf": csrf, "next": "/submit"}
        )
        assert login.status_code == 303 and login.headers["location"] == "/submit"
        page = client.get("/submit")
        assert page.status_code == 200
        out = client.post("/logout", data={"csrf": _csrf(page.text)})
        assert out.status_code == 303


def test_an_import_upload_streams_past_the_json_limit(app, tmp_path):
    """/api/imports keeps its own limit (FORGETMAP_IMPORT_MAX_BYTES, 10 MB here): a 2 MB table is
    imported, an 11 MB one is a 413 from its route."""
    rows = rows_for("base", BASE) + rows_for("post", POST)
    table = write_csv(tmp_path / "pair.csv", rows)
    padded = table.read_bytes() + b"\n" * (2 * MB)  # blank lines: still the same table
    with _client(app, "submit") as client:
        reply = client.post(
            "/api/imports", params={"kind": "table", "filename": "pair.csv"}, content=padded
        )
        assert reply.status_code == 202, reply.text
        assert reply.json()["bytes"] == len(padded)
        too_big = client.post(
            "/api/imports",
            params={"kind": "table", "filename": "big.csv"},
            content=_pieces(11 * MB, MB),
        )
        assert too_big.status_code == 413 and "FORGETMAP_IMPORT_MAX_BYTES" in too_big.text


def test_a_command_line_through_the_app_streams_its_answer(app):
    call = {"argv": ["pair", "list"], "cwd": str(app["root"])}
    with _client(app, "read") as client:
        reply = client.post("/api/cli", json=call)
    assert reply.status_code == 200, reply.text
    lines = [json.loads(line) for line in reply.text.splitlines()]
    assert lines[-1] == {"exit_code": 0}


def test_every_path_has_its_rule(app):
    """Whatever a path holds (a decoded newline among it), one rule takes it."""
    assert rule_for("/api/pairs/1/samples.\n").route == "an API body"
    assert rule_for("/api/results").max_bytes == WORKER_UPLOAD_MAX_BYTES
    assert rule_for("/\x00\n").max_bytes == FORM_MAX_BYTES
    with _client(app, "read") as client:
        assert client.get("/api/pairs/1/samples.%0A").status_code in (404, 422)
