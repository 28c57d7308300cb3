"""`forgetmap job submit` against a real app (`forgetmap serve`): what it sends is what its dry run
prints and the app keeps it as it keeps that body; an option the app would refuse is refused
before anything is sent, with the line the app's own answer gives."""

from __future__ import annotations

import json

import httpx
import pytest
from forgetmap.contract.jobs import EvaluateJobIn

from tests.support.cli import Cli
from tests.support.server import Server

OPTIONS = [
    "--base",
    "a=org/a",
    "--post",
    "b=org/b",
    "--benchmarks",
    "piqa,arc",
    "--seeds",
    "0",
    "--engine",
    "transformers",
    "--max-tokens",
    "16",
]
UNREACHABLE = "http://127.0.0.1:9"  # nothing listens there: sending would say so


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("app")
    cli = Cli(folder / "fm.duckdb")
    token = cli("token", "create", "admin").stdout.strip()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FORGETMAP_DATA_DIR", str(folder))  # the embedded queue's folder
        server = Server(cli.db)
    http = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"})
    yield cli, server.url, token, http
    http.close()
    server.stop()


def _dry_run(cli: Cli, *options: str) -> dict:
    return json.loads(cli("job", "submit", *OPTIONS, *options, "--dry-run").stdout)


def test_the_app_keeps_the_body_the_dry_run_prints(app):
    cli, url, token, http = app
    options = ["--label", "L", "--stage", "sft", "--shots", "0"]
    body = _dry_run(cli, *options)
    assert "kind" not in body and "adaptive" not in body and body["config"]["limit"] is None
    answer = json.loads(
        cli("job", "submit", *OPTIONS, *options, "--app", url, "--token", token).stdout
    )
    stored = http.get(f"/api/jobs/{answer['id']}").json()["request"]
    assert stored == EvaluateJobIn.model_validate(body).payload()


def _set_config(**values):
    return lambda body: body["config"].update(values)


def _same_model_names(body: dict) -> None:
    body["models"][1]["name"] = body["pairs"][0]["post"] = "a"


@pytest.mark.parametrize(
    ("options", "change"),
    [
        (["--temperature", "5", "--shots", "99"], _set_config(temperature=5.0, shots=99)),
        (["--limit", "0"], _set_config(limit=0)),
        (
            ["--adaptive", "--min-samples", "500", "--max-samples", "100"],
            lambda body: body.update(adaptive={"min_samples": 500, "max_samples": 100}),
        ),
        (["--label", "x" * 600], lambda body: body["pairs"][0].update(label="x" * 600)),
        (["--post", "a=org/b"], _same_model_names),
        (
            ["--benchmarks", ",".join(f"b{i}" for i in range(1001))],
            lambda body: body.update(benchmarks=[f"b{i}" for i in range(1001)]),
        ),
    ],
)
def test_a_refused_option_gets_the_apps_line_and_nothing_is_sent(app, options, change):
    cli, _, token, http = app
    body = _dry_run(cli)
    change(body)
    answer = http.post("/api/jobs", json=body)
    assert answer.status_code == 422
    refused = cli(
        "job", "submit", *OPTIONS, *options, "--app", UNREACHABLE, "--token", token, ok=False
    )
    assert refused.exit_code == 2
    assert refused.stderr == f"error: the app refused the job (422): {answer.json()['detail']}\n"


def test_job_list_shows_what_the_jobs_page_shows(app):
    """`forgetmap job list`: every job, newest first, as the app's GET /api/jobs has them."""
    cli, url, token, http = app
    cli("job", "submit", *OPTIONS, "--label", "listed <b>pair</b>", "--app", url, "--token", token)
    listed = json.loads(
        cli("job", "list", "--format", "json", "--app", url, "--token", token).stdout
    )
    assert listed == http.get("/api/jobs").json()
    newest = listed[0]
    with pytest.MonkeyPatch.context() as wide:  # one panel: a terminal of 300 columns
        wide.setenv("COLUMNS", "300")
        table = cli("job", "list", "--app", url, "--token", token).stdout.splitlines()
    assert table[0].split()[:4] == ["id", "status", "kind", "evaluates"]
    row = next(line for line in table if line.lstrip().startswith(f"{newest['id']} "))
    assert "listed <b>pair</b>" in row and f"0 of {newest['shards']}" in row
    assert row.rstrip().endswith(" UTC")
    refused = cli("job", "list", "--app", url, ok=False)
    assert refused.exit_code == 2 and "this needs a token" in refused.stderr
