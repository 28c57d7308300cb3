"""Model paths confined at every entry point (issue 50, row 4): ``POST /api/jobs`` of each kind
(evaluate, recover, series), the submission and recoverability forms, ``POST /api/checkpoints``
and the worker's own check before it loads a model. Each attack as it was written is refused with
one line naming the root, and the legitimate use beside it still works. The rule itself is
tested in tests/unit/test_model_paths_rule.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from forgetmap.contract.jobs import EvaluateJobIn, ModelIn
from forgetmap.contract.recovery import RecoverJobIn
from forgetmap.contract.shards import ClaimedShard
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.services.jobs import create_job
from forgetmap.services.recovery import create_recovery_job
from forgetmap.web import create_app
from forgetmap.worker.client import AppClient
from forgetmap.worker.evaluate import EngineCache, ShardFailed, run_shard
from forgetmap.worker.recoverability_job import run_recover_shard
from forgetmap.worker.settings import WorkerSettings

from tests.support.worker_env import write_toy_benchmark

OUTSIDE = "outside the configured roots"
HUB_OFF = "Hugging Face ids are off (FORGETMAP_ALLOW_HUB_MODELS=false)"
IN_CWD = "in the working directory"
# (the path as the attacker wrote it, whether the app allows hub ids, what the refusal says)
ATTACKS = [
    ("/etc", True, OUTSIDE),
    ("root/../..", True, OUTSIDE),
    ("{link}", True, OUTSIDE),  # a symlink inside the root pointing out of it
    ("link", True, OUTSIDE),  # the same, relative to the root
    ("etc/ssl", False, HUB_OFF),
    ("tmp/x", True, IN_CWD),  # ./tmp/x exists: transformers would load it
    ("tmp/x", False, IN_CWD),
]
IDS = [f"{path}-hub-{'on' if hub else 'off'}" for path, hub, _ in ATTACKS]


@pytest.fixture
def disk(tmp_path, monkeypatch) -> dict[str, Path]:
    """The model root (folders, a symlink out), a corpus, a benchmark, and a working directory
    holding ``tmp/x``; the test runs there."""
    root = tmp_path / "models"
    for folder in ("ok", "base", "run/checkpoint-10", "run/checkpoint-20"):
        (root / folder).mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "link").symlink_to(tmp_path / "outside")
    (tmp_path / "cwd" / "tmp" / "x").mkdir(parents=True)
    (tmp_path / "corpora").mkdir()
    (tmp_path / "corpora" / "web.jsonl").write_text('{"text": "hello"}\n')
    write_toy_benchmark(tmp_path / "benchmarks" / "toy.jsonl", 4)
    monkeypatch.chdir(tmp_path / "cwd")
    return {"root": root, "resolved": root.resolve(), "tmp": tmp_path}


@pytest.fixture
def tokens(cli) -> dict[str, str]:
    cli("map")  # creates the database
    return {
        role: cli("token", "create", role, "--role", role).stdout.strip()
        for role in ("submit", "worker")
    }


def _app(cli, disk, tokens, *, allow_hub: bool) -> TestClient:
    settings = WebSettings(
        secret_key="k" * 40,
        model_roots=(disk["root"],),
        allow_hub_models=allow_hub,
        corpus_dirs=(disk["tmp"] / "corpora",),
        reconcile_seconds=3600,
    )
    broker = BrokerSettings(url="redis://127.0.0.1:1/0")  # nothing listens there: sends fail fast
    client = TestClient(create_app(cli.db, broker=broker, settings=settings))
    client.headers["Authorization"] = f"Bearer {tokens['submit']}"
    return client


def _attack(path: str, disk) -> str:
    return path.format(link=disk["root"] / "link")


def _ok(disk) -> str:
    return str(disk["root"] / "ok")


# ------------------------------------------------------------------------- POST /api/jobs


def _bodies(attack: str, disk) -> dict[str, dict]:
    """Every kind of ``POST /api/jobs`` with the attack in each place that names a model."""
    ok, checkpoint = _ok(disk), str(disk["root"] / "run" / "checkpoint-10")
    evaluate = {"benchmarks": ["piqa"], "seeds": [0], "pairs": [{"base": "a", "post": "b"}]}
    recover = {"kind": "recover", "corpus": {"source": "local:web.jsonl"}}
    series = {"kind": "series", "series": "run", "base": "base", "benchmarks": ["piqa"]}
    return {
        "evaluate": {
            **evaluate,
            "models": [{"name": "a", "path": attack}, {"name": "b", "path": ok}],
        },
        "evaluate-second": {
            **evaluate,
            "models": [{"name": "a", "path": ok}, {"name": "b", "path": attack}],
        },
        "recover-base": {
            **recover,
            "base": {"name": "a", "path": attack},
            "post": {"name": "b", "path": ok},
        },
        "recover-post": {
            **recover,
            "base": {"name": "a", "path": ok},
            "post": {"name": "b", "path": attack},
        },
        "series-base": {**series, "base_path": attack, "checkpoints": [checkpoint]},
        "series-checkpoint": {**series, "base_path": ok, "checkpoints": [attack]},
    }


@pytest.mark.parametrize(("path", "allow_hub", "message"), ATTACKS, ids=IDS)
def test_every_job_kind_refuses_the_attacks(cli, disk, tokens, path, allow_hub, message):
    with _app(cli, disk, tokens, allow_hub=allow_hub) as client:
        for where, body in _bodies(_attack(path, disk), disk).items():
            response = client.post("/api/jobs", json=body)
            assert response.status_code == 422, (where, response.text)
            detail = response.json()["detail"]
            assert message in detail and str(disk["resolved"]) in detail, (where, detail)
            assert "\n" not in detail
        assert client.get("/api/jobs").json() == []


def test_every_job_kind_takes_folders_under_the_root_and_hub_ids(cli, disk, tokens):
    ok = str(disk["resolved"] / "ok")
    with _app(cli, disk, tokens, allow_hub=True) as client:
        body = {
            "models": [
                {"name": "abs", "path": _ok(disk)},
                {"name": "rel", "path": "ok"},
                {"name": "hub", "path": "org/hub-model"},
            ],
            "benchmarks": ["piqa"],
            "seeds": [0],
        }
        created = client.post("/api/jobs", json=body)
        assert created.status_code == 201, created.text
        job = client.get(f"/api/jobs/{created.json()['id']}").json()
        # the job keeps what the worker will load: resolved folders, the hub id as given
        assert [m["path"] for m in job["request"]["models"]] == [ok, ok, "org/hub-model"]

        recover = {
            "kind": "recover",
            "base": {"name": "rb", "path": "ok"},
            "post": {"name": "rp", "path": "org/post"},
            "corpus": {"source": "local:web.jsonl"},
        }
        created = client.post("/api/jobs", json=recover)
        assert created.status_code == 201, created.text
        request = client.get(f"/api/jobs/{created.json()['id']}").json()["request"]
        assert (request["base"]["path"], request["post"]["path"]) == (ok, "org/post")

        run = {
            "kind": "series",
            "series": "run",
            "base": "base",
            "base_path": "org/base",
            "checkpoints": ["run/checkpoint-*"],
            "benchmarks": ["piqa"],
            "seeds": [0],
        }
        created = client.post("/api/jobs", json=run)
        assert created.status_code == 201, created.text
        assert [c["step"] for c in created.json()["checkpoints"]] == [10, 20]


def test_with_hub_ids_off_only_folders_under_the_root_load(cli, disk, tokens):
    with _app(cli, disk, tokens, allow_hub=False) as client:
        body = {
            "models": [{"name": "abs", "path": _ok(disk)}, {"name": "rel", "path": "ok"}],
            "benchmarks": ["piqa"],
            "seeds": [0],
        }
        assert client.post("/api/jobs", json=body).status_code == 201
        body["models"][1]["path"] = "Qwen/Qwen2.5-7B-Instruct"
        refused = client.post("/api/jobs", json=body)
        assert refused.status_code == 422 and HUB_OFF in refused.text


def test_a_checkpoint_glob_outside_the_root_lists_nothing(cli, disk, tokens):
    run = {
        "kind": "series",
        "series": "run",
        "base": "base",
        "base_path": _ok(disk),
        "benchmarks": ["piqa"],
    }
    with _app(cli, disk, tokens, allow_hub=True) as client:
        for pattern in ("/etc/*", "/nowhere/checkpoint-*", f"{disk['root']}/*/../../*"):
            response = client.post("/api/jobs", json={**run, "checkpoints": [pattern]})
            assert response.status_code == 422 and OUTSIDE in response.text, response.text
        assert client.get("/api/jobs").json() == []


# ------------------------------------------------------------------ POST /api/checkpoints


def _checkpoint(disk, **change) -> dict:
    return {
        "series": "run",
        "base": "base",
        "base_path": _ok(disk),
        "step": 10,
        "folder": str(disk["root"] / "run" / "checkpoint-10"),
        "benchmarks": ["piqa"],
        "seeds": [0],
        **change,
    }


@pytest.mark.parametrize(("path", "allow_hub", "message"), ATTACKS, ids=IDS)
def test_the_checkpoints_route_refuses_the_attacks(cli, disk, tokens, path, allow_hub, message):
    with _app(cli, disk, tokens, allow_hub=allow_hub) as client:
        for field in ("folder", "base_path"):
            body = _checkpoint(disk, **{field: _attack(path, disk)})
            response = client.post("/api/checkpoints", json=body)
            assert response.status_code == 422 and message in response.text, (field, response.text)
        assert client.get("/api/jobs").json() == []


def test_the_checkpoints_route_takes_folders_under_the_root(cli, disk, tokens):
    with _app(cli, disk, tokens, allow_hub=True) as client:
        answer = client.post("/api/checkpoints", json=_checkpoint(disk, folder="run/checkpoint-10"))
        assert answer.status_code == 200 and answer.json()["status"] == "submitted", answer.text
        hub_base = _checkpoint(
            disk, step=20, folder=str(disk["root"] / "run" / "checkpoint-20"), base_path="org/base"
        )
        assert client.post("/api/checkpoints", json=hub_base).json()["status"] == "submitted"


# --------------------------------------------------------------------------------- the forms


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def _logged_in(client: TestClient, token: str) -> None:
    client.headers.pop("Authorization")
    csrf = _csrf(client.get("/login").text)
    login = client.post(
        "/login", data={"token": token, "csrf": csrf, "next": "/"}, follow_redirects=False
    )
    assert login.status_code == 303


FORM = {
    "base_name": "base",
    "post_name": "post",
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


@pytest.mark.parametrize(("path", "allow_hub", "message"), ATTACKS, ids=IDS)
def test_the_forms_refuse_the_attacks(cli, disk, tokens, path, allow_hub, message):
    attack = _attack(path, disk)
    with _app(cli, disk, tokens, allow_hub=allow_hub) as client:
        pair = _recover_pair(client)
        _logged_in(client, tokens["submit"])
        csrf = _csrf(client.get("/submit").text)
        values = {**FORM, "csrf": csrf, "base_path": attack, "post_path": _ok(disk)}
        for form in (
            values,
            {**values, "base_path": _ok(disk), "post_path": attack},
            {
                **values,
                "target": "series",
                "series": "run",
                "base_path": _ok(disk),
                "checkpoints": attack,
            },
        ):
            page = client.post("/submit", data=form, follow_redirects=False)
            assert page.status_code == 200 and message in page.text, form
        recover = {
            "csrf": csrf,
            "base_path": attack,
            "post_path": _ok(disk),
            "corpus_kind": "local",
            "local_corpus": "web.jsonl",
            "max_docs": "50",
            "max_tokens": "512",
            "k": "64",
            "seed": "0",
            "text_field": "text",
        }
        page = client.post(f"/pairs/{pair}/recover", data=recover, follow_redirects=False)
        assert page.status_code == 200 and message in page.text
        assert len(client.get("/api/jobs").json()) == 1  # only the recover job that made the pair


def _recover_pair(client: TestClient) -> int:
    """A pair to open the recoverability form on (made by a recover job through the API)."""
    body = {
        "kind": "recover",
        "base": {"name": "rb", "path": "ok"},
        "post": {"name": "rp", "path": "ok"},
        "corpus": {"source": "local:web.jsonl"},
    }
    assert client.post("/api/jobs", json=body).status_code == 201
    return client.get("/api/pairs").json()[0]["id"]


def test_the_forms_take_folders_under_the_root(cli, disk, tokens):
    ok = str(disk["resolved"] / "ok")
    with _app(cli, disk, tokens, allow_hub=False) as client:
        pair = _recover_pair(client)
        _logged_in(client, tokens["submit"])
        csrf = _csrf(client.get("/submit").text)
        form = {**FORM, "csrf": csrf, "base_path": "ok", "post_path": _ok(disk)}
        done = client.post("/submit", data=form, follow_redirects=False)
        assert done.status_code == 303, done.text
        job_id = int(done.headers["location"].split("?")[0].rsplit("/", 1)[-1])
        job = client.get(f"/api/jobs/{job_id}").json()
        assert [m["path"] for m in job["request"]["models"]] == [ok, ok]
        series = {**form, "target": "series", "series": "run", "checkpoints": "run/checkpoint-*"}
        done = client.post("/submit", data=series, follow_redirects=False)
        assert done.status_code == 303, done.text
        assert client.get("/api/series").json()[0]["steps"] == [10, 20]
        recover = {
            "csrf": csrf,
            "base_path": "ok",
            "post_path": _ok(disk),
            "corpus_kind": "local",
            "local_corpus": "web.jsonl",
            "max_docs": "50",
            "max_tokens": "512",
            "k": "64",
            "seed": "0",
            "text_field": "text",
        }
        done = client.post(f"/pairs/{pair}/recover", data=recover, follow_redirects=False)
        assert done.status_code == 303, done.text


# ------------------------------------------------------------------- the worker's own check


def _claimed(client: TestClient, tokens, shard_id: int) -> dict:
    """The shard as the worker gets it from the app (``POST /api/shards/{id}/start``)."""
    claim = client.post(
        f"/api/shards/{shard_id}/start",
        json={"worker": "w"},
        headers={"Authorization": f"Bearer {tokens['worker']}"},
    )
    assert claim.status_code == 200 and claim.json()["run"], claim.text
    return claim.json()["shard"]


def _row_written_around_the_app(client: TestClient, kind: str, path: str) -> int:
    """A job row that reached the database without the app's check (an older app, a direct
    write): written through the services, which take any path."""
    store = client.app.state.store
    with store.transaction() as conn:
        if kind == "evaluate":
            body = EvaluateJobIn(
                models=[ModelIn(name="m", path=path)], benchmarks=["local:toy.jsonl"], seeds=[0]
            )
            _, shard_ids = create_job(conn, body)
        else:
            body = RecoverJobIn.model_validate(
                {
                    "kind": "recover",
                    "base": {"name": "rb", "path": path},
                    "post": {"name": "rp", "path": path},
                    "corpus": {"source": "local:web.jsonl"},
                }
            )
            _, shard_ids = create_recovery_job(conn, body)
    return shard_ids[0]


def _run_in_worker(shard: dict, disk, *, allow_hub: bool, kind: str) -> tuple[str, list]:
    """Run the claimed shard in the worker's code, up to where it would load the model: the
    engine factory records what it was asked to load and stops there. Returns (why the shard
    failed, what was loaded)."""
    loaded: list[str] = []

    def factory(name: str, path: str, **options):
        loaded.append(path)
        raise RuntimeError("the test stops before a model loads")

    settings = WorkerSettings(
        app_url="http://127.0.0.1:1",
        token="fm_unused",
        model_roots=(disk["root"],),
        allow_hub_models=allow_hub,
        benchmark_dirs=(disk["tmp"] / "benchmarks",),
    )
    client = AppClient(settings.app_url, settings.token, worker_name="w")  # never reached
    try:
        with pytest.raises(ShardFailed) as failed:
            claimed = ClaimedShard.model_validate(shard)  # as the worker's client reads it
            if kind == "evaluate":
                run_shard(claimed, client=client, engines=EngineCache(factory), settings=settings)
            else:
                run_recover_shard(claimed, client=client, settings=settings)
    finally:
        client.close()
    return str(failed.value), loaded


@pytest.mark.parametrize("kind", ["evaluate", "recover"])
@pytest.mark.parametrize(("path", "allow_hub", "message"), ATTACKS, ids=IDS)
def test_the_worker_refuses_a_row_that_got_in_another_way(
    cli, disk, tokens, kind, path, allow_hub, message
):
    with _app(cli, disk, tokens, allow_hub=True) as client:
        shard_id = _row_written_around_the_app(client, kind, _attack(path, disk))
        shard = _claimed(client, tokens, shard_id)
    why, loaded = _run_in_worker(shard, disk, allow_hub=allow_hub, kind=kind)
    assert message in why and str(disk["resolved"]) in why and "\n" not in why
    assert loaded == []


@pytest.mark.parametrize("path", ["ok", "{root}/ok", "{root}/run/../ok"])
def test_the_worker_loads_folders_under_its_root(cli, disk, tokens, path):
    with _app(cli, disk, tokens, allow_hub=True) as client:
        text = path.format(root=disk["root"])
        evaluate = _claimed(client, tokens, _row_written_around_the_app(client, "evaluate", text))
        recover = _claimed(client, tokens, _row_written_around_the_app(client, "recover", text))
    why, loaded = _run_in_worker(evaluate, disk, allow_hub=False, kind="evaluate")
    assert loaded == [str(disk["resolved"] / "ok")] and "cannot load model" in why
    why, _ = _run_in_worker(recover, disk, allow_hub=False, kind="recover")
    assert "not found in the corpus folders" in why  # past the model check, at the corpus


def test_the_worker_takes_hub_ids_where_allowed(cli, disk, tokens):
    with _app(cli, disk, tokens, allow_hub=True) as client:
        shard = _claimed(client, tokens, _row_written_around_the_app(client, "evaluate", "org/m"))
    why, loaded = _run_in_worker(shard, disk, allow_hub=True, kind="evaluate")
    assert loaded == ["org/m"] and "cannot load model" in why
    why, loaded = _run_in_worker(shard, disk, allow_hub=False, kind="evaluate")
    assert HUB_OFF in why and loaded == []
