"""Settings of the app process (the CLI and the web app), read once from the environment with the
prefix ``FORGETMAP_`` (pydantic-settings: one class per process kind; the worker's is
worker/settings.py). No hidden global state: callers pass the values down.

A leaf module: the worker imports :data:`PathList` from here without importing the app.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator, Field, ValidationError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

S = TypeVar("S", bound=BaseSettings)
# every setting is FORGETMAP_<FIELD>; an empty variable counts as unset
ENVIRONMENT = SettingsConfigDict(
    env_prefix="FORGETMAP_", env_ignore_empty=True, frozen=True, populate_by_name=True
)


# what an uploaded archive may unpack to besides the byte cap (import_max_unpacked_bytes), fixed
MAX_MEMBERS = 100_000
"""Members an archive may hold (files and folders): more is refused before anything is written."""
MAX_UNPACK_RATIO = 200
"""The most an archive may unpack to, as a multiple of its own size. Result files compress 10-45x
(deflate: a results CSV 10x, lm-eval samples with 5- and 25-shot prompts 18x and 44x; xz on the
25-shot file 93x), a compression bomb 1,000x (deflate's most) and far beyond (bzip2, xz); past
this the archive is refused as it unpacks, whatever its headers say."""


class SettingsError(ValueError):
    """An environment variable that does not parse; the message names it."""


def setting_variable(cls: type[BaseSettings], name: str) -> str:
    """The environment variable of ``cls``'s field ``name``: its alias, else prefix + name."""
    alias = cls.model_fields[name].validation_alias
    if isinstance(alias, str):
        return alias
    return f"{cls.model_config.get('env_prefix', '')}{name}".upper()


def read_settings(cls: type[S], environ: Mapping[str, str] | None = None) -> S:
    """``cls`` read from the environment; a SettingsError naming each variable that is wrong.

    ``environ``: the variables to read instead of the process's (a launcher such as ``forgetmap
    up`` reads its own defaults this way, and hands the same mapping to the processes it starts,
    without writing them into its own environment). Read by the same rules: an empty one is
    unset."""
    try:
        if environ is None:
            return cls()
        given = {
            name: environ[variable]
            for name in cls.model_fields
            if environ.get(variable := setting_variable(cls, name))
        }
        return cls.model_validate(given)
    except ValidationError as exc:
        prefix = cls.model_config.get("env_prefix", "")
        aliases = {f.validation_alias for f in cls.model_fields.values()}
        names = []
        for error in exc.errors():
            where = str(error["loc"][0]) if error["loc"] else ""
            name = where if where in aliases else f"{prefix}{where}".upper()
            names.append(f"{name}: {error['msg']}")
        raise SettingsError("; ".join(names)) from None


def shown(default: str) -> dict[str, Any]:
    """A setting's default as docs/settings.md says it, where the value in code is not what a
    reader needs (a computed default, or one that ``forgetmap up`` replaces)."""
    return {"shown_default": default}


def _split_paths(value: Any) -> Any:
    return [p for p in value.split(os.pathsep) if p.strip()] if isinstance(value, str) else value


# folders from a ``:``-separated variable (or a list, in code)
PathList = Annotated[tuple[Path, ...], NoDecode, BeforeValidator(_split_paths)]


class WebSettings(BaseSettings):
    """What the web app needs beyond the database; built once in create_app."""

    model_config = ENVIRONMENT

    # Each setting's description and shown default are docs/settings.md's row (scripts/docs-settings
    # writes the page from them; a test fails when the page and these differ).
    secret_key: str = Field(
        "",
        repr=False,
        description="signs login sessions",
        json_schema_extra=shown("a random key kept in `data/secret_key`"),
    )
    private: bool = Field(
        False, description="true: every page needs a login and every API read a token of any role"
    )
    session_days: float = Field(
        7.0,
        gt=0,
        description="how long a login lasts (it ends at once on logout, also for a copy of its "
        "cookie, or when its token is revoked)",
    )
    model_roots: PathList = Field(
        (),
        description="folders that local checkpoints in jobs must sit under; `..` and symlinks are "
        "resolved first, and a relative path is looked up under each root in turn (see "
        "[Model paths](jobs.md#model-paths))",
        json_schema_extra=shown("none (`forgetmap up`: `data/models`)"),
    )
    allow_hub_models: bool = Field(
        True,
        description="false: a job's model must be a folder under the model roots; true: also a "
        "Hugging Face id (`org/name`), except a name that is a folder in the working directory",
    )
    benchmark_dirs: PathList = Field(
        (),
        description="folders of `local:` benchmark files and of `forgetmap suite fetch` copies",
        json_schema_extra=shown("none (`forgetmap up`: `data/benchmarks`)"),
    )
    corpus_dirs: PathList = Field(
        (),
        description="folders of recoverability corpora (`local:NAME`)",
        json_schema_extra=shown("the benchmark folders"),
    )
    reconcile_seconds: float = Field(
        10.0,
        gt=0,
        description="how often the reconciler asks the broker which shard messages it still "
        "holds and re-sends the lost ones",
    )
    resend_seconds: float = Field(
        300.0,
        gt=0,
        description="with a broker it cannot ask (the embedded queue): a queued shard no worker "
        "started this long after it was sent is sent again (the wait doubles per re-send, at "
        "most 32x)",
    )
    stale_seconds: float = Field(
        1800.0,
        gt=0,
        description="a running shard whose worker sent no progress this long is sent again",
    )
    theory_seconds: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="time budget of one theory-lab computation (longer: 422)",
    )
    import_max_bytes: int = Field(
        8 << 30,
        gt=0,
        description="the largest upload `POST /api/imports` and the import page take (larger: 413)",
    )
    import_max_unpacked_bytes: int = Field(
        8 << 30,
        gt=0,
        description="what an uploaded archive may unpack to on disk (more, more than "
        f"{MAX_UNPACK_RATIO} times the archive's own size, or over {MAX_MEMBERS:,} members: the "
        "import fails as it unpacks, and what it wrote is removed)",
    )
    checkpoint_mb: int = Field(
        1024,
        ge=1,
        le=1 << 20,
        description="the write-ahead log's size at which a commit checkpoints the database file; a "
        "checkpoint holds every reader until it is done, so the app keeps it rare (DuckDB's "
        "default, 16 MB, made nearly every import's commit one: "
        "[Performance](performance.md#under-load)); the app checkpoints when it stops",
    )
    warm_start: bool = Field(
        True,
        description="compute the default map and the atlas's ranking as the app starts, before it "
        "serves, so that the first visitor after a restart finds them ready (the start takes "
        "that much longer: [Performance](performance.md))",
    )

    @property
    def session_seconds(self) -> float:
        return self.session_days * 24 * 3600

    @classmethod
    def from_env(cls, data_dir: Path, environ: Mapping[str, str] | None = None) -> WebSettings:
        """The app's settings from the environment (or ``environ``: ``read_settings``); without a
        secret key, the one kept beside the database."""
        settings = read_settings(cls, environ)
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
