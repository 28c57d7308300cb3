"""POST /api/checkpoints: one job per checkpoint folder, placed by step, never twice;
a failed evaluation is retried (bounded); the base is evaluated once. No worker here: the queue is
the embedded one and shards stay queued (tests/integration/test_watch.py runs a real worker)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from forgetmap.runtime.config import WebSettings
from forgetmap.web import create_app


@pytest.fixture
def app_client(cli, tmp_path):
    models = tmp_path / "models"
    for name in ("base", "run/checkpoint-20", "run/checkpoint-10", "outside"):
        (models / name).mkdir(parents=True)
    token = cli("token", "create", "watcher").stdout.strip()
    settings = WebSettings(secret_key="k", model_roots=(models,), reconcile_seconds=3600)
    with TestClient(create_app(cli.db, settings=settings)) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        client.models = models
        yield client


def body(client, step, **extra):
    return {
        "series": "run",
        "base": "base",
        "base_path": str(client.models / "base"),
        "folder": str(client.models / "run" / f"checkpoint-{step}"),
        "step": step,
        "benchmarks": ["local:toy.jsonl"],
        "seeds": [0, 1],
        "config": {"engine": "transformers", "max_tokens": 8},
        **extra,
    }


def test_checkpoints_are_submitted_once_and_placed_by_step(app_client):
    first = app_client.post("/api/checkpoints", json=body(app_client, 20))
    assert first.status_code == 200, first.text
    assert first.json()["status"] == "submitted" and first.json()["model"] == "run/checkpoint-20"
    assert first.json()["shards_to_run"] == 4  # base and checkpoint x 2 seeds
    second = app_client.post("/api/checkpoints", json=body(app_client, 10)).json()
    # the base's shards are already on their way: only the checkpoint's two
    assert (second["status"], second["shards_to_run"]) == ("submitted", 2)
    again = app_client.post("/api/checkpoints", json=body(app_client, 20)).json()
    assert (again["status"], again["job_id"], again["shards_to_run"]) == (
        "already",
        first.json()["job_id"],
        0,
    )
    assert app_client.get("/api/series").json() == [
        {"id": 1, "name": "run", "base": "base", "steps": [10, 20], "axis": "step"}
    ]
    jobs = app_client.get("/api/jobs").json()
    assert len(jobs) == 2
    # the job list and each job name what they evaluate: the series and the step
    assert [j["subject"] for j in jobs] == ["series run, step 10", "series run, step 20"]
    detail = app_client.get(f"/api/jobs/{first.json()['job_id']}").json()
    assert (detail["subject"], detail["series_id"], detail["step"]) == (
        "series run, step 20",
        1,
        20,
    )
    page = app_client.get("/jobs")
    assert page.status_code == 200 and "series run, step 10" in page.text
    job_page = app_client.get(f"/jobs/{first.json()['job_id']}").text
    assert "Evaluates series run, step 20" in job_page and 'href="/series/1"' in job_page
    pairs = {p["post"]: p for p in app_client.get("/api/pairs").json()}
    assert pairs["run/checkpoint-10"]["label"] == "run @ 10"


def test_a_failed_evaluation_is_retried_then_given_up(app_client, cli):
    worker = {
        "Authorization": "Bearer "
        f"{cli('token', 'create', 'gpu', '--role', 'worker').stdout.strip()}"
    }
    job_id = app_client.post("/api/checkpoints", json=body(app_client, 20)).json()["job_id"]
    statuses = []
    for _ in range(3):
        detail = app_client.get(f"/api/jobs/{job_id}").json()
        for shard in detail["shards"]:
            if shard["status"] == "queued":
                fail = app_client.post(
                    f"/api/shards/{shard['id']}/fail", json={"error": "boom"}, headers=worker
                )
                assert fail.status_code == 200
        answer = app_client.post("/api/checkpoints", json=body(app_client, 20)).json()
        statuses.append((answer["status"], answer["job_id"]))
    assert statuses == [("retried", job_id), ("retried", job_id), ("gave_up", job_id)]
    assert len(app_client.get("/api/jobs").json()) == 1


def test_bad_submissions_are_refused(app_client):
    outside = app_client.post("/api/checkpoints", json=body(app_client, 20, folder="/etc"))
    assert outside.status_code == 422 and "outside the configured roots" in outside.text
    no_base = app_client.post("/api/checkpoints", json=body(app_client, 20, base_path=None))
    assert no_base.status_code == 422 and "--base-path" in no_base.text
    assert app_client.post("/api/checkpoints", json=body(app_client, -1)).status_code == 422
    del app_client.headers["Authorization"]
    assert app_client.post("/api/checkpoints", json=body(app_client, 20)).status_code == 401
    assert app_client.get("/api/series").json() == []


def test_post_api_jobs_takes_a_whole_run_by_glob(app_client):
    models = app_client.models
    (models / "run" / "tmp-checkpoint-30").mkdir()  # not matched by checkpoint-*
    run = {
        "kind": "series",
        "series": "run",
        "base": "base",
        "base_path": str(models / "base"),
        "checkpoints": [str(models / "run" / "checkpoint-*")],
        "benchmarks": ["local:toy.jsonl"],
        "seeds": [0],
        "config": {"engine": "transformers"},
        "stage": "sft",
    }
    response = app_client.post("/api/jobs", json=run)
    assert response.status_code == 201, response.text
    out = response.json()
    assert [c["step"] for c in out["checkpoints"]] == [10, 20]
    # the run's stage is its pairs': a map filtered by stage keeps it
    assert {p["stage"] for p in app_client.get("/api/pairs").json()} == {"sft"}
    assert [c["status"] for c in out["checkpoints"]] == ["submitted", "submitted"]
    assert out["id"] == out["jobs"][0] and len(out["jobs"]) == 2
    assert out["shards_to_run"] == 3  # the base once, then one shard per checkpoint
    assert app_client.get("/api/series").json()[0]["steps"] == [10, 20]
    # the same run again: nothing new
    again = app_client.post("/api/jobs", json=run).json()
    assert [c["status"] for c in again["checkpoints"]] == ["already", "already"]
    assert again["shards_to_run"] == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"checkpoints": ["nowhere/checkpoint-*"]}, "no checkpoint folder matches"),
        # a glob outside the roots lists nothing (tests/integration/test_model_paths.py)
        ({"checkpoints": ["/nowhere/checkpoint-*"]}, "outside the configured roots"),
        ({"checkpoints": ["/etc"]}, "outside the configured roots"),
        # typed body (app/contract/jobs.py SeriesJobIn): refused before anything runs
        ({"checkpoints": []}, "checkpoints"),
        ({"series": None}, "series"),
        ({"stage": "bogus"}, "stage"),
    ],
)
def test_bad_run_requests_are_refused(app_client, change, message):
    run = {
        "kind": "series",
        "series": "run",
        "base": "base",
        "base_path": str(app_client.models / "base"),
        "checkpoints": [str(app_client.models / "run" / "checkpoint-10")],
        "benchmarks": ["local:toy.jsonl"],
        **change,
    }
    response = app_client.post("/api/jobs", json=run)
    assert response.status_code == 422 and message in response.text, response.text
    assert app_client.get("/api/jobs").json() == []


def test_a_folder_without_a_step_is_refused(app_client):
    folder = app_client.models / "run" / "final"
    folder.mkdir()
    run = {
        "kind": "series",
        "series": "run",
        "base": "base",
        "base_path": str(app_client.models / "base"),
        "checkpoints": [str(folder)],
        "benchmarks": ["local:toy.jsonl"],
    }
    response = app_client.post("/api/jobs", json=run)
    assert response.status_code == 422 and "no step for" in response.text
