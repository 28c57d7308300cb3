"""`forgetmap backup` and `forgetmap restore` on real files: a database with imports (long answers
in answer files), pairs, a series, tokens and jobs comes back whole, table by table and byte by
byte; a backup taken while an import writes holds the state before it or after it, never a mix;
what would be overwritten is refused, and a failed restore leaves nothing."""

from __future__ import annotations

import json
import random
import threading

import pyarrow.parquet as pq
import pytest
from forgetmap import importers
from forgetmap.db import Store, open_store, texts
from forgetmap.db import ingest as ingest_module
from forgetmap.db.backup import MANIFEST, TABLES, TEXTS, take_backup
from forgetmap.db.jobs import insert_job, insert_shard
from forgetmap.db.store import HEAD_REVISION
from forgetmap.demo.layouts.paper import make_items, write_run
from forgetmap.importers import import_file
from forgetmap.importers.lighteval import reader as lighteval

from tests.support.cli import Cli
from tests.support.series_fixtures import load_run
from tests.support.server import Server

BASE, POST = "org/base-7b", "org/base-7b-instruct"
TASKS = [f"community|t{i}_reasoning_letter:main|0" for i in range(3)]
ITEMS = {t: make_items(t, 10) for t in TASKS}


def _write_model(out, model, *, seed, answer_tokens):
    rng = random.Random(hash((model, seed)) % 1000)
    write_run(
        out,
        model,
        f"2025-07-0{seed + 1}T10-00-00.000001",
        {t: (ITEMS[t], [rng.random() < 0.6 for _ in ITEMS[t]]) for t in TASKS},
        style="chat" if answer_tokens else "base",
        seed=seed,
        answer_tokens=answer_tokens,
    )
    return out


def _answer_bytes(db) -> dict[str, bytes]:
    folder = texts.folder_of(db)
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.is_dir() else {}


@pytest.fixture
def filled(tmp_path) -> Cli:
    """Two models over two seeds (the post model's chains of thought in answer files), a pair,
    a training run's series, tokens, a job with shards."""
    cli = Cli(tmp_path / "fm.duckdb")
    for seed in (0, 1):
        cli(
            "import",
            "lighteval",
            _write_model(tmp_path / f"b{seed}", BASE, seed=seed, answer_tokens=0),
        )
        cli(
            "import",
            "lighteval",
            _write_model(tmp_path / f"p{seed}", POST, seed=seed, answer_tokens=600),
        )
    cli("pair", "add", BASE, POST, "--label", "instruct")
    load_run(cli, tmp_path)
    cli("token", "create", "worker-1", "--role", "worker")
    cli("token", "create", "alice")
    store = open_store(cli.db)
    try:
        with store.transaction() as conn:
            job = insert_job(conn, "evaluate", {"models": [POST], "benchmarks": ["t0"]})
            for seed in (0, 1):
                insert_shard(
                    conn,
                    job_id=job,
                    model=POST,
                    benchmark="t0",
                    seed=seed,
                    config_hash="c0",
                    spec={"seed": seed},
                    status="queued",
                )
    finally:
        store.close()
    assert len(_answer_bytes(cli.db)) == 2
    return cli


def test_a_restored_database_has_every_row_and_answer_file_of_the_original(filled, tmp_path):
    filled("backup", tmp_path / "backup")
    manifest = json.loads((tmp_path / "backup" / MANIFEST).read_text())
    assert manifest["schema_revision"] == HEAD_REVISION
    assert manifest["tables"] == {t: len(rows) for t, rows in filled.contents().items()}
    assert len(manifest["answer_files"]) == 2 and manifest["missing_answer_files"] == []

    restored = Cli(tmp_path / "restored" / "fm.duckdb")
    out = restored("restore", tmp_path / "backup").stdout
    assert out.startswith("restored ") and str(restored.db) in out
    assert restored.contents() == filled.contents()
    assert _answer_bytes(restored.db) == _answer_bytes(filled.db)
    assert restored.json("map", "--format", "json") == filled.json("map", "--format", "json")
    # sequences carry on past the restored ids: new rows get new ids
    restored("token", "create", "bob")
    restored("pair", "add", "run-step1", "run-step2")
    before, after = filled.contents(), restored.contents()
    for table in ("api_tokens", "pairs"):
        assert min(r[0] for r in after[table] if r not in before[table]) > max(
            r[0] for r in before[table]
        )


def test_the_answers_are_read_back_from_the_restored_answer_files(filled, tmp_path):
    filled("backup", tmp_path / "backup")
    restored = Cli(tmp_path / "fm2.duckdb")
    restored("restore", tmp_path / "backup")
    store = open_store(restored.db)
    try:
        with store.read() as conn:
            refs = [
                r
                for (r,) in conn.execute(
                    "SELECT response_ref FROM results WHERE response_ref IS NOT NULL"
                ).fetchall()
            ]
            answers = texts.read_texts(conn, refs)
    finally:
        store.close()
    assert len(answers) == len(refs) == 2 * len(TASKS) * 10
    assert all(len(a) > 1000 and "missing" not in a[:40] for a in answers.values())


def test_backup_refuses_a_folder_that_holds_something(filled, tmp_path):
    target = tmp_path / "taken"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    result = filled("backup", target, ok=False)
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0 and "already exists" in result.stderr
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_restore_refuses_a_database_that_holds_rows(filled, tmp_path):
    filled("backup", tmp_path / "backup")
    before, answers = filled.contents(), _answer_bytes(filled.db)
    result = filled("restore", tmp_path / "backup", ok=False)
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0 and "already holds a database" in result.stderr
    assert filled.contents() == before and _answer_bytes(filled.db) == answers


def test_restore_into_an_empty_database_file(filled, tmp_path):
    """A file with the schema and no rows (what `forgetmap up` leaves) may be restored into."""
    filled("backup", tmp_path / "backup")
    empty = tmp_path / "empty.duckdb"
    open_store(empty).close()
    Cli(empty)("restore", tmp_path / "backup")
    assert Cli(empty).contents() == filled.contents()


@pytest.mark.parametrize("damage", ["truncated table", "count", "answer file", "file name"])
def test_a_failed_restore_leaves_nothing(filled, tmp_path, damage):
    backup = tmp_path / "backup"
    filled("backup", backup)
    manifest = json.loads((backup / MANIFEST).read_text())
    if damage == "truncated table":
        path = backup / TABLES / "results.parquet"
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "count":
        manifest["tables"]["pairs"] += 1
    elif damage == "answer file":
        (backup / TEXTS / next(iter(manifest["answer_files"]))).unlink()
    else:
        manifest["missing_answer_files"] = ["../../fm.duckdb"]
    (backup / MANIFEST).write_text(json.dumps(manifest))
    target = tmp_path / "restored"
    target.mkdir()
    result = Cli(target / "fm.duckdb")("restore", backup, ok=False)
    assert result.exit_code == 2 and result.stderr.startswith("error: ")
    assert result.stderr.strip().count("\n") == 0
    assert list(target.iterdir()) == []


def test_an_older_backup_is_restored_at_the_newest_schema(filled, tmp_path):
    old = Store(filled.db)
    old.downgrade("0009")  # answers back in their rows, no text_files
    old.close()
    old = Store(filled.db)
    try:
        take_backup(old, tmp_path / "backup")
    finally:
        old.close()
    assert json.loads((tmp_path / "backup" / MANIFEST).read_text())["schema_revision"] == "0009"
    restored = Cli(tmp_path / "fm2.duckdb")
    restored("restore", tmp_path / "backup")
    store = Store(restored.db, read_only=True)
    try:
        assert store.current_revision() == HEAD_REVISION
    finally:
        store.close()
    open_store(filled.db).close()  # the original at head again, for the map's sake
    assert restored.json("map", "--format", "json") == filled.json("map", "--format", "json")


def _state(folder) -> tuple[frozenset[str], int, int, set[str]]:
    """What a backup holds: its models, results, runs and answer files, each read from its own
    Parquet file (and checked against the manifest's counts)."""
    manifest = json.loads((folder / MANIFEST).read_text())
    tables = {t: pq.read_table(folder / TABLES / f"{t}.parquet") for t in manifest["tables"]}
    assert {t: v.num_rows for t, v in tables.items()} == manifest["tables"]
    named = set(tables["text_files"]["name"].to_pylist())
    on_disk = {p.name for p in (folder / TEXTS).iterdir()} if (folder / TEXTS).is_dir() else set()
    assert named == on_disk == set(manifest["answer_files"])
    return (
        frozenset(tables["models"]["name"].to_pylist()),
        tables["results"].num_rows,
        tables["runs"].num_rows,
        named,
    )


@pytest.fixture
def small_batches(monkeypatch):
    """A batch a task: an import writes its transaction in many statements."""
    monkeypatch.setattr(lighteval, "TASK_BYTES", (1, 1))
    monkeypatch.setattr(lighteval, "BATCH_BYTES", 1)
    monkeypatch.setattr(importers, "JOIN_BYTES", 1)  # the store takes them one by one


def test_a_backup_during_an_import_holds_the_state_before_it(tmp_path, small_batches, monkeypatch):
    """The import is held open after its first batches; a backup then has none of it, and once it
    has committed, all of it."""
    db = tmp_path / "fm.duckdb"
    store = open_store(db)
    import_file(store, "lighteval", _write_model(tmp_path / "b", BASE, seed=0, answer_tokens=0))
    post_tree = _write_model(tmp_path / "p", POST, seed=0, answer_tokens=600)
    halfway, backed_up = threading.Event(), threading.Event()
    original_add = ingest_module.Ingest.add
    batches = []

    def add_then_wait(self, table, *args, **kwargs):
        result = original_add(self, table, *args, **kwargs)
        batches.append(table.num_rows)
        if len(batches) == 2:
            halfway.set()
            assert backed_up.wait(60)
        return result

    monkeypatch.setattr(ingest_module.Ingest, "add", add_then_wait)
    failures = []

    def run_import():
        try:
            import_file(store, "lighteval", post_tree)
        except BaseException as exc:  # reported by the test below
            failures.append(exc)
            halfway.set()

    importer = threading.Thread(target=run_import)
    importer.start()
    try:
        assert halfway.wait(60) and not failures
        take_backup(store, tmp_path / "during")
    finally:
        backed_up.set()
        importer.join(60)
    assert not failures and len(batches) == len(TASKS)
    take_backup(store, tmp_path / "after")
    store.close()
    rows = len(TASKS) * 10
    assert _state(tmp_path / "during") == (frozenset({BASE}), rows, len(TASKS), set())
    models, results, runs, names = _state(tmp_path / "after")
    assert (models, results, runs, len(names)) == (frozenset({BASE, POST}), 2 * rows, 6, 1)


def test_backups_taken_while_imports_commit_are_never_a_mix(tmp_path, small_batches):
    """Imports of six models commit one after another on one thread while backups are taken on
    another: each backup is the state after some number of them, in every table alike."""
    db = tmp_path / "fm.duckdb"
    store = open_store(db)
    models = [f"org/model-{i}" for i in range(6)]
    trees = [
        _write_model(tmp_path / f"t{i}", m, seed=0, answer_tokens=300 * (i % 2))
        for i, m in enumerate(models)
    ]
    failures = []

    def run_imports():
        try:
            for tree in trees:
                import_file(store, "lighteval", tree)
        except BaseException as exc:  # reported by the test below
            failures.append(exc)

    importer = threading.Thread(target=run_imports)
    importer.start()
    states = []
    while importer.is_alive() or not states:
        folder = tmp_path / f"backup-{len(states)}"
        take_backup(store, folder)
        states.append(_state(folder))
    importer.join()
    store.close()
    assert not failures
    rows = len(TASKS) * 10
    for found, results, runs, names in states:
        k = len(found)
        assert found == frozenset(models[:k])  # imports commit in order
        assert (results, runs, len(names)) == (k * rows, k * len(TASKS), k // 2)
    assert len({s[0] for s in states}) > 1  # backups did overlap the imports


def test_a_backup_while_the_app_serves_is_taken_by_the_app_and_restores_whole(filled, tmp_path):
    """With `forgetmap serve` owning the file, `backup` runs inside the app (the file is locked
    to anyone else: a local run would fail with "in use") and restores to the same tables."""
    before, answers = filled.contents(), _answer_bytes(filled.db)
    server = Server(filled.db)
    try:
        done = filled("backup", tmp_path / "served")
        assert "in use" not in done.stderr
    finally:
        server.stop()
    restored = Cli(tmp_path / "restored" / "fm.duckdb")
    restored("restore", tmp_path / "served")
    assert restored.contents() == before
    assert _answer_bytes(restored.db) == answers
