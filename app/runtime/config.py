"""Settings of the app process (the CLI and the web app), read once from the environment with the
prefix ``FORGETMAP_`` (pydantic-settings: one class per process kind; the worker's is
worker/settings.py). No hidden global state: callers pass the values down.

A leaf module: the worker imports :data:`PathList` from here without importing the app.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator, Field, ValidationError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

S = TypeVar("S", bound=BaseSettings)
# every setting is FORGETMAP_<FIELD>; an empty variable counts as unset
ENVIRONMENT = SettingsConfigDict(
    env_prefix="FORGETMAP_", env_ignore_empty=True, frozen=True, populate_by_name=True
)


class SettingsError(ValueError):
    """An environment variable that does not parse; the message names it."""


def read_settings(cls: type[S]) -> S:
    """``cls`` read from the environment; a SettingsError naming each variable that is wrong."""
    try:
        return cls()
    except ValidationError as exc:
        prefix = cls.model_config.get("env_prefix", "")
        aliases = {f.validation_alias for f in cls.model_fields.values()}
        names = []
        for error in exc.errors():
            where = str(error["loc"][0]) if error["loc"] else ""
            name = where if where in aliases else f"{prefix}{where}".upper()
            names.append(f"{name}: {error['msg']}")
        raise SettingsError("; ".join(names)) from None


def _split_paths(value: Any) -> Any:
    return [p for p in value.split(os.pathsep) if p.strip()] if isinstance(value, str) else value


# folders from a ``:``-separated variable (or a list, in code)
PathList = Annotated[tuple[Path, ...], NoDecode, BeforeValidator(_split_paths)]


class WebSettings(BaseSettings):
    """What the web app needs beyond the database; built once in create_app."""

    model_config = ENVIRONMENT

    # signs sessions; empty: from_env keeps a random one beside the database
    secret_key: str = Field("", repr=False)
    private: bool = False  # True: every page and API read needs a login or a token
    model_roots: PathList = ()
    # False: only folders under model_roots load; True: also Hugging Face ids (org/name)
    allow_hub_models: bool = True
    benchmark_dirs: PathList = ()
    corpus_dirs: PathList = ()  # recoverability corpora; empty: the benchmark folders
    reconcile_seconds: float = 10.0
    # how long the theory lab computes one parameter set before it answers 422
    theory_seconds: float = Field(30.0, gt=0, le=3600)
    stale_seconds: float = 1800.0  # a running shard silent this long is sent again
    # a queued shard sent this long ago that no worker has started is sent again (lost message)
    resend_seconds: float = 300.0
    session_days: float = 7.0  # a login lasts this long
    # an upload to import (POST /api/imports): larger is refused with 413
    import_max_bytes: int = Field(8 << 30, gt=0)
    # what an uploaded archive may unpack to on disk (zip bombs): larger, over 200x its own size
    # (forgetmap.services.imports.MAX_UNPACK_RATIO) or over 100,000 members is refused
    import_max_unpacked_bytes: int = Field(8 << 30, gt=0)
    # the write-ahead log's size at which a commit checkpoints the file. A checkpoint holds every
    # reader until it is done (0.3-0.5 s after a 65,000-row import): at DuckDB's 16 MB nearly
    # every import's commit did one, and the map's p99 during imports was 130-530 ms; at 1 GB it
    # was 72-135 ms (docs/performance.md, "Under load"). The app checkpoints when it stops.
    checkpoint_mb: int = Field(1024, ge=1, le=1 << 20)
    # compute the default map and the atlas as the app starts, so that the first visitor after a
    # restart finds them ready (forgetmap.services.warm); the start takes as long longer
    warm_start: bool = True

    @property
    def session_seconds(self) -> float:
        return self.session_days * 24 * 3600

    @classmethod
    def from_env(cls, data_dir: Path) -> WebSettings:
        settings = read_settings(cls)
        if not settings.secret_key:
            settings = settings.model_copy(update={"secret_key": _stored_secret(data_dir)})
        return settings


def _stored_secret(data_dir: Path) -> str:
    """A random session-signing key kept beside the database (created once, readable by us only)."""
    path = Path(data_dir) / "secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(48))
    return path.read_text().strip()
