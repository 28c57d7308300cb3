"""The app keeps checkpoints rare (a checkpoint holds every reader until it is done): its store
sets DuckDB's checkpoint threshold from FORGETMAP_CHECKPOINT_MB; a command's own store keeps
DuckDB's default, and what the app committed is in the file after it stops. And the app computes
the default map and the atlas before it serves (FORGETMAP_WARM_START), so its first visitor finds
them ready."""

from __future__ import annotations

import duckdb
from fastapi.testclient import TestClient
from forgetmap.db.store import open_store
from forgetmap.runtime.config import WebSettings
from forgetmap.web import create_app


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


def test_the_app_computes_the_map_and_the_atlas_before_it_serves(cli, tmp_path, monkeypatch):
    rows = ["model,benchmark,sample_id,correct,num_choices"]
    rows += [f"{m},toy,q{i},{(i + n) % 2},4" for n, m in enumerate(("a", "b")) for i in range(6)]
    (tmp_path / "rows.csv").write_text("\n".join(rows) + "\n")
    cli("import", "table", tmp_path / "rows.csv")
    cli("pair", "add", "a", "b")
    for warm in (True, False):
        settings = WebSettings(secret_key="k", reconcile_seconds=3600, warm_start=warm)
        with TestClient(create_app(cli.db, settings=settings)) as client:
            cache = client.app.state.map_cache.cache
            keys = set(cache._entries)  # what the read cache holds before any request
            assert (("map", "category", "macro") in keys) is warm
            assert any(k[0] == "atlas" for k in keys) is warm
            assert client.get("/api/map").json()[0]["n"] == 6
