"""Backups: a consistent snapshot of a database and its answer files, and restoring one.

A backup is a folder:

- ``tables/``: DuckDB's ``EXPORT DATABASE`` in Parquet (a ``<table>.parquet`` per table, with
  DuckDB's own ``schema.sql`` and ``load.sql``, so plain DuckDB can ``IMPORT DATABASE`` it too);
- ``texts/``: the answer files the committed imports name (``app.db.texts``);
- ``manifest.json``: forgetmap's version, the schema revision, the rows of every table, the
  sequences' values, the answer files' sizes, when it was taken.

The snapshot is taken by whoever owns the file (the CLI, or the running app through it) inside one
read transaction of the store: every table, row count and answer file name comes from the same
committed state, while imports and workers go on writing. Answer files need no transaction:
once their import commits they never change.

A restore trusts no SQL of the backup: it creates a new file at the backup's schema revision from
forgetmap's own migrations, loads each table it knows from its Parquet file, checks the rows
against the manifest, sets each sequence past its ids, copies the answer files, upgrades the file
to the newest schema, and only then gives it the database's name: a failed restore leaves nothing.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from app.db.store import HEAD_REVISION, Connection, Store, StoreError, open_store
from app.db.texts import PARTIAL, committed_names, folder_of

FORMAT = 1
"""The layout of a backup folder; a restore refuses others."""
MANIFEST = "manifest.json"
TABLES = "tables"
TEXTS = "texts"
ANSWER_FILE_NAME = re.compile(r"\d{8}-[0-9a-f]{32}\.parquet")
"""How ``TextWriter`` names an answer file; a restore copies no other name."""
REVISION = re.compile(r"\d{4}")
LARGEST_ID = 2**31 - 1  # the id columns are INTEGER


class BackupError(StoreError):
    """A backup cannot be taken or restored; the message says why, in one line."""


def take_backup(store: Store, target: Path) -> dict:
    """Write a backup of ``store`` to the new folder ``target`` (absent or empty) and return its
    manifest. It is written beside ``target`` and renamed at the end: a failed backup leaves
    nothing."""
    target = Path(target)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise BackupError(f"{target} already exists and is not an empty folder; choose a new path")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.partial-{uuid.uuid4().hex[:12]}")
    staging.mkdir()
    try:
        manifest = _snapshot(store, staging)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def _snapshot(store: Store, folder: Path) -> dict:
    with store.read() as conn:
        conn.begin()  # one snapshot for every statement below
        try:
            tables = _tables(conn)
            rows = {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0] for t in tables}
            (revision,) = conn.execute("SELECT version_num FROM alembic_version").fetchall()[0]
            sequences = dict(
                conn.execute(
                    "SELECT sequence_name, coalesce(last_value, 0) FROM duckdb_sequences() "
                    "WHERE database_name = current_database() ORDER BY sequence_name"
                ).fetchall()
            )
            names = committed_names(conn) if "text_files" in tables else []
            conn.execute(
                f"EXPORT DATABASE {_literal(folder / TABLES)} (FORMAT parquet, COMPRESSION zstd)"
            )
        finally:
            conn.rollback()  # it wrote nothing
    copied, missing = _copy_committed_answer_files(folder_of(store.path), folder / TEXTS, names)
    return {
        "format": FORMAT,
        "forgetmap_version": _forgetmap_version(),
        "schema_revision": revision,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "tables": rows,
        "sequences": sequences,
        "answer_files": copied,
        "missing_answer_files": missing,
    }


def _copy_committed_answer_files(
    source: Path, target: Path, names: list[str]
) -> tuple[dict[str, int], list[str]]:
    """Copy the named answer files; their sizes, and the names of those not in place (deleted by
    hand: the drill-down says so for their answers, the backup records it)."""
    copied: dict[str, int] = {}
    missing: list[str] = []
    for name in names:
        # an import that just committed renames its file from ``.partial`` right after the commit
        for candidate in (name, name + PARTIAL, name):
            try:
                target.mkdir(exist_ok=True)
                shutil.copyfile(source / candidate, target / name)
            except FileNotFoundError:
                continue
            copied[name] = (target / name).stat().st_size
            break
        else:
            missing.append(name)
    return copied, missing


def read_manifest(folder: Path) -> dict:
    """A backup's manifest, its fields checked (a backup folder is input like any file)."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise BackupError(f"{folder} is not a forgetmap backup (no {MANIFEST})") from None
    except (OSError, ValueError) as exc:
        raise BackupError(f"cannot read {folder / MANIFEST}: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{folder / MANIFEST} is not a backup manifest of format {FORMAT}")
    revision = manifest.get("schema_revision")
    if not isinstance(revision, str) or not REVISION.fullmatch(revision):
        raise BackupError(f"{folder / MANIFEST}: schema_revision must be like '{HEAD_REVISION}'")
    if revision > HEAD_REVISION:
        raise BackupError(
            f"the backup has schema {revision}, newer than this forgetmap's {HEAD_REVISION}: "
            "restore it with a newer forgetmap"
        )
    for key, limit in (("tables", None), ("sequences", LARGEST_ID), ("answer_files", None)):
        counts = manifest.get(key)
        if not isinstance(counts, dict) or not all(
            isinstance(k, str) and type(v) is int and 0 <= v <= (limit or v)
            for k, v in counts.items()
        ):
            raise BackupError(f"{folder / MANIFEST}: {key} must map names to counts")
    missing = manifest.get("missing_answer_files")
    if not isinstance(missing, list) or not all(isinstance(n, str) for n in missing):
        raise BackupError(f"{folder / MANIFEST}: missing_answer_files must list names")
    bad = [n for n in [*manifest["answer_files"], *missing] if not ANSWER_FILE_NAME.fullmatch(n)]
    if bad:
        raise BackupError(f"{folder / MANIFEST}: {bad[0]!r} is not an answer file's name")
    return manifest


def restore_backup(source: Path, database: Path) -> dict:
    """Restore the backup in ``source`` into ``database`` (absent, or a file with no rows) and
    its answer files; return the manifest. Built under another name and renamed at the end."""
    source, database = Path(source), Path(database)
    manifest = read_manifest(source)
    _check_target(database)
    database.parent.mkdir(parents=True, exist_ok=True)
    staging = database.with_name(f".{database.name}.restoring-{uuid.uuid4().hex[:12]}")
    try:
        _build(source, staging, manifest)
        open_store(staging).close()  # the newest schema, when the backup is older
        _move_into_place(staging, database)
    except BaseException:
        _remove_database(staging)
        raise
    return manifest


def _build(source: Path, staging: Path, manifest: dict) -> None:
    revision = manifest["schema_revision"]
    store = Store(staging)
    try:
        try:
            store.upgrade("head" if revision == HEAD_REVISION else revision)
        except Exception as exc:  # Alembic's own errors, e.g. an unknown revision
            raise BackupError(f"cannot create a database at schema {revision}: {exc}") from exc
        with store.transaction() as conn:
            _load_tables(conn, source / TABLES, manifest)
            _advance_sequences(conn, manifest["sequences"])
            named = set(committed_names(conn)) if "text_files" in manifest["tables"] else set()
        listed = set(manifest["answer_files"]) | set(manifest["missing_answer_files"])
        if named != listed:
            raise BackupError("the backup's answer files are not the ones its text_files names")
        _copy_answer_files(source / TEXTS, folder_of(staging), manifest["answer_files"])
    except duckdb.Error as exc:
        raise BackupError(f"cannot restore {source}: {str(exc).splitlines()[0]}") from exc
    finally:
        store.close()


def _load_tables(conn: Connection, folder: Path, manifest: dict) -> None:
    """Every table of the schema from its Parquet file, its columns and rows checked."""
    tables = [t for t in _tables(conn) if t != "alembic_version"]
    expected = set(manifest["tables"]) - {"alembic_version"}
    if set(tables) != expected:
        raise BackupError(
            f"the backup's tables ({', '.join(sorted(expected))}) are not those of schema "
            f"{manifest['schema_revision']} ({', '.join(tables)})"
        )
    (stamped,) = conn.execute(
        "SELECT list(version_num) FROM read_parquet(?)", [str(folder / "alembic_version.parquet")]
    ).fetchall()[0]
    if stamped != [manifest["schema_revision"]]:
        raise BackupError(f"the backup's tables are stamped {stamped}, its manifest says otherwise")
    for table in tables:
        path = str(folder / f"{table}.parquet")
        columns = _columns(conn, table)
        found = [
            r[0] for r in conn.execute("DESCRIBE SELECT * FROM read_parquet(?)", [path]).fetchall()
        ]
        if sorted(found) != sorted(columns):
            raise BackupError(f"the backup's {table} has columns {found}, the schema {columns}")
        conn.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM read_parquet(?)', [path])
        (count,) = conn.execute(f'SELECT count(*) FROM "{table}"').fetchall()[0]
        if count != manifest["tables"][table]:
            raise BackupError(
                f"the backup's {table} holds {count} rows, its manifest says "
                f"{manifest['tables'][table]}"
            )


def _advance_sequences(conn: Connection, recorded: dict[str, int]) -> None:
    """Each sequence past the ids of its table and its value when the backup was taken, so that
    new rows get new ids (an id once handed out is never reused, as in the original)."""
    owners = conn.execute(
        "SELECT table_name, column_name, regexp_extract(column_default, 'nextval\\(''(\\w+)''\\)', 1) "
        "FROM duckdb_columns() WHERE database_name = current_database() "
        "AND column_default LIKE 'nextval(%'"
    ).fetchall()
    for table, column, sequence in owners:
        (largest,) = conn.execute(f'SELECT coalesce(max("{column}"), 0) FROM "{table}"').fetchall()[
            0
        ]
        wanted = max(largest, recorded.get(sequence, 0))
        if wanted:
            conn.execute(f"SELECT max(nextval('{sequence}')) FROM range(?)", [wanted]).fetchall()


def _copy_answer_files(source: Path, target: Path, sizes: dict[str, int]) -> None:
    if not sizes:
        return
    target.mkdir()
    for name, size in sizes.items():
        path = source / name
        if not path.is_file() or path.stat().st_size != size:
            raise BackupError(f"the backup's answer file {name} is missing or not whole")
        shutil.copyfile(path, target / name)


def _check_target(database: Path) -> None:
    """``database`` may be absent, or a file without rows (what `forgetmap up` creates);
    anything else would be overwritten, so it is refused."""
    if database.exists() and not (database.is_file() and database.stat().st_size == 0):
        _check_no_rows(database)
    texts = folder_of(database)
    if texts.exists() and (not texts.is_dir() or any(texts.iterdir())):
        raise BackupError(f"{texts} already exists; restore into a new database file")


def _check_no_rows(database: Path) -> None:
    refusal = f"{database} already holds a database; restore into a new or empty file"
    try:
        conn = duckdb.connect(str(database), read_only=True)
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():
            raise BackupError(f"database {database} is in use by another process") from exc
        raise BackupError(refusal) from exc
    try:
        tables = [t for t in _tables(conn) if t != "alembic_version"]
        if any(conn.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchall() for t in tables):
            raise BackupError(refusal)
    finally:
        conn.close()
    if database.with_name(database.name + ".wal").exists():
        raise BackupError(refusal)  # its log would be replayed onto the restored file


def _move_into_place(staging: Path, database: Path) -> None:
    texts = folder_of(staging)
    if texts.is_dir():
        texts.rename(folder_of(database))  # onto nothing, or an empty folder
    try:
        staging.replace(database)
    except BaseException:
        if folder_of(database).is_dir():
            folder_of(database).rename(texts)
        raise


def _remove_database(path: Path) -> None:
    for leftover in (path, path.with_name(path.name + ".wal")):
        leftover.unlink(missing_ok=True)
    for folder in (folder_of(path), path.with_name(path.name + ".tmp")):
        shutil.rmtree(folder, ignore_errors=True)


def _tables(conn: Connection) -> list[str]:
    return [
        t
        for (t,) in conn.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main' ORDER BY table_name"
        ).fetchall()
    ]


def _columns(conn: Connection, table: str) -> list[str]:
    return [
        c
        for (c,) in conn.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
            "AND table_name = ? ORDER BY column_index",
            [table],
        ).fetchall()
    ]


def _literal(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _forgetmap_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("forgetmap")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"
