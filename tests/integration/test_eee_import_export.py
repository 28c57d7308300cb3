"""Every Eval Ever files through the command line, with the database's file and through the app
that owns it: hand-written instance files give the map computed by hand; a model exported
validates against the format's schemas (tests/support/eee_schema.py) and imports into a fresh
database as the very same rows; refusals are one line; a remote app takes the files uploaded."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from forgetmap.db.prompts import full_prompt
from forgetmap.db.texts import folder_of

from tests.support import eee_files as files
from tests.support.cli import Cli, cli_both_ways
from tests.support.eee_files import BASE, LONG_THOUGHT, POST
from tests.support.eee_schema import check_export
from tests.support.server import Server

cli = cli_both_ways()


def _by_unit(records: list[dict]) -> dict[tuple, dict]:
    return {(r["benchmark"], r["seed"]): r for r in records}


def test_hand_written_files_give_the_hand_computed_map(cli, tmp_path):
    imported = cli("import", "eee", files.write_pair(tmp_path / "in"))
    assert imported.stdout == (
        f"imported 32 new rows (0 already stored) for {BASE}, {POST} on 2 benchmarks\n"
    )
    cli("pair", "add", BASE, POST)
    records = _by_unit(cli.json("map", "--level", "benchmark", "--format", "json"))
    assert set(records) == {("toy_mc", 0), ("toy_gen", 0), ("toy_gen", 1)}
    # toy_mc: base 11110000, post 11001000, k = 4; chance term (1-1/2)(1-3/8)/3 = 5/48
    expected = {
        ("toy_mc", 0): dict(
            category="Toy",
            n=8,
            num_choices=4,
            acc_pre=0.5,
            acc_post=0.375,
            n_00=3,
            n_01=1,
            n_10=2,
            n_11=2,
            f=0.25,
            bt=0.125,
            f_chance=5 / 48,
            f_true=0.25 - 5 / 48,
            bt_true=0.125 - 5 / 48,
            f_max=1 / 3,
            bt_max=1 / 6,
        ),
        # toy_gen, generative (no chance term): epoch 1 -> seed 0 (1100 -> 1010), epoch 2 ->
        # seed 1 (1110 -> 1111)
        ("toy_gen", 0): dict(
            category="Uncategorized",
            n=4,
            num_choices=None,
            n_00=1,
            n_01=1,
            n_10=1,
            n_11=1,
            f=0.25,
            bt=0.25,
            f_chance=0.0,
            f_true=0.25,
            bt_true=0.25,
            f_max=0.5,
            bt_max=0.5,
        ),
        ("toy_gen", 1): dict(
            n=4,
            n_00=0,
            n_01=1,
            n_10=0,
            n_11=3,
            acc_pre=0.75,
            acc_post=1.0,
            f=0.0,
            bt=0.25,
            f_true=0.0,
            bt_true=0.25,
            f_max=0.75,
            bt_max=1.0,
        ),
    }
    for unit, values in expected.items():
        assert {k: records[unit][k] for k in values} == pytest.approx(values), unit


def test_an_export_validates_and_imports_back_as_the_same_rows(cli, tmp_path, monkeypatch):
    source = files.write_helm(files.write_pair(tmp_path / "in"))
    told = cli("import", "eee", source, "--evaluation-result-id", "exact_match")
    assert "toy_helm: evaluation_result_id exact_match, f1; took exact_match\n" in told.stderr
    client = tmp_path / "client"
    client.mkdir()
    monkeypatch.chdir(client)  # the exports' folders are the client's, through the app too
    for model, folder in ((BASE, "base"), (POST, "post")):
        done = cli("export", "eee", model, folder)
        assert done.stdout == (
            f"exported 19 rows of {model} (3 benchmarks, 4 runs: an aggregate and an instance "
            f"file each) to {client / folder}\n"
        )
        assert len(check_export(client / folder)) == 4
    fresh = Cli(tmp_path / "fresh.duckdb")
    fresh("import", "eee", client / "base")
    fresh("import", "eee", client / "post")
    stored = _stored_rows(cli.db)
    assert len(stored) == 2 * 19
    assert _stored_rows(fresh.db) == stored
    assert any(row[9] == LONG_THOUGHT + "\n\nThe answer is A." for row in stored)  # in a file
    for each in (cli, fresh):
        each("pair", "add", BASE, POST)
    assert fresh.json("map", "--format", "json") == cli.json("map", "--format", "json")


def _stored_rows(db: Path) -> list[tuple]:
    """Every stored field of every result, with its model's and benchmark's names, the whole
    prompt and the whole answer; read from a copy of the file (an app may own it)."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / db.name
        shutil.copyfile(db, copy)
        wal = db.with_name(db.name + ".wal")
        if wal.exists():
            shutil.copyfile(wal, copy.with_name(copy.name + ".wal"))
        conn = duckdb.connect(str(copy))
        try:
            rows = conn.execute(
                f"""
                SELECT m.name, b.name, b.category, b.num_choices, r.seed, r.sample_id, r.correct,
                       r.num_choices, {full_prompt("r")}, r.response, r.response_ref, r.question,
                       r.prediction, r.gold, r.choices, r.doc_hash, r.prompt_tokens,
                       r.completion_tokens, r.answer_status
                FROM results r JOIN models m ON m.id = r.model_id
                JOIN benchmarks b ON b.id = r.benchmark_id
                ORDER BY m.name, b.name, r.seed, r.sample_id
                """
            ).fetchall()
        finally:
            conn.close()
    texts = {}
    for answers in folder_of(db).glob("*.parquet"):
        table = pq.read_table(answers)
        texts.update(zip(table["ref"].to_pylist(), table["text"].to_pylist(), strict=True))
    return [
        (*row[:9], texts[row[10]] if row[10] is not None else row[9], *row[11:]) for row in rows
    ]


def test_refusals_are_one_line(cli, tmp_path):
    helm = files.write_helm(tmp_path / "helm")
    answers = [
        cli("import", "eee", helm, ok=False),
        cli("import", "eee", tmp_path / "nope", ok=False),
        cli("export", "eee", "nobody", tmp_path / "out", ok=False),
        cli("export", "eee", BASE, helm, ok=False),
    ]
    assert [a.exit_code for a in answers] == [2, 2, 2, 2]
    assert [a.stderr for a in answers] == [
        "error: evaluation 'toy_helm' has one line per sample and metric (evaluation_result_id "
        "exact_match, f1); choose one with --evaluation-result-id ID (nothing was imported)\n",
        f"error: {tmp_path / 'nope'}: no such file or folder (expected an Every Eval Ever "
        "instance file <uuid>_samples.jsonl (with its aggregate <uuid>.json beside it, or "
        "without), the aggregate itself, or a folder of them) (nothing was imported)\n",
        "error: unknown model 'nobody'; the stored models: none yet\n",
        f"error: {helm} already exists and is not an empty folder; choose a new path\n",
    ]
    assert not (tmp_path / "out").exists()


def test_a_remote_app_takes_the_folder_uploaded(tmp_path):
    source = files.write_helm(files.write_pair(tmp_path / "in"))
    local = Cli(tmp_path / "local.duckdb")
    local("import", "eee", source, "--evaluation-result-id", "exact_match")
    app = Cli(tmp_path / "app.duckdb")
    token = app("token", "create", "uploader", "--role", "submit").stdout.strip()
    server = Server(app.db)
    try:
        remote = Cli(tmp_path / "elsewhere.duckdb")(
            "--url",
            server.url,
            "--token",
            token,
            "import",
            "eee",
            source,
            "--evaluation-result-id",
            "exact_match",
        )
    finally:
        server.stop()
    assert remote.stdout.startswith(f"imported 38 new rows (0 already stored) for {BASE}, {POST}")
    assert "toy_helm: evaluation_result_id exact_match, f1; took exact_match\n" in remote.stderr
    assert _stored_rows(app.db) == _stored_rows(local.db)
    assert not (tmp_path / "elsewhere.duckdb").exists()
