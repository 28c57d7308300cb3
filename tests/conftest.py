"""Shared fixtures.

Tests that need an outside service skip when it is missing, except under CI (CI=true or
FORGETMAP_REQUIRE_SERVICES=1), where a missing service fails the test instead: CI runs everything.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main
from app.db import open_store
from tests.store_contents import table_contents

REQUIRE_SERVICES = (
    os.environ.get("FORGETMAP_REQUIRE_SERVICES") == "1" or os.environ.get("CI") == "true"
)


def service_missing(reason: str) -> None:
    """Skip locally, fail under CI."""
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing under CI: {reason}")
    pytest.skip(reason)


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


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path / "fm.duckdb")


CHROMIUM = os.environ.get("FORGETMAP_CHROMIUM", "/usr/bin/chromium")


# one Chromium for the whole session (Debian's, via Playwright): a second sync_playwright in the
# same process fails, so every directory's browser tests share this one
@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        service_missing(f"{CHROMIUM} not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        service_missing("playwright is not installed (pip install playwright)")
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield b
        b.close()
