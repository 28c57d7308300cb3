"""An app SIGKILLed while an upload's import is writing: on restart the database opens as it was
before the import (every table, the answer files), the half-done import left nothing (no rows,
no staged upload, no partial answer file), its job says it was interrupted, the dead app's owner
file is replaced, and uploading the same file again imports it once."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from forgetmap.contract.imports import import_options
from forgetmap.db import open_store
from forgetmap.runtime.owner import owner_path
from forgetmap.services.import_upload import upload_body, upload_import
from forgetmap.services.imports import INTERRUPTED, staging_folder

from tests.support.cli import Cli
from tests.support.server import Server
from tests.support.store_contents import table_contents
from tests.support.tables import BASE, POST, rows_for, write_csv

ROWS = 1_000_000  # five of the table reader's 200,000-row batches: about 4 s of writing here
MODEL = "crash-model"


def write_big_table(path: Path) -> Path:
    """ROWS distinct keys of one model, each with a response long enough for the answer files."""
    i = np.arange(ROWS)

    def joined(prefix: str, values: np.ndarray) -> pa.Array:
        return pc.binary_join_element_wise(
            pa.array(np.full(ROWS, prefix)), pc.cast(pa.array(values), pa.string()), ""
        )

    table = pa.table(
        {
            "model": pa.array(np.full(ROWS, MODEL)),
            "benchmark": joined("crash:b", i % 10),
            "sample_id": joined("q", i // 30),
            "seed": pa.array((i // 10) % 3),
            "correct": pa.array(i % 3 == 0),
            "num_choices": pa.array(np.full(ROWS, 4)),
            "category": pa.array(np.full(ROWS, "Knowledge/QA")),
            "response": joined("Let us think step by step. " * 12 + "#", i),
        }
    )
    pq.write_table(table, path)
    return path


def contents(db: Path) -> dict:
    """Every table's rows, and the answer files beside the database, of a stopped app's file."""
    store = open_store(db)
    try:
        with store.read() as conn:
            tables = table_contents(conn)
    finally:
        store.close()
    texts = db.with_name(db.name + ".texts")
    files = sorted(p.name for p in texts.iterdir()) if texts.exists() else []
    return {"tables": tables, "answer_files": files}


def model_rows(db: Path) -> tuple[int, int]:
    store = open_store(db, read_only=True)
    try:
        with store.read() as conn:
            return conn.execute(
                "SELECT count(*), count(DISTINCT (r.benchmark_id, r.seed, r.sample_id)) "
                "FROM results r JOIN models m ON m.id = r.model_id WHERE m.name = ?",
                [MODEL],
            ).fetchone()
    finally:
        store.close()


def kill_while_writing(server: Server, token: str, path: Path) -> int:
    """Upload ``path`` and SIGKILL the app once its import job reports rows written and is not
    done; the job's id."""
    filename, size, chunks = upload_body(path)
    with httpx.Client(
        base_url=server.url, timeout=120, headers={"Authorization": f"Bearer {token}"}
    ) as client:
        reply = client.post(
            "/api/imports",
            params={"kind": "table", "filename": filename},
            content=chunks,
            headers={"Content-Length": str(size)},
        )
        assert reply.status_code == 202, reply.text
        job_id = reply.json()["id"]
        deadline = time.time() + 120
        while time.time() < deadline:
            job = client.get(f"/api/jobs/{job_id}").json()
            progress = job.get("progress") or {}
            if job["status"] == "running" and progress.get("stage") == "write":
                assert 0 < progress["done"] < ROWS, job
                server.kill()
                return job_id
            assert job["status"] in ("queued", "running"), (
                f"the import ended before the kill: {job}"
            )
            time.sleep(0.01)
    raise AssertionError("the import never reported rows written")


def test_an_import_killed_while_writing_leaves_nothing_and_imports_once_when_retried(tmp_path):
    db = tmp_path / "fm.duckdb"
    cli = Cli(db)
    token = cli("token", "create", "uploader", "--role", "submit").stdout.strip()
    # something stored before, answers in a file beside the database included
    long = [
        {**row, "response": row["response"] + " because" * 40} for row in rows_for("base", BASE)
    ]
    cli("import", "table", write_csv(tmp_path / "before.csv", long + rows_for("post", POST)))
    cli("pair", "add", "base", "post")
    big = write_big_table(tmp_path / "big.parquet")
    before = contents(db)
    assert before["answer_files"], "the data before the import has no answer file to keep"

    server = Server(db)
    job_id = kill_while_writing(server, token, big)
    dead_owner = json.loads(owner_path(db).read_text())  # SIGKILL: no shutdown ran
    staged = staging_folder(db)
    assert any(staged.iterdir()), "the killed import's upload should still be staged"
    partial = [p.name for p in db.with_name(db.name + ".texts").iterdir() if p.suffix == ".partial"]
    assert partial, "the killed import's answer file should have been started"

    server = Server(db)  # the same database opens again
    try:
        owner = json.loads(owner_path(db).read_text())
        assert owner["pid"] == server.proc.pid and owner["app_id"] != dead_owner["app_id"]
        job = httpx.get(f"{server.url}/api/jobs/{job_id}").json()
        assert job["status"] == "failed" and job["error"] == INTERRUPTED, job
        assert not staged.exists() or not any(staged.iterdir())
    finally:
        server.stop()
    after = contents(db)
    jobs_after = after["tables"].pop("jobs")
    assert [j for j in jobs_after if j[0] != job_id] == before["tables"].pop("jobs")
    assert after["tables"] == before["tables"]  # no row of the half-done import anywhere
    assert after["answer_files"] == before["answer_files"]  # nor a partial answer file
    assert model_rows(db) == (0, 0)

    server = Server(db)
    try:
        job = upload_import(server.url, token, big, import_options("table"), timeout=120)
    finally:
        server.stop()
    assert job["request"]["result"]["rows_added"] == ROWS
    assert job["request"]["result"]["rows_unchanged"] == 0
    assert model_rows(db) == (ROWS, ROWS)
