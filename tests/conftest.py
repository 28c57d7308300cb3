"""Shared fixtures (the helpers they use live in tests/support/)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.cli import Cli
from tests.support.services import service_missing

FOLDER_MARKERS = {
    "unit": ("unit",),
    "integration": ("integration",),
    "browser": ("integration", "browser"),
    "demo": ("integration", "demo"),
}
"""The markers every test of a folder carries (pyproject.toml registers them): ``-m unit`` runs the
tests that need no service or process of their own, ``-m "not browser"`` leaves Chromium out."""


def pytest_collection_modifyitems(config, items) -> None:
    tests = Path(__file__).parent
    for item in items:
        folder = Path(item.fspath).relative_to(tests).parts[0]
        for marker in FOLDER_MARKERS.get(folder, ()):
            item.add_marker(marker)


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
        yield CspBypassingBrowser(b)
        b.close()


class CspBypassingBrowser:
    """The session's Chromium, whose pages bypass the app's Content-Security-Policy unless a test
    asks otherwise (``bypass_csp=False``): the policy forbids eval, and Playwright's polling
    ``wait_for_function`` evaluates its predicate with eval inside the page. The pages under the
    policy itself: tests/browser/test_content_security_policy.py."""

    def __init__(self, browser):
        self._browser = browser

    def new_context(self, **options):
        return self._browser.new_context(**{"bypass_csp": True, **options})

    def new_page(self, **options):
        return self._browser.new_page(**{"bypass_csp": True, **options})

    def __getattr__(self, name: str):
        return getattr(self._browser, name)
