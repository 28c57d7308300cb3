"""Backups: a consistent snapshot of a database and its answer files, and restoring one.

A backup is a folder:

- ``tables/``: DuckDB's ``EXPORT DATABASE`` in Parquet (a ``<table>.parquet`` per table, with
  DuckDB's own ``schema.sql`` and ``load.sql``, so plain DuckDB can ``IMPORT DATABASE`` it too);
- ``texts/``: the answer files the committed imports name (``forgetmap.db.texts``);
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

Nor does it trust the backup's data: a backup folder is input like an uploaded file, and one
anyone could write to could plant an admin token. So a restore refuses, in one line, a folder that
holds anything but plain files and folders (a link is never followed), a column whose type is not
the schema's, a key that comes twice (the schema's primary and unique keys, and a result's
(model, benchmark, seed, sample_id)), and a value the app never writes (``_value_rules``: a
token's role outside ``roles``, a negative seed or count, a ``num_choices`` of 1, a job state
outside the contract's). Login sessions are never restored (everyone logs in again), and tokens
only unless ``tokens=False``; a checksum in the backup would not help: whoever can rewrite a
table can rewrite its checksum too. Backups are written private (folders 0700, files 0600).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any, BinaryIO

import duckdb
from forgetmap.contract.jobs import JobStatus, ShardKind, ShardStatus
from forgetmap.contract.limits import MIN_SEED
from forgetmap.core.recoverability_names import PROBE_ARMS
from forgetmap.db.store import HEAD_REVISION, Connection, Store, StoreError, open_store
from forgetmap.db.texts import PARTIAL, committed_names, folder_of
from forgetmap.runtime.private import keep_new_files_private, make_private

FORMAT = 1
"""The layout of a backup folder; a restore refuses others."""
MANIFEST = "manifest.json"
TABLES = "tables"
TEXTS = "texts"
ANSWER_FILE_NAME = re.compile(r"\d{8}-[0-9a-f]{32}\.parquet")
"""How ``TextWriter`` names an answer file; a restore copies no other name."""
REVISION = re.compile(r"\d{4}")
LARGEST_ID = 2**31 - 1  # the id columns are INTEGER
TOKEN_TABLES = ("api_tokens",)
"""What ``tokens=False`` leaves out of a restore."""
NEVER_RESTORED = ("web_sessions",)
"""Login sessions: a restored database starts with none (everyone logs in again), so a cookie
of a session that was logged out after the backup was taken cannot come back with it."""
UNDECLARED_KEYS = {
    "results": ("model_id", "benchmark_id", "seed", "sample_id"),
    "cross_seed_cells": ("pair_id", "benchmark_id", "seed_a", "seed_b", "num_choices"),
}
"""Keys the schema does not declare but the app keeps unique (ingest refuses a repeated result:
a second copy would count twice in every flip)."""


class BackupError(StoreError):
    """A backup cannot be taken or restored; the message says why, in one line."""


def take_backup(store: Store, target: Path) -> dict[str, Any]:
    """Write a backup of ``store`` to the new folder ``target`` (absent or empty) and return its
    manifest. It is written beside ``target`` and renamed at the end: a failed backup leaves
    nothing."""
    target = Path(target)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise BackupError(f"{target} already exists and is not an empty folder; choose a new path")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.partial-{uuid.uuid4().hex[:12]}")
    staging.mkdir(mode=0o700)  # it holds every result and the tokens' hashes
    try:
        manifest = _snapshot(store, staging)
        with _private_file(staging / MANIFEST) as out:
            out.write((json.dumps(manifest, indent=1) + "\n").encode())
        _make_tree_private(staging)  # what DuckDB's EXPORT wrote, under any umask
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def _snapshot(store: Store, folder: Path) -> dict[str, Any]:
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
                target.mkdir(mode=0o700, exist_ok=True)
                _copy_plain_file(source / candidate, target / name)
            except FileNotFoundError:
                continue
            copied[name] = (target / name).stat().st_size
            break
        else:
            missing.append(name)
    return copied, missing


def read_manifest(folder: Path) -> dict[str, Any]:
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


@dataclass(frozen=True)
class Restored:
    """What a restore brought back: the backup's manifest, (name, role) of each token, and the
    tables it left empty (``NEVER_RESTORED``, and ``TOKEN_TABLES`` with ``tokens=False``)."""

    manifest: dict[str, Any]
    tokens: list[tuple[str, str]]
    skipped: tuple[str, ...]

    @property
    def rows(self) -> int:
        return sum(n for t, n in self.manifest["tables"].items() if t not in self.skipped)


def restore_backup(
    source: Path, database: Path, *, roles: Collection[str], tokens: bool = True
) -> Restored:
    """Restore the backup in ``source`` into ``database`` (absent, or a file with no rows) and
    its answer files. ``roles``: the token roles there are (forgetmap.services.tokens.Role: the
    store sits below it); ``tokens=False`` restores none. Built under another name and renamed at
    the end; a BackupError says in one line what was refused."""
    source, database = Path(source), Path(database)
    _check_plain_tree(source)
    manifest = read_manifest(source)
    _check_target(database)
    keep_new_files_private()  # as every process that writes a database (forgetmap.db.store)
    database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    staging = database.with_name(f".{database.name}.restoring-{uuid.uuid4().hex[:12]}")
    skipped = NEVER_RESTORED if tokens else (*NEVER_RESTORED, *TOKEN_TABLES)
    try:
        restored = _build(source, staging, manifest, roles=roles, skipped=skipped)
        open_store(staging).close()  # the newest schema, when the backup is older
        _move_into_place(staging, database)
    except BaseException:
        _remove_database(staging)
        raise
    return Restored(manifest, restored, skipped)


def _check_plain_tree(source: Path) -> None:
    """Refuse a backup folder that holds a link, a device, a pipe or a socket: a restore reads
    and copies plain files only, and never follows a link out of the folder."""
    if not source.is_dir():
        raise BackupError(f"{source} is not a folder; name a backup folder")
    for folder, folders, files in os.walk(source):  # does not follow links
        for name in (*folders, *files):
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise BackupError(
                    f"refused: the backup holds {path.relative_to(source)}, a symbolic link "
                    "(a backup holds plain files and folders only)"
                )
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise BackupError(
                    f"refused: the backup holds {path.relative_to(source)}, a device, pipe or "
                    "socket (a backup holds plain files and folders only)"
                )


def _build(
    source: Path,
    staging: Path,
    manifest: dict[str, Any],
    *,
    roles: Collection[str],
    skipped: tuple[Any, ...],
) -> list[tuple[str, str]]:
    revision = manifest["schema_revision"]
    store = Store(staging)
    try:
        try:
            store.upgrade("head" if revision == HEAD_REVISION else revision)
        except Exception as exc:  # Alembic's own errors, e.g. an unknown revision
            raise BackupError(f"cannot create a database at schema {revision}: {exc}") from exc
        with store.transaction() as conn:
            _load_tables(conn, source / TABLES, manifest, skipped=skipped)
            _check_values(conn, roles)
            _advance_sequences(conn, manifest["sequences"])
            named = set(committed_names(conn)) if "text_files" in manifest["tables"] else set()
            restored = conn.execute("SELECT name, role FROM api_tokens ORDER BY name").fetchall()
        listed = set(manifest["answer_files"]) | set(manifest["missing_answer_files"])
        if named != listed:
            raise BackupError("the backup's answer files are not the ones its text_files names")
        _copy_answer_files(source / TEXTS, folder_of(staging), manifest["answer_files"])
    except duckdb.Error as exc:
        raise BackupError(f"cannot restore {source}: {str(exc).splitlines()[0]}") from exc
    finally:
        store.close()
    return [(name, role) for name, role in restored]


def _load_tables(
    conn: Connection, folder: Path, manifest: dict[str, Any], *, skipped: tuple[Any, ...]
) -> None:
    """Every table of the schema from its Parquet file (but ``skipped``), its columns, keys and
    rows checked."""
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
    keys = _keys(conn)
    for table in tables:
        if table in skipped:
            continue
        path = str(folder / f"{table}.parquet")
        columns = _columns(conn, table)
        found = dict(
            (r[0], r[1])
            for r in conn.execute("DESCRIBE SELECT * FROM read_parquet(?)", [path]).fetchall()
        )
        if sorted(found) != sorted(columns):
            raise BackupError(
                f"the backup's {table} has columns {list(found)}, the schema {list(columns)}"
            )
        for column, kind in columns.items():
            if found[column] != kind:  # an INTEGER "correct" of 5 would be cast to true
                raise BackupError(
                    f"refused: the backup's {table}.{column} is {found[column]}, the schema's "
                    f"{kind}"
                )
        for key in keys.get(table, ()):
            _check_unique(conn, table, path, key)
        conn.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM read_parquet(?)', [path])
        (count,) = conn.execute(f'SELECT count(*) FROM "{table}"').fetchall()[0]
        if count != manifest["tables"][table]:
            raise BackupError(
                f"the backup's {table} holds {count} rows, its manifest says "
                f"{manifest['tables'][table]}"
            )


def _keys(conn: Connection) -> dict[str, list[tuple[str, ...]]]:
    """Each table's primary and unique keys (the schema's, and ``UNDECLARED_KEYS``)."""
    keys: dict[str, list[tuple[str, ...]]] = {t: [k] for t, k in UNDECLARED_KEYS.items()}
    for table, columns in conn.execute(
        "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
        "WHERE database_name = current_database() AND constraint_type IN ('PRIMARY KEY', 'UNIQUE') "
        "ORDER BY table_name, constraint_index"
    ).fetchall():
        keys.setdefault(table, []).append(tuple(columns))
    return keys


def _check_unique(conn: Connection, table: str, path: str, key: tuple[str, ...]) -> None:
    """Refuse a key that comes twice in the table's Parquet file (rows with a NULL in the key
    may repeat, as the schema's UNIQUE allows), naming the first one."""
    columns = ", ".join(f'"{c}"' for c in key)
    not_null = " AND ".join(f'"{c}" IS NOT NULL' for c in key)
    repeated = conn.execute(
        f"SELECT {columns}, count(*) FROM read_parquet(?) WHERE {not_null} "
        f"GROUP BY ALL HAVING count(*) > 1 LIMIT 1",
        [path],
    ).fetchall()
    if repeated:
        *values, times = repeated[0]
        shown = ", ".join(f"{c}={v!r}" for c, v in zip(key, values, strict=True))
        raise BackupError(f"refused: the backup's {table} holds the key ({shown}) {times} times")


def _value_rules(roles: Collection[str]) -> list[tuple[str, str, str]]:
    """(table, column, an SQL condition that every row the app writes meets); a rule whose
    table or column a schema revision lacks is not asked."""
    listed = ", ".join(f"'{r}'" for r in roles)
    choices_stored = "num_choices IS NULL OR num_choices >= 2"  # as imports check them
    choices_counted = "num_choices = 0 OR num_choices >= 2"  # 0: a generative item
    rules = [
        ("api_tokens", "role", f'"role" IN ({listed})'),
        ("api_tokens", "token_hash", "regexp_full_match(token_hash, '[0-9a-f]{64}')"),
        ("api_tokens", "name", "\"name\" <> ''"),
        ("results", "num_choices", choices_stored),
        ("benchmarks", "num_choices", choices_stored),
        ("benchmarks", "full_size", "full_size IS NULL OR full_size >= 0"),
        ("results", "response_ref", "response_ref IS NULL OR response_ref >= 0"),
        ("jobs", "status", _one_of("status", JobStatus)),
        ("shards", "status", _one_of("status", ShardStatus)),
        ("shards", "kind", f"kind IS NULL OR {_one_of('kind', ShardKind)}"),
        ("series_checkpoints", "step", "step >= 0"),
        ("watch_submissions", "step", "step >= 0"),
        ("text_files", "rows", '"rows" >= 0 AND bytes >= 0'),
        ("probe_outcomes", "arm", f"arm IN ({', '.join(repr(a) for a in PROBE_ARMS)})"),
        ("probe_outcomes", "gold", "num_choices >= 2 AND gold >= 0 AND gold < num_choices"),
        ("probe_outcomes", "chosen", "chosen IS NULL OR (chosen >= 0 AND chosen < num_choices)"),
    ]
    rules += [
        (t, "num_choices", choices_counted)
        for t in ("transitions", "seed_transitions", "cross_seed_cells", "question_flips")
    ]
    seeds = {
        "results": ("seed",),
        "runs": ("seed",),
        "shards": ("seed",),
        "coverage": ("seed",),
        "transitions": ("seed",),
        "question_flips": ("seed",),
        "seed_transitions": ("seed_a", "seed_b"),
        "cross_seed_cells": ("seed_a", "seed_b"),
        "probe_outcomes": ("seed",),
    }
    rules += [(t, c, f"{c} >= {MIN_SEED}") for t, columns in seeds.items() for c in columns]
    counts = {
        "results": ("prompt_tokens", "completion_tokens"),
        "shards": ("done", "total", "attempts", "resends"),
        "coverage": (
            "paired",
            "only_base",
            "only_post",
            "mismatched",
            "ambiguous",
            "by_question",
            "by_text",
        ),
        "transitions": ("n_00", "n_01", "n_10", "n_11"),
        "seed_transitions": ("n_00", "n_01", "n_10", "n_11"),
        "cross_seed_cells": tuple(
            f"n_{a}_{b}" for a in ("00", "01", "10", "11") for b in ("00", "01", "10", "11")
        ),
        "recovery_documents": ("doc_index", "n_tokens"),
        "watch_submissions": ("attempts",),
    }
    rules += [(t, c, f"{c} IS NULL OR {c} >= 0") for t, columns in counts.items() for c in columns]
    return rules


def _one_of(column: str, values: Iterable[Enum]) -> str:
    return f"{column} IN ({', '.join(repr(str(v.value)) for v in values)})"


def _check_values(conn: Connection, roles: Collection[str]) -> None:
    """Refuse the first value outside ``_value_rules``, naming its table, column and value."""
    present = {
        (t, c)
        for t, c in conn.execute(
            "SELECT table_name, column_name FROM duckdb_columns() "
            "WHERE database_name = current_database()"
        ).fetchall()
    }
    for table, column, condition in _value_rules(roles):
        if (table, column) not in present:
            continue
        bad = conn.execute(
            f'SELECT "{column}" FROM "{table}" WHERE NOT coalesce({condition}, false) LIMIT 1'
        ).fetchall()
        if bad:
            raise BackupError(
                f"refused: the backup's {table}.{column} holds {bad[0][0]!r}, which the app never "
                f"writes (it must meet: {condition})"
            )


def _advance_sequences(conn: Connection, recorded: dict[str, int]) -> None:
    """Each sequence past the ids of its table and its value when the backup was taken, so that
    new rows get new ids (an id once handed out is never reused, as in the original)."""
    owners = conn.execute(
        "SELECT table_name, column_name, "
        "regexp_extract(column_default, 'nextval\\(''(\\w+)''\\)', 1) "
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
    target.mkdir(mode=0o700)
    for name, size in sizes.items():
        try:
            copied = _copy_plain_file(source / name, target / name)
        except FileNotFoundError:
            copied = None
        if copied != size:
            raise BackupError(f"the backup's answer file {name} is missing or not whole")


def _copy_plain_file(source: Path, target: Path) -> int:
    """Copy ``source`` to a new file ``target`` created 0600; its size. A link is not followed
    and anything but a plain file refused (checked on the file opened: it cannot be swapped)."""
    try:
        descriptor = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise BackupError(
            f"refused: {source} is a link or cannot be read ({exc.strerror})"
        ) from exc
    with os.fdopen(descriptor, "rb") as reading:
        if not stat.S_ISREG(os.fstat(reading.fileno()).st_mode):
            raise BackupError(f"refused: {source} is not a plain file")
        with _private_file(target) as out:
            shutil.copyfileobj(reading, out, 1 << 20)
            return int(out.tell())


def _private_file(path: Path) -> BinaryIO:
    """A new file at ``path``, created 0600 (not through a link), open for writing bytes."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.fdopen(os.open(path, flags, 0o600), "wb")


def _make_tree_private(folder: Path) -> None:
    """No group or other bits on anything under ``folder`` (itself included)."""
    make_private(folder)
    for parent, folders, files in os.walk(folder):
        for name in (*folders, *files):
            make_private(Path(parent) / name)


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


def _columns(conn: Connection, table: str) -> dict[str, str]:
    """The table's columns and their types, in order."""
    return dict(
        conn.execute(
            "SELECT column_name, data_type FROM duckdb_columns() "
            "WHERE database_name = current_database() AND table_name = ? ORDER BY column_index",
            [table],
        ).fetchall()
    )


def _literal(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _forgetmap_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("forgetmap")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"
