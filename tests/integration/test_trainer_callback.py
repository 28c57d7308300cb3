"""ForgetmapCallback in a real Trainer run (examples/train_with_forgetmap.py on a tiny local model):
each checkpoint joins the series through the app and a real worker, save_total_limit deletes
nothing a worker still needs, and the results land in an offline W&B run, an MLflow file store
and TensorBoard event files at their training steps, equal to the series' own records. With the
app unreachable, training runs to its end all the same."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.worker_env import Deployment, require_redis, write_toy_benchmark

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "train_with_forgetmap.py"


@pytest.fixture(scope="module")
def base_model(tmp_path_factory):
    from tests.support.services import service_missing

    try:
        from forgetmap.demo.tiny_model import build_tiny_model
    except ImportError as exc:
        service_missing(f"torch/transformers not installed: {exc}")
    return build_tiny_model(tmp_path_factory.mktemp("zoo") / "tiny-base", seed=1)


def train(base: Path, out: Path, env: dict, *extra: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        str(EXAMPLE),
        "--model",
        str(base),
        "--output-dir",
        str(out),
        "--series",
        "run",
        "--base",
        "tiny-base",
        "--benchmarks",
        "local:toy.jsonl",
        "--seeds",
        "0,1",
        "--engine",
        "transformers",
        "--max-tokens",
        "8",
        "--max-steps",
        "4",
        "--save-steps",
        "2",
        "--save-total-limit",
        "1",
        "--poll-every",
        "1",
        *extra,
    ]
    # a W&B service this test process started (the trackers' tests) is not the training's: the
    # training starts its own, whose run ends with the process
    env = {k: v for k, v in env.items() if k != "WANDB_SERVICE"}
    env = {**env, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def test_training_goes_on_when_the_app_is_unreachable(tmp_path, base_model):
    env = {**os.environ, "FORGETMAP_APP_URL": "http://127.0.0.1:9", "FORGETMAP_API_TOKEN": "t"}
    done = train(
        base_model,
        tmp_path / "out",
        env,
        "--staging-dir",
        str(tmp_path / "staging"),
        "--report-to",
        "none",
        "--wait-at-end",
        "2",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "app unreachable" in done.stderr and "will retry" in done.stderr
    assert "steps [2, 4] not evaluated yet" in done.stderr
    assert "`forgetmap series export run --to ...`" in done.stderr
    # save_total_limit=1 deleted checkpoint-2 from the output; the staged copy is still there,
    # complete and hard-linked (no second copy of the weights)
    assert sorted(p.name for p in (tmp_path / "out").glob("checkpoint-*")) == ["checkpoint-4"]
    staged = tmp_path / "staging" / "run"
    assert sorted(p.name for p in staged.iterdir()) == ["checkpoint-2", "checkpoint-4"]
    weights = staged / "checkpoint-4" / "model.safetensors"
    assert weights.stat().st_nlink == 2
    assert (staged / "checkpoint-2" / "config.json").exists()


def test_a_wrong_argument_fails_before_training():
    from forgetmap import ForgetmapCallback

    with pytest.raises(ValueError, match="series"):
        ForgetmapCallback("", base="b", benchmarks=["mmlu"], token="t")
    with pytest.raises(ValueError, match=r"FORGETMAP_API_TOKEN"):
        os.environ.pop("FORGETMAP_API_TOKEN", None)
        ForgetmapCallback("run", base="b", benchmarks=["mmlu"])
    with pytest.raises(ValueError, match="unknown tracker"):
        ForgetmapCallback("run", base="b", benchmarks=["mmlu"], token="t", report_to=["neptune"])


def test_a_trainer_run_fills_the_series_and_its_trackers(tmp_path, base_model, monkeypatch):
    from tests.support.tracker_readers import mlflow_metrics, tensorboard_scalars, wandb_history

    require_redis()
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow >= 3.18 for a file: store
    dep = Deployment(tmp_path, extra_env={"FORGETMAP_MODEL_ROOTS": str(tmp_path / "models")})
    write_toy_benchmark(dep.benchmarks / "toy.jsonl", 8)
    base = dep.models / "tiny-base"  # the app takes model folders under its roots only
    shutil.copytree(base_model, base)
    tracking = f"file:{tmp_path / 'mlruns'}"
    env = {
        **os.environ,
        "FORGETMAP_APP_URL": dep.url,
        "FORGETMAP_API_TOKEN": dep.submit_token,
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(tmp_path / "wandb"),
        "WANDB_SILENT": "true",
        "WANDB_PROJECT": "forgetmap-test",
        "MLFLOW_TRACKING_URI": tracking,
        "MLFLOW_ALLOW_FILE_STORE": "true",
    }
    try:
        dep.start_worker()
        done = train(
            base,
            tmp_path / "out",
            env,
            "--staging-dir",
            str(dep.models / "staging"),
            "--wait-at-end",
            "300",
        )
        assert done.returncode == 0, done.stderr[-5000:] + dep.logs()
        assert "not evaluated yet" not in done.stderr, done.stderr[-5000:]

        # the series: both checkpoints, placed by step, each scored against the base
        assert dep.http.get("/api/series").json() == [
            {"id": 1, "name": "run", "base": "tiny-base", "steps": [2, 4], "axis": "step"}
        ]
        view = dep.http.get("/api/series/1").json()
        page = dep.http.get("/series/1")  # its charts are drawn from the data it embeds
        embedded = json.loads(page.text.split('id="series-data">', 1)[1].split("</script>", 1)[0])
        assert embedded["steps"] == [2, 4] and embedded["records"] == view["records"]
        flips = {
            step: [
                f for f in dep.http.get("/api/series/1/export").json()["flips"] if f["step"] == step
            ]
            for step in (2, 4)
        }
        expected = {(r["step"], r["category"]): r for r in view["records"] if r["seeds"] == 2}
        assert {step for step, _ in expected} == {2, 4}
        # the staged copies were removed once their results were in
        assert list((dep.models / "staging" / "run").iterdir()) == []
    finally:
        dep.close()

    from forgetmap.integrations.trackers import CategoryKeys

    keys = CategoryKeys()  # the writers' names for categories (Knowledge/QA -> Knowledge_QA)

    def key(category: str, name: str) -> str:
        return f"forgetmap/{keys(category)}/{name}"

    # W&B (offline run file), MLflow (file store), TensorBoard (event files): same values, at
    # the training steps
    history = wandb_history(next((tmp_path / "wandb" / "wandb").glob("offline-run-*")))
    runs = list((tmp_path / "mlruns").glob("*/*/meta.yaml"))
    mlflow = mlflow_metrics(tracking, runs[0].parent.name)
    scalars = tensorboard_scalars(next((tmp_path / "out" / "runs").iterdir()))
    for (step, category), record in expected.items():
        for name in ("F_true", "BT_true"):
            want = record[name.lower()]
            wandb_rows = [row for row in history if key(category, name) in row]
            assert any(
                row["forgetmap/step"] == step and math.isclose(row[key(category, name)], want)
                for row in wandb_rows
            ), (step, category, name, wandb_rows)
            assert (step, pytest.approx(want)) in mlflow[key(category, name)]
            assert (step, pytest.approx(want, abs=1e-6)) in scalars[key(category, name)]
    # each step's flipped questions: a W&B table and an MLflow JSON table beside the metrics
    run_dir = runs[0].parent
    for step, rows in flips.items():
        table = run_dir / "artifacts" / "forgetmap" / f"flips_step{step}.json"
        assert table.exists() == bool(rows)
        if rows:
            assert len(json.loads(table.read_text())["data"]) == len(rows)
            assert any(
                row["forgetmap/step"] == step and "forgetmap/flips" in row for row in history
            )
    # the training's own metrics are in the same runs (the results joined them, not new ones)
    assert any("train/loss" in row for row in history)
    assert "loss" in mlflow


def test_an_unreachable_app_is_asked_again_later_and_later(tmp_path, caplog):
    import logging

    import httpx
    from forgetmap.integrations.trainer import MAX_RETRY_SECONDS, ForgetmapCallback, _Step

    callback = ForgetmapCallback(
        "run", base="b", benchmarks=["mmlu"], token="t", app_url="http://127.0.0.1:9", poll_every=5
    )
    callback.steps[2] = _Step(2, tmp_path, staged=False)
    caplog.set_level(logging.WARNING)
    with httpx.Client(base_url=callback.settings.app_url) as client:
        for _ in range(3):  # three rounds at once: only the first asks the app
            callback._round(client)
        tries = [r for r in caplog.records if "app unreachable" in r.getMessage()]
        assert len(tries) == 1 and callback._retry_wait == 5
        for expected in (10, 20, 40):  # each failed try doubles the wait
            callback._retry_at = 0.0
            callback._round(client)
            assert callback._retry_wait == expected
        callback._retry_wait = MAX_RETRY_SECONDS
        callback._retry_at = 0.0
        callback._round(client)
        assert callback._retry_wait == MAX_RETRY_SECONDS  # and no more than that
