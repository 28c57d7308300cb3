"""The tracker writers through the real libraries, offline: W&B (WANDB_MODE=offline, read back from
the run's .wandb file), MLflow (a file: store; MLflow 3.18 needs MLFLOW_ALLOW_FILE_STORE=true for
it) and TensorBoard (event files, read back with its EventAccumulator). The export is the hand-built
run of tests/support/series_fixtures.py (its numbers: tests/integration/test_series_export.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from forgetmap.contract.series import SeriesExport
from forgetmap.core.errors import InputError
from forgetmap.integrations import trackers
from forgetmap.integrations.trackers import (
    CategoryKeys,
    MlflowWriter,
    TensorBoardWriter,
    WandbWriter,
    writer_for,
)

from tests.support.cli import Cli
from tests.support.series_fixtures import load_run
from tests.support.tracker_readers import (
    mlflow_metrics,
    tensorboard_scalars,
    wandb_history,
    wandb_metric_axes,
)


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> SeriesExport:
    from forgetmap.db import open_store
    from forgetmap.services.series_export import series_export

    folder = tmp_path_factory.mktemp("series")
    load_run(Cli(folder / "fm.duckdb"), folder)
    store = open_store(folder / "fm.duckdb")
    try:
        return series_export(store, "run")
    finally:
        store.close()


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")


def expected(export: SeriesExport, steps) -> dict[str, list[tuple[int, float]]]:
    """metric key -> [(step, value)] for ``steps``, from the export's own results."""
    out: dict[str, list] = {}
    for step in sorted(steps):
        for r in export.results:
            if r.step == step:
                key = {"Knowledge/QA": "Knowledge_QA"}.get(r.category, r.category)
                for name, field in trackers.VALUES:
                    out.setdefault(f"forgetmap/{key}/{name}", []).append((step, getattr(r, field)))
    return out


def assert_points(got: dict, want: dict, tolerance: float = 0.0) -> None:
    """The same keys, steps and values (within ``tolerance``: TensorBoard stores float32)."""
    assert sorted(got) == sorted(want)
    for key, points in want.items():
        assert [s for s, _ in got[key]] == [s for s, _ in points], key
        assert [v for _, v in got[key]] == pytest.approx([v for _, v in points], abs=tolerance), key


def test_wandb_inside_a_trainer_run_lands_late_results_at_their_steps(export, tmp_path):
    """A run as transformers' WandbCallback sets it up (every metric against train/global_step,
    synced), training logged to step 60; the forgetting of steps 4 and 2 arrives then, of 1 and
    3 after step 70: each row carries its training step on forgetmap/step, every forgetmap key
    is plotted against it, and the run stays open for the trainer."""
    import wandb

    run = wandb.init(project="sft", dir=tmp_path)
    run.define_metric("train/global_step")
    run.define_metric("*", step_metric="train/global_step", step_sync=True)
    for step in range(10, 70, 10):
        run.log({"train/loss": 1 / step, "train/global_step": step})
    writer = WandbWriter(run)
    assert writer.write(export, steps=[4, 2, 99]) == [2, 4]  # 99 has no results: not written
    run.log({"train/loss": 0.001, "train/global_step": 70})
    assert writer.write(export, steps={1, 3}) == [1, 3]
    writer.close()
    run.log({"train/loss": 0.0005, "train/global_step": 80})  # still the trainer's
    run.finish()

    history = wandb_history(tmp_path / "wandb")
    train = [r["train/global_step"] for r in history if "train/loss" in r]
    assert train == [10, 20, 30, 40, 50, 60, 70, 80]
    ours = [r for r in history if "forgetmap/step" in r]
    assert [r["forgetmap/step"] for r in ours] == [2, 4, 1, 3]
    got: dict[str, list] = {}
    for r in sorted(ours, key=lambda r: r["forgetmap/step"]):
        for key, value in r.items():
            if key.count("/") == 2 and not key.startswith("forgetmap/flips/"):
                got.setdefault(key, []).append((r["forgetmap/step"], value))
    assert_points(got, expected(export, [1, 2, 3, 4]))
    axes = wandb_metric_axes(tmp_path / "wandb")
    assert axes["*"] == "train/global_step" and axes["forgetmap/*"] == "forgetmap/step"
    assert {axes[k] for k in [*got, "forgetmap/flips"]} == {"forgetmap/step"}
    # the flips of step 2 as a W&B table: its file in the run's media, rows as the export's
    step_2 = next(r for r in ours if r["forgetmap/step"] == 2)
    files = next((tmp_path / "wandb").glob("offline-run-*/files"))
    table = json.loads((files / step_2["forgetmap/flips/path"]).read_text())
    assert table["columns"] == list(trackers.FLIP_COLUMNS)
    assert table["data"] == [
        [getattr(f, c) for c in trackers.FLIP_COLUMNS] for f in export.flips if f.step == 2
    ]
    assert [r.get("forgetmap/flips/nrows") for r in ours] == [5, 6, None, 9]


def test_wandb_open_starts_or_resumes_a_run_and_finishes_it(export, tmp_path):
    writer = WandbWriter.open("sft", name="forgetting", run_id="fm-run-1", dir=tmp_path)
    assert writer.target == "wandb run fm-run-1 in sft" and writer.run.name == "forgetting"
    assert writer.write(export, steps=[3]) == [3]
    writer.close()
    (row,) = [r for r in wandb_history(tmp_path / "wandb") if "forgetmap/step" in r]
    assert (row["forgetmap/step"], row["forgetmap/Total/F_true"]) == (3, 0.375)


def test_mlflow_new_run_and_a_given_one(export, tmp_path):
    uri = (tmp_path / "mlruns").as_uri()
    owned = MlflowWriter.open("sft", name="forgetting", tracking_uri=uri)
    assert owned.target == f"mlflow run {owned.run_id} at {uri}"
    assert owned.write(export, steps=[3]) == [3]
    given = MlflowWriter(owned.run_id, tracking_uri=uri)  # as a trainer's callback holds it
    assert given.write(export, steps=[1, 2, 4]) == [1, 2, 4]
    given.close()
    client = owned.client
    assert client.get_run(owned.run_id).info.status == "RUNNING"  # a given run stays open
    owned.close()
    assert client.get_run(owned.run_id).info.status == "FINISHED"
    assert (
        client.get_experiment_by_name("sft").experiment_id
        == client.get_run(owned.run_id).info.experiment_id
    )
    assert_points(mlflow_metrics(uri, owned.run_id), expected(export, [1, 2, 3, 4]))
    table = client.download_artifacts(owned.run_id, "forgetmap/flips_step4.json", str(tmp_path))
    rows = json.loads(Path(table).read_text())
    assert rows["columns"] == list(trackers.FLIP_COLUMNS)
    assert [(r[2], r[3], r[4], r[5]) for r in rows["data"]] == [
        ("mixbench", "s1", seed, "forgotten") for seed in range(3)
    ] + [("mixbench", "s3", seed, "learned") for seed in range(3)]
    with pytest.raises(InputError, match=r"^mlflow: Run 'nope' not found$"):
        MlflowWriter("nope", tracking_uri=uri)


def test_tensorboard_scalars_at_their_steps_without_torch(export, tmp_path):
    writer = writer_for("tensorboard", logdir=tmp_path / "tb")
    assert writer.write(export, steps=[2]) == [2]
    assert writer.write(export, steps=[4, 1]) == [1, 4]
    writer.close()
    assert_points(tensorboard_scalars(tmp_path / "tb"), expected(export, [1, 2, 4]), 1e-7)
    # tensorboard's own writer: neither torch nor TensorFlow is loaded
    code = (
        "import sys; from forgetmap.integrations.trackers import TensorBoardWriter; "
        f"TensorBoardWriter({str(tmp_path / 'tb2')!r}).close(); "
        "print(sorted({'torch', 'tensorflow'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "[]\n" and isinstance(TensorBoardWriter, type)


@pytest.mark.parametrize(
    ("target", "module", "options"),
    [
        ("wandb", "wandb", {}),
        ("mlflow", "mlflow.tracking", {}),
        ("tensorboard", "tensorboard.summary", {"logdir": "tb"}),
    ],
)
def test_a_missing_library_is_one_line_naming_the_extra(monkeypatch, target, module, options):
    monkeypatch.setitem(sys.modules, module, None)  # as if it were not installed
    with pytest.raises(InputError) as raised:
        writer_for(target, **options)
    assert str(raised.value) == (
        f"{module.partition('.')[0]} is not installed: pip install 'forgetmap[trackers]'"
    )


def test_category_keys_are_safe_distinct_and_stable():
    keys = CategoryKeys()
    names = [
        "Knowledge/QA",
        "Liberal Arts",
        "Safety/Truth",
        "Safety Truth",
        "Total",
        "Total!",
        "../a.b",
        "///",
        "Safety/Truth",
    ]
    assert [keys(n) for n in names] == [
        "Knowledge_QA",
        "Liberal_Arts",
        "Safety_Truth",
        "Safety_Truth_2",
        "Total",
        "Total_2",
        "a_b",
        "category",
        "Safety_Truth",
    ]
    assert keys("x" * 100) == "x" * 60


def test_writer_for_refuses_what_a_target_does_not_take():
    with pytest.raises(InputError, match="^tracker must be one of wandb, mlflow, tensorboard"):
        writer_for("neptune")
    with pytest.raises(InputError, match="^--tracking-uri is not an option of wandb"):
        writer_for("wandb", tracking_uri="file:/x")
