"""The app keeps checkpoints rare (a checkpoint holds every reader until it is done): its store
sets DuckDB's checkpoint threshold from FORGETMAP_CHECKPOINT_MB; a command's own store keeps
DuckDB's default, and what the app committed is in the file after it stops."""

from __future__ import annotations

import duckdb
from fastapi.testclient import TestClient

from app.db.store import open_store
from app.runtime.config import WebSettings
from app.web import create_app


def threshold(store) -> str:
    with store.read() as conn:
        return conn.execute("SELECT current_setting('checkpoint_threshold')").fetchall()[0][0]


def test_the_app_sets_the_checkpoint_threshold_and_a_command_does_not(tmp_path, monkeypatch):
    db = tmp_path / "fm.duckdb"
    store = open_store(db)
    default = threshold(store)
    store.close()
    assert WebSettings(secret_key="k").checkpoint_mb == 1024
    monkeypatch.setenv("FORGETMAP_CHECKPOINT_MB", "64")
    settings = WebSettings.from_env(tmp_path)
    assert settings.checkpoint_mb == 64
    with TestClient(create_app(db, settings=settings)) as client:
        assert threshold(client.app.state.store) == "61.0 MiB" != default  # 64 MB = 61 MiB
        store = client.app.state.store  # what the app writes is in the file it checkpoints at exit
        with store.transaction() as conn:
            conn.execute("INSERT INTO models (name) VALUES ('kept')")
    assert not db.with_name(db.name + ".wal").exists()
    names = duckdb.connect(str(db), read_only=True).execute("SELECT name FROM models").fetchall()
    assert names == [("kept",)]
