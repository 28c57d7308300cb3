"""Settings read from the environment (no hidden global state: callers pass values down)."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DB = Path("data") / "forgetmap.duckdb"


def default_db_path() -> Path:
    """$FORGETMAP_DB, else data/forgetmap.duckdb relative to the working directory."""
    return Path(os.environ.get("FORGETMAP_DB") or DEFAULT_DB)


def env_paths(name: str) -> list[Path]:
    """A ``:``-separated list of folders from the environment."""
    return [Path(p) for p in (os.environ.get(name) or "").split(os.pathsep) if p.strip()]


@dataclass(frozen=True)
class WebSettings:
    """What the web app needs beyond the database; built once in create_app."""

    secret_key: str
    private: bool = False  # True: every page and API read needs a login or a token
    model_roots: tuple[Path, ...] = ()
    benchmark_dirs: tuple[Path, ...] = ()
    corpus_dirs: tuple[Path, ...] = ()  # recoverability corpora; empty: the benchmark folders
    reconcile_seconds: float = 10.0
    stale_seconds: float = 1800.0  # a running shard silent this long is sent again
    # a queued shard sent this long ago that no worker has started is sent again (lost message)
    resend_seconds: float = 300.0
    session_seconds: float = 7 * 24 * 3600.0  # a login lasts this long

    @classmethod
    def from_env(cls, data_dir: Path) -> WebSettings:
        return cls(
            secret_key=os.environ.get("FORGETMAP_SECRET_KEY") or _stored_secret(data_dir),
            private=os.environ.get("FORGETMAP_PRIVATE", "0").lower() in ("1", "true", "yes"),
            model_roots=tuple(env_paths("FORGETMAP_MODEL_ROOTS")),
            benchmark_dirs=tuple(env_paths("FORGETMAP_BENCHMARK_DIRS")),
            corpus_dirs=tuple(env_paths("FORGETMAP_CORPUS_DIRS")),
            reconcile_seconds=float(os.environ.get("FORGETMAP_RECONCILE_SECONDS", "10")),
            stale_seconds=float(os.environ.get("FORGETMAP_STALE_SECONDS", "1800")),
            resend_seconds=float(os.environ.get("FORGETMAP_RESEND_SECONDS", "300")),
            session_seconds=float(os.environ.get("FORGETMAP_SESSION_DAYS", "7")) * 24 * 3600,
        )


def _stored_secret(data_dir: Path) -> str:
    """A random session-signing key kept beside the database (created once, readable by us only)."""
    path = Path(data_dir) / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(48))
    return path.read_text().strip()
