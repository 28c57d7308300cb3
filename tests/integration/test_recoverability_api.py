"""Recoverability through the app: job creation, the worker's upload, pages and exports.

The worker side is played by HTTP calls with the worker's token (the real worker process runs the
whole thing in tests/integration/test_recoverability_job.py); here the uploads are hand-made tables
with known shares (tests/support/recoverability_fixtures.py), so every number on the page can be
checked by hand.
"""

from __future__ import annotations

import io
import re

import pyarrow.csv as pacsv
import pytest
from fastapi.testclient import TestClient
from forgetmap.analysis.recoverability_shares import shares_from_sums
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.web import create_app

from tests.support import recoverability_fixtures as fixtures


@pytest.fixture
def env(cli, tmp_path):
    cli("map")
    token = cli("token", "create", "worker", "--role", "admin").stdout.strip()  # both sides
    (tmp_path / "models" / "base").mkdir(parents=True)
    (tmp_path / "corpora").mkdir()
    (tmp_path / "corpora" / "web.jsonl").write_text('{"text": "hello"}\n')
    settings = WebSettings(
        secret_key="k" * 40,
        model_roots=(tmp_path / "models",),
        corpus_dirs=(tmp_path / "corpora",),
        reconcile_seconds=3600,
    )
    broker = BrokerSettings(url="redis://127.0.0.1:1/0")  # nothing listens: sends fail fast
    client = TestClient(create_app(cli.db, broker=broker, settings=settings))
    client.headers["Authorization"] = f"Bearer {token}"
    with client:
        yield cli, client, token, tmp_path


def _body(tmp_path, **options):
    return {
        "kind": "recover",
        "base": {"name": "tiny-base", "path": str(tmp_path / "models" / "base")},
        "post": {"name": "tiny-sft", "path": "org/tiny-sft"},
        "label": "tiny SFT",
        "corpus": {"source": "local:web.jsonl"},
        "options": {"n_boot": 500, **options},
    }


def _submit(client, tmp_path, **options) -> dict:
    response = client.post("/api/jobs", json=_body(tmp_path, **options))
    assert response.status_code == 201, response.text
    return response.json()


def test_recover_job_needs_a_token_and_allowed_paths(env):
    cli, client, _, tmp_path = env
    before = cli.contents()
    anonymous = client.post("/api/jobs", json=_body(tmp_path), headers={"Authorization": ""})
    assert anonymous.status_code == 401
    outside = _body(tmp_path)
    outside["post"]["path"] = "/etc"
    response = client.post("/api/jobs", json=outside)
    assert response.status_code == 422 and "outside the configured roots" in response.text
    bad = _body(tmp_path)
    bad["corpus"]["source"] = "../../etc/passwd"
    response = client.post("/api/jobs", json=bad)
    assert response.status_code == 422 and "is not 'local:NAME'" in response.text
    assert cli.contents() == before


def test_upload_recompute_page_export_and_reuse(env):
    cli, client, _, tmp_path = env
    created = _submit(client, tmp_path)
    assert created["shards_to_run"] == 1 and created["queue_error"]  # broker down: job kept
    job = client.get(f"/api/jobs/{created['id']}").json()
    assert job["kind"] == "recover" and job["status"] == "queued"
    (shard,) = job["shards"]
    assert shard["benchmark"] == "recover:local:web.jsonl" and shard["model"] == "tiny-sft"
    pair_id = client.get("/api/pairs").json()[0]["id"]
    # a worker claims it: the spec carries both checkpoints, the corpus and the options
    started = client.post(f"/api/shards/{shard['id']}/start", json={"worker": "w"}).json()
    assert started["shard"]["kind"] == "recover"
    assert started["shard"]["spec"]["options"]["max_tokens"] == 2047
    # per-sample results cannot be sent to a recoverability shard
    wrong = client.post(
        "/api/results",
        json={"shard_id": shard["id"], "rows": [{"sample_id": "1", "correct": True}]},
    )
    assert wrong.status_code == 422 and "recoverability results go to" in wrong.text

    before = cli.contents()
    bad = fixtures.upload()
    bad["table"]["post/bias"][3] = float("nan") if False else -5.0
    response = client.post(f"/api/shards/{shard['id']}/recovery", json=bad)
    assert response.status_code == 422 and "finite, non-negative" in response.text
    assert cli.contents() == before  # nothing stored

    stored = client.post(f"/api/shards/{shard['id']}/recovery", json=fixtures.upload())
    assert stored.status_code == 200, stored.text
    client.post(f"/api/shards/{shard['id']}/finish", json={"fingerprint": None})
    assert client.get(f"/api/jobs/{created['id']}").json()["status"] == "done"
    job_page = client.get(f"/jobs/{created['id']}").text
    assert "Recoverability of tiny-base → tiny-sft" in job_page and "#recoverability" in job_page
    assert client.get("/api/jobs").json()[0]["kind"] == "recover"
    assert "recoverability" in client.get("/jobs").text

    (recovery,) = client.get(f"/api/pairs/{pair_id}/recoveries").json()
    post = recovery["summary"]["shares"]["post"]
    assert post["share"]["bias"]["estimate"] == pytest.approx(0.5)
    assert post["symmetric"]["bias"]["estimate"] == pytest.approx(0.4)
    assert "weight_noise" in recovery["summary"]["shares"]
    assert recovery["config"]["corpus"]["source"] == "local:web.jsonl"

    csv = client.get(f"/api/recoveries/{recovery['id']}/documents.csv")
    assert csv.status_code == 200
    table = pacsv.read_csv(io.BytesIO(csv.content)).to_pydict()
    again = shares_from_sums(table, base="base", post="post")
    assert again["symmetric"]["bias"] == pytest.approx(0.4)
    assert client.get(f"/api/recoveries/{recovery['id']}/documents.parquet").status_code == 200

    page = client.get(f"/pairs/{pair_id}").text
    assert 'id="recoverability"' in page and "How to read a share" in page
    assert "40.0 [" in page  # the post model's symmetric bias share
    assert "control: noise on the output weights" in page
    assert "Temperatures fitted on the base itself: 1.500 (temperature)" in page
    assert page.count(">1.0000</td>") == 4  # each model's loss gap, once, on its first row
    column = client.get("/api/recovery", params={"correction": "bias"}).json()
    assert column[0]["pair_id"] == pair_id and column[0]["symmetric"] == pytest.approx(0.4)
    map_page = client.get("/", params={"recovery": "1"}).text
    assert "recovery-data" in map_page

    # the CLI lists and exports the same numbers
    (listed,) = cli.json("recover", "list", "--format", "json", "--correction", "bias")
    assert listed["symmetric"] == pytest.approx(0.4) and listed["pair"] == "tiny SFT"
    assert "40.0 [" in cli("recover", "list", "--correction", "bias").stdout
    out = tmp_path / "docs.csv"
    assert "5 documents" in cli("recover", "export", str(recovery["id"]), str(out)).stdout
    assert pacsv.read_csv(out).to_pydict() == table
    missing = cli("recover", "export", "99", str(out), ok=False)
    assert missing.exit_code == 2 and "does not exist" in missing.stderr
    assert "must end in .csv or .parquet" in cli("recover", "export", "1", "x.txt", ok=False).stderr

    # the same analysis again is reused, not re-run
    reused = _submit(client, tmp_path)
    assert reused["shards_to_run"] == 0
    assert client.get(f"/api/jobs/{reused['id']}").json()["status"] == "done"
    # different settings run again
    assert _submit(client, tmp_path, seed=1)["shards_to_run"] == 1


def test_upload_to_a_cancelled_or_evaluation_shard_is_refused(env):
    cli, client, _, tmp_path = env
    created = _submit(client, tmp_path)
    shard_id = client.get(f"/api/jobs/{created['id']}").json()["shards"][0]["id"]
    client.post(f"/api/jobs/{created['id']}/cancel")
    response = client.post(f"/api/shards/{shard_id}/recovery", json=fixtures.upload())
    assert response.status_code == 422 and "cancelled" in response.text
    assert client.post("/api/shards/999/recovery", json=fixtures.upload()).status_code == 404


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def test_recover_form(env):
    cli, client, token, tmp_path = env
    _submit(client, tmp_path)
    pair_id = client.get("/api/pairs").json()[0]["id"]
    client.headers.pop("Authorization")
    assert client.get(f"/pairs/{pair_id}/recover", follow_redirects=False).status_code == 303
    login = client.post(
        "/login",
        data={"token": token, "csrf": _csrf(client.get("/login").text), "next": "/"},
        follow_redirects=False,
    )
    assert login.status_code == 303
    form = client.get(f"/pairs/{pair_id}/recover").text
    assert str(tmp_path / "models" / "base") in form  # prefilled from the job's model spec
    assert "web.jsonl" in form
    values = {
        "csrf": _csrf(form),
        "base_path": "/etc",
        "post_path": "org/tiny-sft",
        "corpus_kind": "local",
        "local_corpus": "missing.txt",
        "max_docs": "2",
        "max_tokens": "512",
        "k": "64",
        "seed": "0",
        "text_field": "text",
    }
    page = client.post(f"/pairs/{pair_id}/recover", data=values)
    assert "outside the configured roots" in page.text
    assert "choose a local corpus" in page.text and "documents must be between 3" in page.text
    values.update(
        base_path=str(tmp_path / "models" / "base"), local_corpus="web.jsonl", max_docs="50"
    )
    done = client.post(f"/pairs/{pair_id}/recover", data=values, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"].startswith("/jobs/")
    job = client.get(done.headers["location"].split("?")[0].replace("/jobs/", "/api/jobs/")).json()
    assert job["request"]["options"]["k"] == 64 and job["request"]["corpus"]["max_docs"] == 50
