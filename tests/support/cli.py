"""The CLI run in-process against one database file."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from app.cli import main
from app.db import open_store
from tests.support.store_contents import table_contents


class Cli:
    """Runs `forgetmap --db DB ...` in-process and keeps the database path."""

    def __init__(self, db: Path):
        self.db = db
        self.runner = CliRunner()

    def __call__(self, *args: str, ok: bool = True):
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
        store = open_store(self.db)
        try:
            with store.read() as conn:
                return table_contents(conn)
        finally:
            store.close()
