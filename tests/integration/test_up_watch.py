"""`forgetmap up --watch '...'`: the app, a local worker and a watcher from one command; the
watcher's checkpoint joins the series, and Ctrl-C stops all three."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request

import numpy as np
import pytest
from safetensors.numpy import save_file

from tests.support.server import free_port
from tests.support.worker_env import FORGETMAP

pytestmark = [pytest.mark.integration]


def test_up_runs_a_watcher_beside_the_app(tmp_path):
    data = tmp_path / "data"
    run = data / "models" / "run"
    (data / "models" / "base").mkdir(parents=True)
    folder = run / "checkpoint-5"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    save_file({"w": np.zeros(16, dtype=np.float32)}, str(folder / "model.safetensors"))
    db = data / "forgetmap.duckdb"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGETMAP_")}
    env.update(OMP_NUM_THREADS="1")
    watch = (
        f"{run} --base base --base-path {data / 'models' / 'base'} --series run "
        "--benchmarks local:toy.jsonl --seeds 0 --engine transformers --every 0.5"
    )
    log = (tmp_path / "up.log").open("w")
    proc = subprocess.Popen(
        [FORGETMAP, "--db", str(db), "up", "--port", str(port), "--watch", watch],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        series = []
        for _ in range(300):
            try:
                series = json.load(urllib.request.urlopen(url + "/api/series", timeout=2))
            except OSError:
                if proc.poll() is not None:
                    raise AssertionError((tmp_path / "up.log").read_text()) from None
            if series:
                break
            time.sleep(0.3)
        assert series == [{"id": 1, "name": "run", "base": "base", "steps": [5], "axis": "step"}], (
            tmp_path / "up.log"
        ).read_text()
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError("forgetmap up did not stop on Ctrl-C") from None
    out = subprocess.run(["pgrep", "-f", f"watch {run}"], capture_output=True, text=True)
    assert out.stdout.strip() == "", "the watcher outlived `forgetmap up`"
