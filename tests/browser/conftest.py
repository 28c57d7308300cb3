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
