"""Schema migrations and opening the store."""

from __future__ import annotations

from alembic.script import ScriptDirectory
from forgetmap.db.store import (
    HEAD_REVISION,
    SCHEMA_SNAPSHOT,
    Store,
    alembic_config,
    open_store,
    schema_ddl,
)


def test_head_revision_constant_matches_alembic_head():
    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == HEAD_REVISION


def test_fresh_file_is_upgraded_to_head_with_every_table(tmp_path):
    store = open_store(tmp_path / "new" / "fm.duckdb")
    try:
        assert store.current_revision() == HEAD_REVISION
        with store.read() as conn:
            tables = {
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
                ).fetchall()
            }
        assert {
            "models",
            "benchmarks",
            "runs",
            "pairs",
            "jobs",
            "results",
            "transitions",
            "coverage",
            "seed_transitions",
            "alembic_version",
        } <= tables
    finally:
        store.close()


def _ddl(store: Store) -> list[str]:
    with store.read() as conn:
        return schema_ddl(conn)


def test_a_new_file_from_the_snapshot_has_exactly_the_migrated_schema(tmp_path):
    """migrations/schema.sql is what running every migration leaves: same sequences, tables,
    columns, types, defaults and keys, stamped with the same revision. When this fails after a
    new migration, run scripts/dump-schema."""
    migrated = Store(tmp_path / "migrated.duckdb")
    migrated.upgrade(HEAD_REVISION)  # a named revision goes through Alembic
    from_snapshot = open_store(tmp_path / "snapshot.duckdb")  # a new file: the snapshot
    try:
        expected = _ddl(migrated)
        assert _ddl(from_snapshot) == expected
        assert expected[-1] == f"INSERT INTO alembic_version VALUES ('{HEAD_REVISION}');"
        written = [line for line in SCHEMA_SNAPSHOT.read_text().splitlines() if line[:2] != "--"]
        assert written == expected, "migrations/schema.sql is stale: run scripts/dump-schema"
        with from_snapshot.read() as conn:
            conn.execute("INSERT INTO models (name) VALUES ('m')")
            assert conn.execute("SELECT id FROM models").fetchall() == [(1,)]  # sequences work
    finally:
        migrated.close()
        from_snapshot.close()


def test_a_file_with_tables_but_no_revision_is_not_overwritten_by_the_snapshot(tmp_path):
    """Only an empty file takes the snapshot: anything else goes through Alembic, which refuses
    to create tables that already exist rather than silently mixing schemas."""
    import duckdb
    import pytest

    path = tmp_path / "foreign.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE models (x INTEGER)")
    with pytest.raises(Exception, match="models"):
        open_store(path)
    with duckdb.connect(str(path)) as conn:
        columns = "SELECT column_name FROM duckdb_columns() WHERE table_name = 'models'"
        assert conn.execute(columns).fetchall() == [("x",)]


def test_a_new_file_is_created_without_loading_alembic_or_sqlalchemy(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys\n"
        "from forgetmap.db.store import open_store\n"
        f"open_store({str(tmp_path / 'new.duckdb')!r}).close()\n"
        "print(sorted(m for m in ('alembic', 'sqlalchemy') if m in sys.modules))\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_reopening_a_current_file_keeps_its_data(tmp_path):
    path = tmp_path / "fm.duckdb"
    store = open_store(path)
    with store.transaction() as conn:
        conn.execute("INSERT INTO models (name) VALUES ('a'), ('b')")
    store.close()
    store = open_store(path)
    with store.read() as conn:
        ids = conn.execute("SELECT id, name FROM models ORDER BY id").fetchall()
    store.close()
    assert ids == [(1, "a"), (2, "b")]


def test_upgrade_from_0002_keeps_shards_and_marks_them_evaluations(tmp_path):

    from forgetmap.db.store import Store

    path = tmp_path / "old.duckdb"
    store = Store(path)
    store.upgrade("0002")
    with store.transaction() as conn:
        conn.execute("INSERT INTO models (name) VALUES ('m')")
        conn.execute(
            "INSERT INTO shards (job_id, model_id, benchmark, seed, config_hash, spec, status) "
            "VALUES (1, 1, 'piqa', 0, 'h', '{}', 'done')"
        )
    assert store.current_revision() == "0002"
    store.upgrade()
    with store.read() as conn:
        assert conn.execute("SELECT benchmark, status, kind FROM shards").fetchall() == [
            ("piqa", "done", "evaluate")
        ]
        assert conn.execute("SELECT count(*) FROM recoveries").fetchall() == [(0,)]
    assert store.current_revision() == HEAD_REVISION
    store.close()


def test_tokens_made_before_roles_survive_0004_as_admin_tokens(tmp_path):
    """docs/api.md ("Tokens and roles"): existing tokens become admin tokens, `up`'s local worker a
    worker token; jobs from before have no owner, shards no re-sends."""

    from forgetmap.db.store import Store
    from forgetmap.services.tokens import Role, hash_token, token_principal

    store = Store(tmp_path / "old.duckdb")
    store.upgrade("0003")
    with store.transaction() as conn:
        for name in ("alice", "local-worker"):
            conn.execute(
                "INSERT INTO api_tokens (name, token_hash) VALUES (?, ?)",
                (name, hash_token(f"fm_secret-of-{name}")),
            )
        conn.execute("INSERT INTO jobs (kind, status, payload) VALUES ('evaluate', 'done', '{}')")
        conn.execute(
            "INSERT INTO shards (job_id, model_id, benchmark, seed, config_hash, spec, status) "
            "VALUES (1, 1, 'piqa', 0, 'h', '{}', 'queued')"
        )
    store.upgrade()
    assert store.current_revision() == HEAD_REVISION
    with store.read() as conn:
        alice = token_principal(conn, "fm_secret-of-alice")
        worker = token_principal(conn, "fm_secret-of-local-worker")
        assert (alice.name, alice.role) == ("alice", Role.admin)
        assert (worker.name, worker.role) == ("local-worker", Role.worker)
        assert conn.execute("SELECT owner FROM jobs").fetchall() == [(None,)]
        assert conn.execute("SELECT resends, delivery FROM shards").fetchall() == [(0, None)]
    store.close()
