"""Tests that need an outside service skip when it is missing, except under CI (CI=true or
FORGETMAP_REQUIRE_SERVICES=1), where a missing service fails the test instead: CI runs everything."""

from __future__ import annotations

import os

import pytest

REQUIRE_SERVICES = (
    os.environ.get("FORGETMAP_REQUIRE_SERVICES") == "1" or os.environ.get("CI") == "true"
)


def service_missing(reason: str) -> None:
    """Skip locally, fail under CI."""
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing under CI: {reason}")
    pytest.skip(reason)
