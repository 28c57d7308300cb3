"""Settings read from the environment (no hidden global state: callers pass values down)."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DB = Path("data") / "forgetmap.duckdb"


def default_db_path() -> Path:
    """$FORGETMAP_DB, else data/forgetmap.duckdb relative to the working directory."""
    return Path(os.environ.get("FORGETMAP_DB") or DEFAULT_DB)
