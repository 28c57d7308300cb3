"""The CLI run in-process against one database file, on the file itself or through a real
`forgetmap serve` that owns it (the owner file beside the database)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from forgetmap.cli import main
from forgetmap.db import open_store

from tests.support.server import Server
from tests.support.store_contents import table_contents

MODES = ("local", "owner")
"""How a test's commands reach the database: on the file (no app runs), or through the app that
owns it (a real `forgetmap serve` started for the test or its module)."""


class Cli:
    """Runs `forgetmap --db DB ...` in-process and keeps the database path. With ``owner`` a
    real `forgetmap serve` holds the database (started at the first command unless given) and
    every command goes through it."""

    def __init__(self, db: Path, *, owner: bool = False, server: Server | None = None):
        self.db = db
        self.owner = owner or server is not None
        self.server = server
        self.runner = CliRunner()

    def __call__(self, *args: str, ok: bool = True):
        if self.owner and self.server is None:
            self.server = Server(self.db)
        result = self.runner.invoke(
            main, ["--db", str(self.db), *map(str, args)], catch_exceptions=False
        )
        if ok and result.exit_code != 0:
            raise AssertionError(
                f"forgetmap {' '.join(map(str, args))} failed ({result.exit_code}):\n"
                f"{result.stdout}\n{result.stderr}"
            )
        return result

    def json(self, *args: str):
        return json.loads(self(*args).stdout)

    def contents(self) -> dict:
        """Every row of every table. While an app owns the file, read from a copy of it (and of
        its write-ahead log) taken between two commands: nothing is read behind the app's back."""
        if self.server is None:
            store = open_store(self.db)
            try:
                with store.read() as conn:
                    return table_contents(conn)
            finally:
                store.close()
        with tempfile.TemporaryDirectory() as folder:
            copy = Path(folder) / self.db.name
            shutil.copyfile(self.db, copy)
            wal = self.db.with_name(self.db.name + ".wal")
            if wal.exists():
                shutil.copyfile(wal, copy.with_name(copy.name + ".wal"))
            conn = duckdb.connect(str(copy))
            try:
                return table_contents(conn)
            finally:
                conn.close()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


def cli_both_ways(*, shared_owner: bool = False):
    """A ``cli`` fixture that runs each test of a module twice: with the owner absent (the
    commands open the file) and with it running (they go through a real `forgetmap serve`).
    ``shared_owner``: one server and database for the module's owner runs, for tests that do not
    need an empty database (a server takes 1-2 s to start). Use as ``cli = cli_both_ways()``."""

    @pytest.fixture(params=MODES)
    def cli(request, tmp_path):
        if request.param == "local":
            yield Cli(tmp_path / "fm.duckdb")
            return
        if shared_owner:
            yield Cli(_module_server(request).db, server=_module_server(request))
            return
        each = Cli(tmp_path / "fm.duckdb", owner=True)
        yield each
        each.stop()

    return cli


_module_servers: dict[str, Server] = {}


def _module_server(request) -> Server:
    """The server that owns the module's shared database, started at its first use and stopped
    when the module's tests are done."""
    module = request.node.getparent(pytest.Module)
    server = _module_servers.get(module.nodeid)
    if server is None:
        folder = Path(tempfile.mkdtemp(prefix="forgetmap-owner-"))
        server = Server(folder / "fm.duckdb")
        _module_servers[module.nodeid] = server

        def done() -> None:
            _module_servers.pop(module.nodeid).stop()
            shutil.rmtree(folder, ignore_errors=True)

        module.addfinalizer(done)
    return server
