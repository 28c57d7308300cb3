"""Schema migrations and opening the store."""

from __future__ import annotations

from alembic.script import ScriptDirectory

from app.db.store import HEAD_REVISION, alembic_config, open_store


def test_head_revision_constant_matches_alembic_head():
    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == HEAD_REVISION


def test_fresh_file_is_upgraded_to_head_with_every_table(tmp_path):
    store = open_store(tmp_path / "new" / "fm.duckdb")
    try:
        assert store.current_revision() == HEAD_REVISION
        with store.read() as conn:
            tables = {
                r[0]
                for r in conn.exec_driver_sql(
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


def test_reopening_a_current_file_keeps_its_data(tmp_path):
    path = tmp_path / "fm.duckdb"
    store = open_store(path)
    with store.transaction() as conn:
        conn.exec_driver_sql("INSERT INTO models (name) VALUES ('a'), ('b')")
    store.close()
    store = open_store(path)
    with store.read() as conn:
        ids = conn.exec_driver_sql("SELECT id, name FROM models ORDER BY id").fetchall()
    store.close()
    assert ids == [(1, "a"), (2, "b")]


def test_upgrade_from_0002_keeps_shards_and_marks_them_evaluations(tmp_path):
    from alembic import command

    from app.db.store import Store

    path = tmp_path / "old.duckdb"
    store = Store(path)
    config = alembic_config()
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0002")
    with store.transaction() as conn:
        conn.exec_driver_sql("INSERT INTO models (name) VALUES ('m')")
        conn.exec_driver_sql(
            "INSERT INTO shards (job_id, model_id, benchmark, seed, config_hash, spec, status) "
            "VALUES (1, 1, 'piqa', 0, 'h', '{}', 'done')"
        )
    assert store.current_revision() == "0002"
    store.upgrade()
    with store.read() as conn:
        assert conn.exec_driver_sql("SELECT benchmark, status, kind FROM shards").fetchall() == [
            ("piqa", "done", "evaluate")
        ]
        assert conn.exec_driver_sql("SELECT count(*) FROM recoveries").fetchall() == [(0,)]
    assert store.current_revision() == HEAD_REVISION
    store.close()


def test_declared_models_match_the_migrated_tables(tmp_path):
    """app/db/schema.py is the schema's readable reference; the migrations are its DDL."""
    from app.db.schema import Base

    store = open_store(tmp_path / "fm.duckdb")
    try:
        with store.read() as conn:
            for table in Base.metadata.sorted_tables:
                rows = conn.exec_driver_sql(
                    "SELECT column_name, is_nullable FROM information_schema.columns "
                    "WHERE table_name = ? ORDER BY ordinal_position",
                    (table.name,),
                ).fetchall()
                migrated = {name: nullable == "YES" for name, nullable in rows}
                declared = {c.name: c.nullable for c in table.columns}
                assert set(migrated) == set(declared), table.name
                for name, nullable in declared.items():
                    if not table.columns[name].primary_key:
                        assert migrated[name] == nullable, f"{table.name}.{name}"
    finally:
        store.close()
