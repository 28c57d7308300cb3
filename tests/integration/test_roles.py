"""Roles: every write endpoint x every role (and no token), the owner rule for cancel/retry,
sessions that carry the role, expire and end when their token is revoked, private reads, and
tokens made before roles surviving migration 0004 as admin tokens."""

from __future__ import annotations

import re
import time

import pytest
from fastapi.testclient import TestClient
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.web import create_app

from tests.support.cli import Cli

ROLES = ("read", "submit", "worker", "admin")
JOB = {
    "models": [{"name": "m-base", "path": "org/base"}, {"name": "m-post", "path": "org/post"}],
    "benchmarks": ["piqa"],
    "seeds": [0],
    "config": {"engine": "vllm"},
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A database with two imported models, one token per role plus a second submitter."""
    tmp_path = tmp_path_factory.mktemp("roles")
    cli = Cli(tmp_path / "fm.duckdb")
    rows = "model,benchmark,sample_id,correct,num_choices\n" + "".join(
        f"{m},piqa,s{i},{(i + j) % 2},2\n" for j, m in enumerate(("a", "b")) for i in range(4)
    )
    (tmp_path / "r.csv").write_text(rows)
    cli("import", "table", tmp_path / "r.csv")
    tokens = {role: cli("token", "create", role, "--role", role).stdout.strip() for role in ROLES}
    tokens["other-submit"] = cli("token", "create", "other", "--role", "submit").stdout.strip()
    listed = cli("token", "list").stdout
    assert re.search(r"^worker\tworker\t", listed, re.M) and re.search(
        r"^other\tsubmit\t", listed, re.M
    )
    settings = WebSettings(secret_key="k" * 40, reconcile_seconds=3600)
    broker = BrokerSettings(url=None, data_dir=tmp_path)  # the embedded queue: sends succeed
    with TestClient(create_app(cli.db, broker=broker, settings=settings)) as client:
        yield client, tokens


def _auth(tokens: dict, who: str | None) -> dict:
    return {"Authorization": f"Bearer {tokens[who]}"} if who else {}


def _job(client, tokens, who="submit") -> tuple[int, int]:
    """A fresh job owned by ``who`` and the id of its (queued) shard."""
    r = client.post("/api/jobs", json=JOB, headers=_auth(tokens, who))
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    return job_id, client.get(f"/api/jobs/{job_id}").json()["shards"][0]["id"]


# endpoint -> (the roles allowed, the status an allowed role gets)
WRITE = {
    "POST /api/pairs": (("submit", "admin"), 201),
    "POST /api/jobs": (("submit", "admin"), 201),
    "POST /api/jobs/{job}/cancel": (("submit", "admin"), 200),  # submit: its own job
    "POST /api/jobs/{job}/retry": (("submit", "admin"), 200),
    "POST /api/results": (("worker", "admin"), 200),
    "POST /api/shards/{shard}/start": (("worker", "admin"), 200),
    "POST /api/shards/{shard}/progress": (("worker", "admin"), 200),
    "POST /api/shards/{shard}/finish": (("worker", "admin"), 200),
    "POST /api/shards/{shard}/fail": (("worker", "admin"), 200),
    # past the role check an evaluation shard is refused as input: not a recoverability shard
    "POST /api/shards/{shard}/recovery": (("worker", "admin"), 422),
}
BODIES = {
    "/api/pairs": {"base": "a", "post": "b"},
    "/api/jobs": JOB,
    "/api/results": {"shard_id": 0, "rows": [{"sample_id": "s0", "correct": True}]},
    "/start": {"worker": "w"},
    "/progress": {"done": 1, "total": 2},
    "/finish": {},
    "/fail": {"error": "boom"},
    "/recovery": {"table": {}},
}


@pytest.mark.parametrize("who", [*ROLES, None])
@pytest.mark.parametrize("endpoint", list(WRITE))
def test_role_matrix(world, endpoint, who):
    client, tokens = world
    allowed, ok_status = WRITE[endpoint]
    job_id, shard_id = _job(client, tokens)  # owned by the submit token
    path = endpoint.split(" ", 1)[1].format(job=job_id, shard=shard_id)
    body = next((v for k, v in BODIES.items() if path.endswith(k)), None)
    if path == "/api/results":
        body = {**body, "shard_id": shard_id}
    r = client.post(path, json=body, headers=_auth(tokens, who))
    if who is None:
        assert r.status_code == 401, r.text
        assert "Authorization: Bearer" in r.json()["detail"]
    elif who in allowed:
        assert r.status_code == ok_status, r.text
    else:
        assert r.status_code == 403, r.text
        needed = " or ".join(dict.fromkeys([*[a for a in allowed if a != "admin"], "admin"]))
        assert r.json() == {
            "detail": f"this needs a token with role {needed}; token {who!r} has role {who}"
        }


@pytest.mark.parametrize("action", ["cancel", "retry"])
def test_only_the_owner_or_an_admin_may_cancel_or_retry(world, action):
    client, tokens = world
    job_id, _ = _job(client, tokens, who="submit")
    assert client.get(f"/api/jobs/{job_id}").json()["owner"] == "submit"
    r = client.post(f"/api/jobs/{job_id}/{action}", headers=_auth(tokens, "other-submit"))
    assert r.status_code == 403
    assert r.json()["detail"] == (
        f"job {job_id} belongs to submit; only its owner or a token with role admin may change it"
    )
    assert client.get(f"/api/jobs/{job_id}").json()["status"] != "cancelled"  # nothing changed
    assert (
        client.post(f"/api/jobs/{job_id}/{action}", headers=_auth(tokens, "submit")).status_code
        == 200
    )
    other_job, _ = _job(client, tokens, who="other-submit")
    r = client.post(f"/api/jobs/{other_job}/{action}", headers=_auth(tokens, "admin"))
    assert r.status_code == 200
    assert client.post(f"/api/jobs/999/{action}", headers=_auth(tokens, "admin")).status_code == 404
    if action == "cancel":
        assert client.get(f"/api/jobs/{other_job}").json()["status"] == "cancelled"


def test_job_pages_show_the_owner_and_offer_actions_only_to_who_may_use_them(world):
    client, tokens = world
    job_id, _ = _job(client, tokens, who="submit")
    assert 'id="job-owner">submit<' in client.get(f"/jobs/{job_id}").text
    assert "<td>submit</td>" in client.get("/jobs").text
    _login(client, tokens["other-submit"])
    assert 'id="cancel"' not in client.get(f"/jobs/{job_id}").text
    csrf = _csrf(client.get("/submit").text)
    r = client.post(f"/jobs/{job_id}/cancel", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 403
    _login(client, tokens["submit"])
    assert 'id="cancel"' in client.get(f"/jobs/{job_id}").text


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def _login(client: TestClient, token: str) -> None:
    csrf = _csrf(client.get("/login").text)
    r = client.post(
        "/login", data={"token": token, "csrf": csrf, "next": "/"}, follow_redirects=False
    )
    assert r.status_code == 303, r.text


def test_forms_need_the_submit_role_and_the_session_shows_the_role(world):
    client, tokens = world
    _login(client, tokens["worker"])
    assert "(worker)" in client.get("/jobs").text
    r = client.get("/submit", follow_redirects=False)
    assert r.status_code == 403 and "role submit or admin" in r.text
    _login(client, tokens["submit"])
    page = client.get("/submit")
    assert page.status_code == 200 and "(submit)" in page.text


def test_a_revoked_token_ends_its_sessions(cli, tmp_path):
    cli("map")
    token = cli("token", "create", "alice").stdout.strip()
    settings = WebSettings(secret_key="k" * 40, reconcile_seconds=3600)
    with TestClient(
        create_app(cli.db, broker=BrokerSettings(url=None, data_dir=tmp_path), settings=settings)
    ) as client:
        _login(client, token)
        assert client.get("/submit", follow_redirects=False).status_code == 200
        # the app holds the database: revoke through its store, as `token revoke` does on a file
        from forgetmap.services.tokens import create_token, revoke_token

        with client.app.state.store.transaction() as conn:
            revoke_token(conn, "alice")
            create_token(conn, "alice", "admin")  # the same name again must not revive it
        r = client.get("/submit", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"].startswith("/login")
        assert "log out" not in client.get("/jobs").text


def test_logins_expire(cli, tmp_path):
    cli("map")
    token = cli("token", "create", "alice").stdout.strip()
    settings = WebSettings(secret_key="k" * 40, reconcile_seconds=3600, session_days=1 / 86400)
    with TestClient(
        create_app(cli.db, broker=BrokerSettings(url=None, data_dir=tmp_path), settings=settings)
    ) as client:
        _login(client, token)
        assert client.get("/submit", follow_redirects=False).status_code == 200
        time.sleep(1.2)
        assert client.get("/submit", follow_redirects=False).status_code == 303


def test_session_lifetime_defaults_to_seven_days(monkeypatch, tmp_path):
    monkeypatch.delenv("FORGETMAP_SESSION_DAYS", raising=False)
    assert WebSettings.from_env(tmp_path).session_seconds == 7 * 24 * 3600
    monkeypatch.setenv("FORGETMAP_SESSION_DAYS", "0.5")
    assert WebSettings.from_env(tmp_path).session_seconds == 12 * 3600


def test_private_reads_need_a_token_of_any_role(cli, tmp_path):
    cli("map")
    read = cli("token", "create", "reader", "--role", "read").stdout.strip()
    settings = WebSettings(secret_key="k" * 40, reconcile_seconds=3600, private=True)
    with TestClient(
        create_app(cli.db, broker=BrokerSettings(url=None, data_dir=tmp_path), settings=settings)
    ) as client:
        r = client.get("/api/pairs")
        assert r.status_code == 401 and "--role read" in r.json()["detail"]
        assert (
            client.get("/api/pairs", headers={"Authorization": "Bearer fm_nope"}).status_code == 401
        )
        assert client.get("/api/pairs", headers={"Authorization": f"Bearer {read}"}).json() == []
        r = client.post(
            "/api/pairs",
            json={"base": "a", "post": "b"},
            headers={"Authorization": f"Bearer {read}"},
        )
        assert r.status_code == 403


def test_cli_refuses_an_unknown_role(cli):
    cli("map")
    result = cli("token", "create", "x", "--role", "root", ok=False)
    assert result.exit_code == 2 and "read" in result.output and "admin" in result.output


def test_the_local_worker_of_up_gets_a_worker_token(cli):
    from forgetmap.db import open_store
    from forgetmap.services.tokens import Role, token_principal
    from forgetmap.web.up import LOCAL_WORKER, local_worker_token

    cli("map")
    first = local_worker_token(cli.db)
    second = local_worker_token(cli.db)  # each run replaces the previous one
    store = open_store(cli.db)
    try:
        with store.read() as conn:
            assert token_principal(conn, first) is None
            principal = token_principal(conn, second)
    finally:
        store.close()
    assert (principal.name, principal.role) == (LOCAL_WORKER, Role.worker)
