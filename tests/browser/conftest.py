"""A real `forgetmap serve` process and a fresh page (the session's Chromium is the ``browser``
fixture of tests/conftest.py, shared with the demo's browser test)."""

from __future__ import annotations

import pytest

from tests.support.server import Server, free_port  # noqa: F401 - the browser tests' fixtures use them


@pytest.fixture
def page(browser):
    """A fresh browser context and page (tests that need a viewport or listeners define their
    own)."""
    context = browser.new_context()
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def watched_page(browser):
    """A page in a wide window (1300 x 900) that keeps its script errors in ``page.errors``:
    a page that draws charts must end a test with none."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    yield page
    context.close()
