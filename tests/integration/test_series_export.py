"""A series' export (`GET /api/series/{id}/export`, `forgetmap series export --to ...`) against
hand-computed values, and written into real MLflow, TensorBoard and W&B (offline) stores from the
client's process, with the database opened by the command or owned by a running app.

The run is tests/support/series_fixtures.py; its F_true / BT_true values are worked out in
tests/integration/test_series.py. Flip counts, by hand from its correctness strings (3 seeds):

    step  Knowledge/QA (mixbench)        Math (genbench)          Total
    1     0 forgotten, 0 learned, n 12   0, 0, n 6                0, 0, n 18
    2     3 (s0 s0 s2), 0                2 (g1 seeds 0, 2), 0     5, 0
    3     3 (s0 x3), 3 (s3 x3)           3 (g1 x3), 0             6, 3
    4     3 (s1 x3), 3 (s3 x3)           0, 0                     3, 3
"""

from __future__ import annotations

import csv
import json
import math

import httpx
import pytest
from click.testing import CliRunner
from forgetmap.cli import main
from forgetmap.contract.series import TEXT_LIMIT, SeriesExport
from forgetmap.db import open_store
from forgetmap.runtime.owner import owner_path, read_owner
from forgetmap.services.series_export import fetch_series_export, series_export

from tests.support.cli import Cli, cli_both_ways
from tests.support.series_fixtures import load_run
from tests.support.server import Server, free_port
from tests.support.tracker_readers import mlflow_metrics, tensorboard_scalars, wandb_history

cli = cli_both_ways(shared_owner=True)  # every test on the file, then through a serve owning it

T = 4.302652729749464  # Student's t, 97.5% quantile, 2 degrees of freedom
COUNTS = {  # (step, category): (forgotten, learned, n)
    (1, "Knowledge/QA"): (0, 0, 12),
    (1, "Math"): (0, 0, 6),
    (1, "Total"): (0, 0, 18),
    (2, "Knowledge/QA"): (3, 0, 12),
    (2, "Math"): (2, 0, 6),
    (2, "Total"): (5, 0, 18),
    (3, "Knowledge/QA"): (3, 3, 12),
    (3, "Math"): (3, 0, 6),
    (3, "Total"): (6, 3, 18),
    (4, "Knowledge/QA"): (3, 3, 12),
    (4, "Math"): (0, 0, 6),
    (4, "Total"): (3, 3, 18),
}
# 95% half-widths at step 2 (t * std / sqrt(3), stds from test_series.py); 0 wherever seeds agree
MARGINS_2 = {"Knowledge/QA": T / 72, "Math": T / 6, "Total": T * math.sqrt(133) / 144}
STEP_2_FLIPS = [  # forgotten first, then by category, benchmark, sample, seed
    ("Knowledge/QA", "mixbench", "s0", 0),
    ("Knowledge/QA", "mixbench", "s0", 1),
    ("Knowledge/QA", "mixbench", "s2", 2),
    ("Math", "genbench", "g1", 0),
    ("Math", "genbench", "g1", 2),
]
KEYS = {"Knowledge/QA": "Knowledge_QA", "Math": "Math", "Total": "Total"}


@pytest.fixture
def run(cli, tmp_path, monkeypatch):
    load_run(cli, tmp_path)  # the owner's database is shared: a second load adds nothing
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3.18 refuses file: otherwise
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    return cli


def _shown(run) -> dict:
    records = run.json("series", "show", "run", "--format", "json")
    return {(r["step"], r["category"]): r for r in records}


def _export(run, name: str, **options) -> SeriesExport:
    """The export as the command reads it: from the app that owns the database (with its local
    credential), else from the file."""
    if run.server is not None:
        credential = read_owner(owner_path(run.db)).credential
        return fetch_series_export(run.server.url, credential, name, **options)
    store = open_store(run.db)
    try:
        return series_export(store, name, **options)
    finally:
        store.close()


def _expected_metrics(shown: dict) -> dict[str, list[tuple[int, float]]]:
    """metric key -> [(step, value)] as `series show` and the hand counts give them."""
    out: dict[str, list] = {}
    for (step, category), r in sorted(shown.items()):
        forgotten, learned, _ = COUNTS[(step, category)]
        margin = MARGINS_2[category] if step == 2 else 0.0
        for name, value in (
            ("F_true", r["f_true"]),
            ("F_true_margin", margin),
            ("BT_true", r["bt_true"]),
            ("BT_true_margin", 0.0),
            ("forgotten", forgotten),
            ("learned", learned),
        ):
            out.setdefault(f"forgetmap/{KEYS[category]}/{name}", []).append((step, value))
    return out


def _close(got: dict, expected: dict, tolerance: float) -> None:
    assert sorted(got) == sorted(expected)
    for key, points in expected.items():
        assert [s for s, _ in got[key]] == [s for s, _ in points], key
        for (_, a), (_, b) in zip(got[key], points, strict=True):
            assert a == pytest.approx(b, abs=tolerance), key


def test_export_numbers_are_series_shows_with_exact_flip_counts(run):
    shown = _shown(run)
    export = _export(run, "run")
    assert (export.series, export.base, export.aggregate) == ("run", "base", "macro")
    assert export.steps == [1, 2, 3, 4]
    assert [(r.step, r.category) for r in export.results] == sorted(COUNTS)
    for r in export.results:
        s = shown[(r.step, r.category)]
        assert (r.post, r.f_true, r.bt_true, r.noise_floor, r.seeds) == tuple(
            s[k] for k in ("post", "f_true", "bt_true", "noise_floor", "seeds")
        )
        assert (r.forgotten, r.learned, r.n) == COUNTS[(r.step, r.category)]
        margin = MARGINS_2[r.category] if r.step == 2 else 0.0
        assert r.f_true_margin == pytest.approx(margin, abs=1e-12) and r.bt_true_margin == 0
    # one flip row per (step, benchmark, sample, seed): as many as the counts say
    for step in (1, 2, 3, 4):
        fates = [f.fate for f in export.flips if f.step == step]
        forgotten, learned, _ = COUNTS[(step, "Total")]
        assert (fates.count("forgotten"), fates.count("learned")) == (forgotten, learned)
    step_2 = [f for f in export.flips if f.step == 2]
    assert [(f.category, f.benchmark, f.sample_id, f.seed) for f in step_2] == STEP_2_FLIPS
    assert step_2[0].question == "question 0 of mixbench" and not export.flips_truncated


def test_series_export_writes_mlflow_and_tensorboard_from_the_client(run, tmp_path):
    shown = _shown(run)
    expected = _expected_metrics(shown)
    uri = (tmp_path / "mlruns").as_uri()
    out = run(
        "series",
        "export",
        "run",
        "--to",
        "mlflow",
        "--tracking-uri",
        uri,
        "--project",
        "sft",
        "--run-name",
        "sft-1",
    ).stdout
    assert out.startswith("wrote 4 steps of series run to mlflow run ")
    assert out.endswith(f" at {uri} (12 results, 20 flipped samples)\n")
    run_id = out.split("mlflow run ")[1].split()[0]
    _close(mlflow_metrics(uri, run_id), expected, 1e-12)
    # the run's flips of step 3 as a table file: 6 forgotten, then 3 learned
    (file,) = (tmp_path / "mlruns").glob(f"*/{run_id}/artifacts/forgetmap/flips_step3.json")
    table = json.loads(file.read_text())
    assert table["columns"][:6] == ["step", "category", "benchmark", "sample_id", "seed", "fate"]
    assert [row[5] for row in table["data"]] == ["forgotten"] * 6 + ["learned"] * 3
    # written again into the same run (--run-id) at the same steps: MLflow keeps both points
    again = run(
        "series", "export", "run", "--to", "mlflow", "--tracking-uri", uri, "--run-id", run_id
    )
    assert f"to mlflow run {run_id} at {uri}" in again.stdout
    assert len(mlflow_metrics(uri, run_id)["forgetmap/Total/F_true"]) == 8

    logdir = tmp_path / "tb"
    out = run("series", "export", "run", "--to", "tensorboard", "--logdir", logdir).stdout
    assert out == (
        f"wrote 4 steps of series run to tensorboard logdir {logdir} "
        "(12 results, 20 flipped samples)\n"
    )
    _close(tensorboard_scalars(logdir), expected, 1e-7)  # float32


def test_series_export_to_wandb_lands_at_the_training_steps(run, tmp_path):
    # --logdir, not $WANDB_DIR: wandb reads its environment once per process
    out = run(
        "series",
        "export",
        "run",
        "--to",
        "wandb",
        "--project",
        "sft",
        "--run-name",
        "a",
        "--max-flips",
        "2",
        "--logdir",
        tmp_path,
    ).stdout
    assert out.startswith("wrote 4 steps of series run to wandb run ")
    assert out.endswith(" in sft (12 results, 6 flipped samples, at most 2 per step)\n")
    rows = [r for r in wandb_history(tmp_path / "wandb") if "forgetmap/step" in r]
    assert [r["forgetmap/step"] for r in rows] == [1, 2, 3, 4]
    got: dict[str, list] = {}
    for r in rows:
        for key, value in r.items():
            if key.count("/") == 2 and not key.startswith("forgetmap/flips"):
                got.setdefault(key, []).append((r["forgetmap/step"], value))
    _close(got, _expected_metrics(_shown(run)), 1e-12)
    # the flips table of each step with flips, capped at 2 rows
    assert [r.get("forgetmap/flips/nrows") for r in rows] == [None, 2, 2, 2]


def test_series_export_says_what_is_wrong_in_one_line(run, tmp_path):
    tb = ["--to", "tensorboard"]
    mlflow = ["--to", "mlflow", "--tracking-uri", (tmp_path / "m").as_uri()]
    cases = [
        (
            ["nope", *tb, "--logdir", tmp_path],
            "no series named 'nope' (see `forgetmap series list`)",
        ),
        (["run", *tb], "tensorboard needs --logdir DIR (the folder TensorBoard reads)"),
        (
            ["run", *tb, "--logdir", tmp_path, "--run-id", "x"],
            "--run-id is not an option of tensorboard: it takes --logdir",
        ),
        (["run", *mlflow, "--run-id", "f" * 32], f"mlflow: Run '{'f' * 32}' not found"),
    ]
    for args, message in cases:
        result = run("series", "export", *args, ok=False)
        assert (result.exit_code, result.stderr) == (2, f"error: {message}\n"), args


def test_flips_carry_cut_texts_and_long_answers(run, tmp_path):
    """A question cut at its start (its end is the question), an answer read from the answer
    file beside the database (a long response, no extracted answer) and cut at its end."""
    question = dict(
        benchmark="longbench", sample_id="a", seed=0, gold="4", prompt="x" * 600 + " What is 2+2?"
    )
    rows = [
        dict(model="qb", correct=1, prediction="4", response="4", **question),
        dict(model="qp", correct=0, prediction="", response="r" * 700, **question),
    ]
    with (tmp_path / "q.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    run("import", "table", tmp_path / "q.csv")
    run("series", "add", "qa", "--base", "qb", "--checkpoint", "qp@7")
    logdir = tmp_path / "tb"
    out = run("series", "export", "qa", "--to", "tensorboard", "--logdir", logdir).stdout
    assert out.startswith("wrote 1 steps of series qa to tensorboard")
    assert tensorboard_scalars(logdir)["forgetmap/Uncategorized/forgotten"] == [(7, 1.0)]
    export = _export(run, "qa")
    (flip,) = export.flips
    assert (flip.step, flip.fate, flip.gold, flip.base_answer) == (7, "forgotten", "4", "4")
    assert len(flip.question) == TEXT_LIMIT and flip.question.startswith("…x")
    assert flip.question.endswith("x What is 2+2?")
    assert flip.checkpoint_answer == "r" * (TEXT_LIMIT - 1) + "…"


def test_export_steps_and_cap(run):
    export = _export(run, "run", steps=[3, 2], max_flips=4)
    assert export.steps == [2, 3] and {r.step for r in export.results} == {2, 3}
    assert export.flips_truncated and export.max_flips == 4
    step_3 = [(f.benchmark, f.sample_id, f.seed, f.fate) for f in export.flips if f.step == 3]
    assert step_3 == [
        ("mixbench", "s0", 0, "forgotten"),
        ("mixbench", "s0", 1, "forgotten"),
        ("mixbench", "s0", 2, "forgotten"),
        ("genbench", "g1", 0, "forgotten"),
    ]
    micro = _export(run, "run", aggregate="micro", steps=[2])
    total = next(r for r in micro.results if r.category == "Total")
    assert micro.aggregate == "micro" and (total.forgotten, total.n) == (5, 18)


def test_the_export_route_and_a_remote_app(tmp_path, monkeypatch):
    """The route as JSON, and `--url URL --token T series export` from a machine without the
    database: read over HTTP with a read token, written here, told as on the file."""
    local = Cli(tmp_path / "fm.duckdb")
    load_run(local, tmp_path)
    on_file = local(
        "series", "export", "run", "--to", "tensorboard", "--logdir", tmp_path / "tb"
    ).stdout
    reader = local("token", "create", "reader", "--role", "read").stdout.strip()
    server = Server(tmp_path / "fm.duckdb")
    client = tmp_path / "client"
    client.mkdir()
    monkeypatch.chdir(client)
    monkeypatch.delenv("FORGETMAP_DB", raising=False)
    try:
        export = ["series", "export", "run", "--to", "tensorboard", "--logdir", "tb"]
        remote = CliRunner().invoke(main, ["--url", server.url, "--token", reader, *export])
        told_here = on_file.replace(str(tmp_path / "tb"), str(client / "tb"))
        assert (remote.exit_code, remote.stdout) == (0, told_here)
        assert tensorboard_scalars(client / "tb") == tensorboard_scalars(tmp_path / "tb")
        gone = f"http://127.0.0.1:{free_port()}"
        away = CliRunner().invoke(main, ["--url", gone, "--token", reader, *export])
        assert away.exit_code == 2
        assert away.stderr.startswith(f"error: cannot reach the app at {gone}: ")
        assert away.stderr.count("\n") == 1
        with httpx.Client(base_url=server.url) as http:
            named = http.get("/api/series", params={"name": "run"}).json()
            assert named == [
                {"id": 1, "name": "run", "base": "base", "steps": [1, 2, 3, 4], "axis": "step"}
            ]
            assert http.get("/api/series", params={"name": "nope"}).json() == []
            reply = http.get("/api/series/1/export", params={"steps": [4], "max_flips": 1})
            export = SeriesExport.model_validate_json(reply.content)
            assert export.steps == [4] and len(export.flips) == 1 and export.flips_truncated
            assert http.get("/api/series/9/export").status_code == 404
            bad = http.get("/api/series/1/export", params={"steps": [5, 9], "axis": "step"})
            assert (bad.status_code, bad.json()["detail"]) == (
                422,
                "series 'run' has no step 5, 9 (its steps: 1, 2, 3, 4)",
            )
            assert http.get("/api/series/1/export", params={"max_flips": -1}).status_code == 422
    finally:
        server.stop()
