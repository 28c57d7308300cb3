"""Shared fixtures (the helpers they use live in tests/support/)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.cli import Cli
from tests.support.services import service_missing


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
