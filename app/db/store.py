"""Opening the DuckDB file and keeping its schema current.

Only the app process (the CLI or the web app) opens the file for writing; workers upload results
over HTTP. ``open_store`` upgrades the schema to the newest Alembic revision on start; when the
file is already current it reads one row and loads neither Alembic nor SQLAlchemy. A new file gets
the newest schema from ``migrations/schema.sql``, the DDL that running every migration leaves
(``schema_ddl``; ``scripts/dump-schema`` writes it and a test checks it against the migrations):
loading Alembic and running nine migrations cost every first import about 0.5 s.

The store speaks to DuckDB through its own Python connections: every repository module runs its
SQL on them (DuckDB binds lists and answers Arrow tables). SQLAlchemy is loaded only to run
Alembic's migrations; importing it and duckdb-engine cost every CLI process about 0.5 s
(bench/harness_import.py's `cli start` line).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
from forgetmap.runtime.private import keep_new_files_private, make_private
from forgetmap.runtime.resources import resource_dir

if TYPE_CHECKING:  # Alembic is imported only to migrate
    from alembic.config import Config

Connection = duckdb.DuckDBPyConnection
"""What ``Store.transaction()`` and ``Store.read()`` yield: a DuckDB connection (a cursor of the
store's database)."""

MIGRATIONS_DIR = resource_dir("migrations")
SCHEMA_SNAPSHOT = MIGRATIONS_DIR / "schema.sql"


IMPORT_MEMORY_LIMIT = "256MB"
"""What DuckDB may hold in memory while an import writes (``Store.limited_memory``; it spills to
``<db>.tmp`` beyond it). Without a limit it keeps what an import inserts up to 80% of RAM: 40,000
answers of 18 kB inserted by one statement took 1.5 GB of RSS, 0.38 GB at a 100 MB limit
(bench/import_scale.py measures imports under it). Reads keep DuckDB's default."""


class StoreError(RuntimeError):
    """The database cannot be used (locked by another process, unreadable, ...)."""


def one_row(row: tuple[Any, ...] | None) -> tuple[Any, ...]:
    """The row ``fetchone()`` gave for a query that returns one by construction (``count(*)``,
    ``RETURNING``, a row the caller knows is there); a StoreError where none came."""
    if row is None:
        raise StoreError("a query that returns one row returned none")
    return row


def database_files(path: Path) -> tuple[Path, Path, Path]:
    """The files DuckDB keeps for the database ``path``: the file, its write-ahead log, its
    spill folder."""
    return path, path.with_name(path.name + ".wal"), path.with_name(path.name + ".tmp")


# The newest migration's revision id; a test checks it against Alembic's own head. Comparing with a
# constant keeps every CLI start from importing Alembic when the schema is current.
HEAD_REVISION = "0018"


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def schema_ddl(conn: Connection) -> list[str]:
    """The file's schema as DDL statements in an order that creates it (sequences, tables,
    indexes, views; each kind by name), and the Alembic revision it is stamped with."""
    where = "WHERE database_name = current_database()"  # temporary objects live in "temp"
    statements = [
        sql
        for query in (
            f"SELECT sql FROM duckdb_sequences() {where} ORDER BY sequence_name",
            f"SELECT sql FROM duckdb_tables() {where} ORDER BY table_name",
            f"SELECT sql FROM duckdb_indexes() {where} AND sql IS NOT NULL ORDER BY index_name",
            f"SELECT sql FROM duckdb_views() {where} AND NOT internal ORDER BY view_name",
        )
        for (sql,) in conn.execute(query).fetchall()
    ]
    stamped = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    return statements + [f"INSERT INTO alembic_version VALUES ('{v}');" for (v,) in stamped]


class Store:
    """A DuckDB file with forgetmap's schema. Use ``transaction()`` for every unit of work."""

    def __init__(
        self, path: Path | str, *, read_only: bool = False, checkpoint_mb: int | None = None
    ):
        """``checkpoint_mb``: the write-ahead log's size that makes a commit checkpoint the file
        (DuckDB's default, 16 MB, when None). A checkpoint holds every reader until it is done:
        the app, whose pages are read while imports commit, sets it high (``WebSettings``)."""
        self.path = Path(path)
        self.checkpoint_mb = checkpoint_mb
        if not read_only:
            keep_new_files_private()
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        elif not self.path.exists():
            raise StoreError(f"database {self.path} does not exist; import results first")
        self.read_only = read_only
        # bumped after every committed write through this Store (this process is the only
        # writer, so nothing else can change the file behind its back); ``page_version`` only
        # after the writes that can change what a read page shows: the read caches key on it
        self.version = 0
        self.page_version = 0
        self._pages_unchanged = False
        # DuckDB allows one writer; serialize write transactions of this process (web threads)
        self._write_lock = threading.RLock()
        # One database instance per process; each unit of work gets a cursor of it (a connection
        # of its own, safe to use on another thread), so they see each other's commits. Another
        # process cannot open the file while this one holds it. ``close()`` lets it go; the next
        # unit of work opens it again.
        self._database: Connection | None = None
        self._open_lock = threading.Lock()
        self._cursor().close()

    def _cursor(self) -> Connection:
        with self._open_lock:
            if self._database is None:
                self._database = self._connect()
            return self._database.cursor()

    def _connect(self) -> Connection:
        try:
            database = duckdb.connect(str(self.path), read_only=self.read_only)
            # now() into a TIMESTAMP column is written in the session's zone, the machine's by
            # default; every stored time is UTC instead, whatever the machine (pages say "UTC")
            database.execute("SET GLOBAL TimeZone = 'UTC'")
            if not self.read_only:
                for path in database_files(self.path):  # made under a looser umask before
                    make_private(path)
            if self.checkpoint_mb is not None and not self.read_only:
                database.execute(f"SET checkpoint_threshold = '{int(self.checkpoint_mb)}MB'")
            return database
        except duckdb.Error as exc:
            message = str(exc).splitlines()[0]
            if "lock" in message.lower():
                raise StoreError(
                    f"database {self.path} is in use by another process (stop `forgetmap serve` "
                    "or use --db for another file)"
                ) from exc
            raise StoreError(f"cannot open database {self.path}: {message}") from exc

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One write transaction: committed on success, rolled back on any exception."""
        with self._write_lock:
            self._pages_unchanged = False
            conn = self._cursor()
            try:
                conn.begin()
                try:
                    yield conn
                except BaseException:
                    conn.rollback()
                    raise
                conn.commit()
            finally:
                conn.close()
            self.version += 1
            if not self._pages_unchanged:
                self.page_version += 1

    def pages_unchanged(self) -> None:
        """Say that the write transaction under way changes nothing a read page shows (a shard's
        bookkeeping, results of a model no pair holds): the read caches keep their values when
        it commits. Only the thread inside the transaction calls it (the write lock is held)."""
        self._pages_unchanged = True

    @contextmanager
    def limited_memory(self, limit: str = IMPORT_MEMORY_LIMIT) -> Iterator[None]:
        """DuckDB's memory limit lowered to ``limit`` for the block (one setting of the database:
        the app's readers share it meanwhile), then back to DuckDB's default."""
        with self.read() as conn:
            conn.execute(f"SET memory_limit = '{limit}'")
        try:
            yield
        finally:
            with self.read() as conn:
                conn.execute("RESET memory_limit")

    @contextmanager
    def read(self) -> Iterator[Connection]:
        conn = self._cursor()
        try:
            yield conn
        finally:
            conn.close()

    def ping(self) -> None:
        """Raises when the database cannot answer a query (the health check)."""
        with self.read() as conn:
            conn.execute("SELECT 1").fetchall()

    def current_revision(self) -> str | None:
        """The Alembic revision the file is stamped with; None for a file without one."""
        with self.read() as conn:
            # asked directly: a catalog lookup first cost every command 5-20 ms (DuckDB binds the
            # information_schema views, or its catalog functions, on their first use), this 1 ms
            try:
                rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
            except duckdb.CatalogException:
                return None
            return rows[0][0] if rows else None

    def upgrade(self, revision: str = "head") -> None:
        """Bring the schema to ``revision`` (the newest by default; no-op when current) with
        Alembic; a new file at head starts from the schema snapshot. Tests build old files with
        an older revision."""
        if revision == "head" and self.current_revision() == HEAD_REVISION:
            return
        if self.read_only:
            raise StoreError(
                f"database {self.path} has an old schema; open it once read-write to upgrade"
            )
        if revision == "head" and self._is_empty():
            with self.transaction() as conn:
                conn.execute(SCHEMA_SNAPSHOT.read_text())
            return
        self._alembic("upgrade", revision)

    def downgrade(self, revision: str) -> None:
        """Take the schema back to ``revision``, with each migration's own downgrade (data kept
        in the older layout: e.g. 0008's puts every templated prompt back whole)."""
        if self.read_only:
            raise StoreError(f"database {self.path} is open read-only; cannot downgrade it")
        self._alembic("downgrade", revision)

    def _alembic(self, action: str, revision: str) -> None:
        """Alembic's ``action`` to ``revision`` on a SQLAlchemy engine of the file, opened only for
        that while this store's own connection is closed."""
        from alembic import command
        from sqlalchemy import create_engine

        self.close()
        engine = create_engine(f"duckdb:///{self.path}")
        try:
            config = alembic_config()
            with engine.begin() as conn:
                config.attributes["connection"] = conn
                getattr(command, action)(config, revision)
        finally:
            engine.dispose()

    def _is_empty(self) -> bool:
        with self.read() as conn:
            return not conn.execute(
                "SELECT 1 FROM duckdb_tables() WHERE database_name = current_database() "
                "UNION ALL SELECT 1 FROM duckdb_sequences() "
                "WHERE database_name = current_database()"
            ).fetchall()

    def close(self) -> None:
        """Let the file go (another process may open it); a later unit of work reopens it."""
        with self._open_lock:
            if self._database is not None:
                self._database.close()
                self._database = None


def open_store(
    path: Path | str, *, read_only: bool = False, checkpoint_mb: int | None = None
) -> Store:
    """A store at the newest schema; opened read-write, its answer files are reconciled with
    the imports that committed (``forgetmap.db.texts.reconcile``)."""
    from forgetmap.db.texts import folder_of, reconcile

    store = Store(path, read_only=read_only, checkpoint_mb=checkpoint_mb)
    store.upgrade()
    if not read_only:
        with store.read() as conn:
            reconcile(conn, folder_of(store.path))
    return store
