"""Settings that mean one thing (issue 50, rows 5 and 6): ``$FORGETMAP_APP_URL``, which workers
and Trainer scripts export, never reroutes a command on ``--db`` (the root ``--url`` reads
``$FORGETMAP_URL``); `serve` and `worker` on the same ``--db`` meet on one embedded queue beside
the database, whatever folder each starts in; a setting that does not parse stops the process at
start with one line naming it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from forgetmap.cli import main

from tests.support.server import Server
from tests.support.services import require_module
from tests.support.worker_env import write_toy_benchmark

FORGETMAP = str(Path(sys.executable).parent / "forgetmap")
TABLE = "model,benchmark,sample_id,seed,correct\nb,piqa,1,0,1\nb,piqa,2,0,0\n"
NOWHERE = "http://127.0.0.1:9"  # nothing listens there


def _clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGETMAP_")}
    return {**env, **extra}


def test_the_workers_app_url_leaves_a_command_on_its_database(tmp_path):
    (tmp_path / "base.csv").write_text(TABLE)
    db = str(tmp_path / "local.duckdb")
    runner = CliRunner()
    worker_shell = {"FORGETMAP_APP_URL": NOWHERE, "FORGETMAP_API_TOKEN": "fm_worker"}
    imported = runner.invoke(
        main, ["--db", db, "import", "table", str(tmp_path / "base.csv")], env=worker_shell
    )
    assert imported.exit_code == 0, imported.output
    listed = runner.invoke(main, ["--db", db, "map", "--format", "csv"], env=worker_shell)
    assert listed.exit_code == 0, listed.output
    # the root's own variable still sends commands to an app
    rerouted = runner.invoke(
        main, ["--db", db, "map"], env={"FORGETMAP_URL": NOWHERE, "FORGETMAP_API_TOKEN": "fm_x"}
    )
    assert rerouted.exit_code != 0 and f"cannot reach the app at {NOWHERE}" in rerouted.output


@pytest.mark.parametrize(
    ("command", "variable"),
    [
        ("serve", "FORGETMAP_THEORY_SECONDS"),
        ("serve", "FORGETMAP_RECONCILE_SECONDS"),
        ("worker", "FORGETMAP_UPLOAD_BATCH"),
        ("up", "FORGETMAP_CHECKPOINT_MB"),
    ],
)
def test_a_setting_that_does_not_parse_stops_the_process_at_start(tmp_path, command, variable):
    env = _clean_env(**{variable: "abc", "FORGETMAP_API_TOKEN": "fm_x"})
    done = subprocess.run(
        [
            FORGETMAP,
            "--db",
            str(tmp_path / "fm.duckdb"),
            command,
            *(["--port", "0"] if command != "worker" else []),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: a setting does not parse: "), done.stderr
    assert variable in lines[0]


@pytest.mark.slow
def test_serve_and_worker_on_one_database_meet_on_its_queue(tmp_path):
    """`forgetmap --db D serve` started in one folder and `forgetmap --db D worker` in another,
    neither given FORGETMAP_DATA_DIR nor a broker: the worker runs the app's job."""
    require_module("transformers")
    from forgetmap.demo.tiny_model import build_tiny_model

    home = tmp_path / "srv"
    db = home / "fm.duckdb"
    models = home / "models"
    build_tiny_model(models / "tiny-base", seed=1)
    build_tiny_model(models / "tiny-post", seed=2)
    write_toy_benchmark(home / "benchmarks" / "toy.jsonl", 4)
    settings = {
        "FORGETMAP_MODEL_ROOTS": str(models),
        "FORGETMAP_BENCHMARK_DIRS": str(home / "benchmarks"),
    }
    tokens = {}
    for role in ("worker", "submit"):
        made = subprocess.run(
            [FORGETMAP, "--db", str(db), "token", "create", role, "--role", role],
            env=_clean_env(),
            capture_output=True,
            text=True,
            check=True,
        )
        tokens[role] = made.stdout.strip()
    server = Server(db, env=_clean_env(**settings))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    log = (tmp_path / "worker.log").open("w")
    worker = subprocess.Popen(
        [FORGETMAP, "--db", str(db), "worker"],
        cwd=elsewhere,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=_clean_env(
            **settings,
            FORGETMAP_APP_URL=server.url,
            FORGETMAP_API_TOKEN=tokens["worker"],
            FORGETMAP_TORCH_THREADS="1",
            OMP_NUM_THREADS="1",
        ),
    )
    try:
        http = httpx.Client(
            base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {tokens['submit']}"}
        )
        answer = http.post(
            "/api/jobs",
            json={
                "models": [
                    {"name": "tiny-base", "path": "tiny-base", "prompting": "base"},
                    {"name": "tiny-post", "path": "tiny-post", "prompting": "chat"},
                ],
                "benchmarks": ["local:toy.jsonl"],
                "seeds": [0],
                "config": {"engine": "transformers", "mode": "generate", "max_tokens": 4},
                "pairs": [
                    {"base": "tiny-base", "post": "tiny-post", "label": "tiny", "stage": "sft"}
                ],
            },
        )
        assert answer.status_code == 201, answer.text
        job_id = answer.json()["id"]
        deadline = time.time() + 300
        while time.time() < deadline:
            job = http.get(f"/api/jobs/{job_id}").json()
            if job["status"] in ("done", "failed", "cancelled") or worker.poll() is not None:
                break
            time.sleep(1)
        assert job["status"] == "done", (job, (tmp_path / "worker.log").read_text()[-3000:])
        assert (home / "broker" / "queue").is_dir()
        assert not (elsewhere / "data").exists()
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        log.close()
        server.stop()
