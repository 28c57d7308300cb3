"""Security: logins, CSRF, tokens, model path roots, private mode."""

from __future__ import annotations

import html as html_lib
import re

import pytest
from fastapi.testclient import TestClient
from forgetmap.core.errors import InputError
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.runtime.paths import ModelPathError, check_model_path
from forgetmap.web import create_app


@pytest.fixture
def setup(cli, tmp_path):
    cli("map")  # creates the database
    token = cli("token", "create", "alice").stdout.strip()
    (tmp_path / "models" / "ok").mkdir(parents=True)
    settings = WebSettings(
        secret_key="k" * 40, model_roots=(tmp_path / "models",), reconcile_seconds=3600
    )
    broker = BrokerSettings(url="redis://127.0.0.1:1/0")  # nothing listens there: sends fail fast
    return cli, token, settings, broker, tmp_path


def _client(setup, **overrides) -> TestClient:
    cli, _, settings, broker, _ = setup
    if overrides:
        settings = WebSettings(**{**settings.__dict__, **overrides})
    return TestClient(create_app(cli.db, broker=broker, settings=settings))


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def _login(client: TestClient, token: str) -> None:
    csrf = _csrf(client.get("/login").text)
    response = client.post(
        "/login", data={"token": token, "csrf": csrf, "next": "/submit"}, follow_redirects=False
    )
    assert response.status_code == 303 and response.headers["location"] == "/submit"


FORM = {
    "base_path": "org/base-model",
    "post_path": "org/post-model",
    "suite": "benchmarks",
    "benchmarks": "piqa",
    "seeds": "1",
    "engine": "vllm",
    "mode": "generate",
    "temperature": "0.6",
    "top_p": "0.95",
    "max_tokens": "64",
    "stage": "sft",
    "base_prompting": "base",
    "post_prompting": "chat",
}


def test_submit_without_login_is_refused(setup):
    with _client(setup) as client:
        page = client.get("/submit", follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"].startswith("/login")
        response = client.post("/submit", data=FORM, follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"].startswith("/login")
        assert client.get("/api/jobs").json() == []


def test_submit_with_bad_or_missing_csrf_is_refused(setup):
    _, token, *_ = setup
    with _client(setup) as client:
        _login(client, token)
        for csrf in ("", "forged-value"):
            response = client.post("/submit", data={**FORM, "csrf": csrf}, follow_redirects=False)
            assert response.status_code == 403
            assert "security token" in response.text
        assert client.get("/api/jobs").json() == []
        ok = client.post(
            "/submit",
            data={**FORM, "csrf": _csrf(client.get("/submit").text)},
            follow_redirects=False,
        )
        assert ok.status_code == 303 and ok.headers["location"].startswith("/jobs/1")
        # the broker is down: the job is kept and the page says so
        assert "queue=down" in ok.headers["location"]
        assert client.get("/api/jobs/1").json()["status"] == "queued"


def test_login_rejects_bad_tokens_and_foreign_redirects(setup):
    _, token, *_ = setup
    with _client(setup) as client:
        csrf = _csrf(client.get("/login").text)
        bad = client.post("/login", data={"token": "fm_wrong", "csrf": csrf, "next": "/"})
        assert "not valid" in bad.text
        good = client.post(
            "/login",
            data={"token": token, "csrf": csrf, "next": "https://evil.example/"},
            follow_redirects=False,
        )
        assert good.headers["location"] == "/"


def test_write_api_needs_a_valid_token(setup):
    _, token, *_ = setup
    with _client(setup) as client:
        for headers in ({}, {"Authorization": "Bearer fm_wrong"}, {"Authorization": token}):
            response = client.post("/api/pairs", json={"base": "a", "post": "b"}, headers=headers)
            assert response.status_code == 401
        response = client.post(
            "/api/pairs",
            json={"base": "a", "post": "b"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 422 and "unknown base model 'a'" in response.text


def test_revoked_token_stops_working(setup):
    cli, token, *_ = setup
    cli("token", "revoke", "alice")
    with _client(setup) as client:
        assert (
            client.post(
                "/api/pairs",
                json={"base": "a", "post": "b"},
                headers={"Authorization": f"Bearer {token}"},
            ).status_code
            == 401
        )


def test_tokens_are_stored_hashed(setup):
    cli, token, *_ = setup
    contents = cli.contents()["api_tokens"]
    assert token not in repr(contents)


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "{root}/../outside",
        "{root}/ok/../../outside",
        "../models/ok",
        "~/x",
        "{root}-evil/ok",
        "{link}",
    ],
)
def test_model_paths_outside_the_roots_are_refused(tmp_path, path):
    root = tmp_path / "models"
    (root / "ok").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "link").symlink_to(tmp_path / "outside")  # a symlink inside a root pointing out of it
    with pytest.raises(ModelPathError, match="outside the configured roots"):
        check_model_path(path.format(root=root, link=root / "link"), [root])


def test_model_paths_inside_the_roots_and_hub_ids_are_allowed(tmp_path):
    root = tmp_path / "models"
    (root / "ok").mkdir(parents=True)
    assert check_model_path(str(root / "ok"), [root]) == str((root / "ok").resolve())
    assert check_model_path("Qwen/Qwen2.5-7B-Instruct", [root]) == "Qwen/Qwen2.5-7B-Instruct"
    with pytest.raises(InputError, match="no model roots configured"):
        check_model_path(str(root / "ok"), [])


def test_form_refuses_a_path_trick_inline(setup):
    _, token, _, _, tmp_path = setup
    with _client(setup) as client:
        _login(client, token)
        csrf = _csrf(client.get("/submit").text)
        body = {**FORM, "csrf": csrf, "base_path": str(tmp_path / "models" / ".." / ".." / "etc")}
        response = client.post("/submit", data=body, headers={"HX-Request": "true"})
        assert response.status_code == 200 and "outside the configured roots" in response.text
        assert "<html" not in response.text  # an HTMX fragment
        assert client.get("/api/jobs").json() == []


def _field_errors(html: str) -> dict[str, str]:
    return {
        f: html_lib.unescape(m) for f, m in re.findall(r'data-field="([a-z_]+)">([^<]*)<', html)
    }


def test_form_and_api_share_the_boundarys_limits(setup):
    """The form reports the boundary's problems beside their fields; the API refuses the same
    values (one set of limits: temperature <= 2, stages from the list)."""
    _, token, _, _, _ = setup
    with _client(setup) as client:
        _login(client, token)
        csrf = _csrf(client.get("/submit").text)
        body = {
            **FORM,
            "csrf": csrf,
            "temperature": "2.5",
            "stage": "dpo",
            "post_prompting": "x",
            "max_tokens": "ten",
        }
        response = client.post("/submit", data=body, headers={"HX-Request": "true"})
        errors = _field_errors(response.text)
        assert errors["temperature"] == "Input should be less than or equal to 2"
        assert errors["stage"].startswith("Input should be 'instruct', 'sft'")
        assert errors["post_prompting"] == "Input should be 'chat' or 'base'"
        assert "valid integer" in errors["max_tokens"]
        assert client.get("/api/jobs").json() == []
        job = {"models": [{"name": "m", "path": "org/m"}], "benchmarks": ["piqa"]}
        auth = {"Authorization": f"Bearer {token}"}
        for bad in (
            {**job, "config": {"temperature": 2.5}},
            {**job, "pairs": [{"base": "m", "post": "m", "stage": "dpo"}]},
        ):
            assert client.post("/api/jobs", json=bad, headers=auth).status_code == 422
        body.update(temperature="2", stage="rl", post_prompting="chat", max_tokens="64")
        response = client.post("/submit", data=body, follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"].startswith("/jobs/")
        assert client.get("/api/jobs").json()[0]["status"] == "queued"


def test_private_mode_hides_pages_and_api_without_login(setup):
    _, token, *_ = setup
    with _client(setup, private=True) as client:
        page = client.get("/", follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"].startswith("/login")
        assert client.get("/api/map").status_code == 401
        assert (
            client.get("/api/map", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        )
        assert client.get("/healthz").status_code == 200
        _login(client, token)
        assert client.get("/").status_code == 200


def test_reconciler_resends_unsent_and_stale_shards(setup):
    """Broker down at submission, then back: the reconciler sends what never left; a running
    shard whose worker went silent is sent again."""
    from forgetmap.services import jobs
    from forgetmap.services.queue import Reconciler

    class FakeBrokerUp:  # records what would be sent
        def __init__(self):
            self.sent = []

        def send(self, ids):
            self.sent += ids
            return list(ids), None

        def held(self):  # every message sent is still waiting for a worker
            return set(self.sent)

    cli, token, settings, broker, _ = setup
    with _client(setup) as client:
        body = {
            "models": [{"name": "a", "path": "org/a"}, {"name": "b", "path": "org/b"}],
            "benchmarks": ["piqa"],
            "seeds": [0],
            "config": {"engine": "vllm"},
        }
        created = client.post(
            "/api/jobs", json=body, headers={"Authorization": f"Bearer {token}"}
        ).json()
        assert created["sent"] == 0 and created["shards_to_run"] == 2
        store = client.app.state.store
        up = FakeBrokerUp()
        reconciler = Reconciler(store, up, interval=3600, stale_after=0.5, grace=0)
        assert reconciler.run_once() == 2 and up.sent == [1, 2]
        assert reconciler.run_once() == 0  # nothing left unsent
        with store.transaction() as conn:
            jobs.start_shard(conn, 1, "w1")
        import time

        time.sleep(1.2)
        assert reconciler.run_once() == 1 and up.sent[-1] == 1  # silent for longer than stale_after


def test_job_pages_name_what_they_evaluate_escaped(setup):
    """The job list and a job's page say what it evaluates (the pair's label, else base -> post):
    names typed by users are shown as text, never as markup."""
    _, token, _, _, _ = setup
    label = '<b id="x">bold</b> & co'
    job = {
        "models": [{"name": "m<i>1</i>", "path": "org/m1"}, {"name": "m2", "path": "org/m2"}],
        "benchmarks": ["piqa"],
        "seeds": [0],
        "pairs": [{"base": "m<i>1</i>", "post": "m2", "label": label}],
    }
    unlabelled = {**job, "pairs": [{"base": "m<i>1</i>", "post": "m2"}], "seeds": [1]}
    auth = {"Authorization": f"Bearer {token}"}
    with _client(setup) as client:
        for body in (job, unlabelled):
            assert client.post("/api/jobs", json=body, headers=auth).status_code == 201
        listed = client.get("/api/jobs").json()
        assert [j["subject"] for j in listed] == ["m<i>1</i> -> m2", label]
        assert client.get(f"/api/jobs/{listed[1]['id']}").json()["subject"] == label
        for html in (client.get("/jobs").text, client.get(f"/jobs/{listed[1]['id']}").text):
            assert "&lt;b id=&#34;x&#34;&gt;bold&lt;/b&gt; &amp; co" in html
            assert '<b id="x">' not in html and "<i>1</i>" not in html


def test_the_form_takes_a_training_run_as_a_series(setup):
    """Evaluate: a training run. The base and a glob of checkpoint folders go through the same
    boundary as POST /api/jobs with "kind": "series"; problems show beside their fields."""
    _, token, _, _, tmp_path = setup
    for step in (10, 20):
        (tmp_path / "models" / "run" / f"checkpoint-{step}").mkdir(parents=True)
    run = {
        **FORM,
        "target": "series",
        "series": "sft-run",
        "base_path": str(tmp_path / "models" / "ok"),
        "post_path": "",
        "checkpoints": str(tmp_path / "models" / "run" / "checkpoint-*"),
    }
    with _client(setup) as client:
        _login(client, token)
        csrf = _csrf(client.get("/submit").text)
        for change, field, message in (
            ({"checkpoints": ""}, "checkpoints", "list the checkpoint folders"),
            ({"checkpoints": "/etc"}, "checkpoints", "outside the configured roots"),
            (
                {"checkpoints": str(tmp_path / "models" / "nothing-*")},
                "checkpoints",
                "no checkpoint folder matches",
            ),
            ({"series": ""}, "series", "at least 1 character"),
        ):
            response = client.post(
                "/submit", data={**run, **change, "csrf": csrf}, headers={"HX-Request": "true"}
            )
            assert message in _field_errors(response.text).get(field, ""), (change, response.text)
        assert client.get("/api/jobs").json() == []
        response = client.post("/submit", data={**run, "csrf": csrf}, follow_redirects=False)
        # the queue is down in this setup: the first job's page says so (else: /series/1)
        jobs = client.get("/api/jobs").json()
        assert response.status_code == 303
        assert response.headers["location"] == f"/jobs/{jobs[-1]['id']}?queue=down"
        assert [j["subject"] for j in jobs] == [
            "series sft-run, step 20",
            "series sft-run, step 10",
        ]
        assert {j["owner"] for j in jobs} == {"alice"}
        assert client.get("/api/series").json()[0]["steps"] == [10, 20]
