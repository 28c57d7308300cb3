"""Tests that need an outside service skip when it is missing, except under CI (CI=true or
FORGETMAP_REQUIRE_SERVICES=1), where a missing service fails the test instead: CI runs
everything."""

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
    pytest.skip(reason, allow_module_level=True)


def require_module(name: str, why: str = ""):
    """The module ``name``, imported; a missing one skips locally and fails under CI (every
    extra the tests use is installed there: scripts/setup --engines)."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        service_missing(f"{name} is not installed{f' ({why})' if why else ''}: {exc}")


def require_modules(*names: str, why: str = "") -> None:
    """Each of ``names`` importable (see require_module)."""
    for name in names:
        require_module(name, why)
