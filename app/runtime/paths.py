"""Paths: the database's default location, and every check that a user-given path stays inside
configured roots.

One place for containment (models, benchmark files, corpora), so symlinks and ``..`` are handled
the same way everywhere: a path is resolved before it is compared with the resolved roots.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from app.core.errors import InputError

DEFAULT_DB = Path("data") / "forgetmap.duckdb"


def default_db_path() -> Path:
    """$FORGETMAP_DB, else data/forgetmap.duckdb relative to the working directory (here, not in
    app/runtime/config.py, so that the CLI's root command does not load pydantic-settings)."""
    return Path(os.environ.get("FORGETMAP_DB") or DEFAULT_DB)


_HF_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def confined(path: str | Path, roots: Iterable[str | Path]) -> Path | None:
    """``path`` resolved (symlinks and ``..`` followed) when it lies inside one of ``roots``
    (resolved too), else None. A relative ``path`` is taken as it is, relative to the process's
    working directory; join it with a root first to look it up inside that root."""
    resolved = Path(path).expanduser().resolve()
    for root in roots:
        if resolved.is_relative_to(Path(root).expanduser().resolve()):
            return resolved
    return None


class ModelPathError(InputError):
    """A model reference that may not be loaded (outside the roots, or not a valid id)."""


def check_model_path(path: str, roots: list[Path]) -> str:
    """Allow a Hugging Face id (``org/name``) or a local path that resolves under a root.

    Symlinks and ``..`` are resolved before the check, so neither can escape a root. Returns the
    path to load (resolved for local paths).
    """
    text = path.strip()
    looks_local = text.startswith(("/", ".", "~")) or "\\" in text or ".." in text
    if not looks_local and _HF_ID.match(text):
        return text
    if not roots:
        raise ModelPathError(
            f"local model path {text!r} refused: no model roots configured "
            "(set FORGETMAP_MODEL_ROOTS to the folders that may hold checkpoints)"
        )
    resolved = confined(text, roots)
    if resolved is not None:
        return str(resolved)
    raise ModelPathError(
        f"model path {text!r} is outside the configured roots "
        f"({', '.join(str(r) for r in roots)}); move it under a root or add its folder to "
        "FORGETMAP_MODEL_ROOTS"
    )
