"""The `forgetmap` command on a node whose Hugging Face cache holds datasets, offline: the
environment such a node gives it, and one run of it (the hub import tests)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.worker_env import FORGETMAP


def offline_env(cache: Path, home: Path) -> dict[str, str]:
    """This process's environment without its own HF_ settings, reading ``cache`` offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    return {
        **env,
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(cache),
        "HF_HOME": str(home),
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    }


def forgetmap(db: Path, env: dict, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    """``forgetmap --db DB ARGS`` in its own process; with ``ok``, it must exit 0."""
    done = subprocess.run(
        [FORGETMAP, "--db", str(db), *args], env=env, capture_output=True, text=True, timeout=120
    )
    if ok:
        assert done.returncode == 0, done.stderr
    return done
