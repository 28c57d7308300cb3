"""Opening the DuckDB file and keeping its schema current.

Only the app process (the CLI or the web app) opens the file for writing; workers upload results
over HTTP. ``open_store`` upgrades the schema to the newest Alembic revision on start; when the
file is already current it reads one row and skips loading Alembic.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.exc import DBAPIError

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def duck_of(conn: Connection):
    """The DuckDB connection under a SQLAlchemy one: repository modules run their SQL on it
    (DuckDB binds lists and answers Arrow tables, which SQLAlchemy's ``text()`` does not)."""
    return conn.connection.driver_connection


class StoreError(RuntimeError):
    """The database cannot be used (locked by another process, unreadable, ...)."""


# The newest migration's revision id; a test checks it against Alembic's own head. Comparing with a
# constant keeps every CLI start from importing Alembic when the schema is current.
HEAD_REVISION = "0008"


def alembic_config():
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


class Store:
    """A DuckDB file with forgetmap's schema. Use ``transaction()`` for every unit of work."""

    def __init__(self, path: Path | str, *, read_only: bool = False):
        self.path = Path(path)
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        elif not self.path.exists():
            raise StoreError(f"database {self.path} does not exist; import results first")
        self.read_only = read_only
        # bumped after every committed write through this Store: readers key caches on it (this
        # process is the only writer, so nothing else can change the file behind its back)
        self.version = 0
        # DuckDB allows one writer; serialize write transactions of this process (web threads)
        self._write_lock = threading.RLock()
        # Connections of one process share one DuckDB instance (DuckDB caches it by path), so
        # pooled connections see each other's commits; another process cannot open the file.
        self.engine: Engine = create_engine(
            f"duckdb:///{self.path}", connect_args={"read_only": read_only}
        )
        try:
            with self.engine.connect():
                pass
        except DBAPIError as exc:
            message = str(exc.orig).splitlines()[0] if exc.orig else str(exc)
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
            with self.engine.begin() as conn:
                yield conn
            self.version += 1

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            yield conn

    def ping(self) -> None:
        """Raises when the database cannot answer a query (the health check)."""
        with self.read() as conn:
            conn.exec_driver_sql("SELECT 1")

    def current_revision(self) -> str | None:
        with self.read() as conn:
            exists = conn.execute(
                text(
                    "SELECT count(*) FROM information_schema.tables WHERE table_name = 'alembic_version'"
                )
            ).scalar()
            if not exists:
                return None
            return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()

    def upgrade(self) -> None:
        """Bring the schema to the newest revision (no-op when current)."""
        if self.current_revision() == HEAD_REVISION:
            return
        if self.read_only:
            raise StoreError(
                f"database {self.path} has an old schema; open it once read-write to upgrade"
            )
        from alembic import command

        config = alembic_config()
        with self.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "head")

    def close(self) -> None:
        self.engine.dispose()


def open_store(path: Path | str, *, read_only: bool = False) -> Store:
    store = Store(path, read_only=read_only)
    store.upgrade()
    return store
