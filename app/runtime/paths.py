"""Paths: the database's default location, and every check that a user-given path stays inside
configured roots.

One place for containment (models, benchmark files, corpora), so symlinks and ``..`` are handled
the same way everywhere: a path is resolved before it is compared with the resolved roots.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from forgetmap.core.errors import InputError

DEFAULT_DB = Path("data") / "forgetmap.duckdb"


def default_db_path() -> Path:
    """$FORGETMAP_DB, else data/forgetmap.duckdb relative to the working directory (here, not in
    app/runtime/config.py, so that the CLI's root command does not load pydantic-settings)."""
    return Path(os.environ.get("FORGETMAP_DB") or DEFAULT_DB)


# a Hugging Face repo id, ``org/name``, by the hub's own rules: letters, digits, ``_ . -``; each
# part starts and ends with a letter, digit or ``_``; no ``..`` or ``--``; at most 96 characters
_HUB_PART = r"\w(?:[\w.-]{0,94}\w)?"
_HUB_ID = re.compile(rf"^{_HUB_PART}/{_HUB_PART}$", re.ASCII)

# the variables an operator changes to fix a refused model (the app's and the worker's alike)
ROOTS_VARIABLE = "FORGETMAP_MODEL_ROOTS"
HUB_VARIABLE = "FORGETMAP_ALLOW_HUB_MODELS"


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


def is_hub_id(text: str) -> bool:
    """Whether ``text`` is shaped like a Hugging Face repo id (``org/name``)."""
    return bool(_HUB_ID.match(text)) and ".." not in text and "--" not in text


def check_model_path(
    path: str, roots: Iterable[str | Path], *, allow_hub: bool = True, cwd: Path | None = None
) -> str:
    """The model to load for ``path`` (a resolved folder, or a hub id), or a ModelPathError that
    names the roots and says how to fix it. The one rule for every entry point (the form, every kind
    of ``POST /api/jobs``, ``/api/checkpoints``, the worker before it loads):

    - an absolute path (or ``~``) counts when, resolved (symlinks followed, ``..`` collapsed), it
      lies inside a root; it need not exist here (the app may not see the workers' disks);
    - a relative path is looked up under each root in turn, the first root holding it wins, and
      resolved the same way; one that climbs out (``x/../..``) or that no root holds is refused;
    - ``org/name`` that no root holds is a Hugging Face id, only with ``allow_hub``, and never
      when a file or folder of that name exists in the working directory ``cwd``: transformers and
      vLLM would load that folder instead of the hub's repo.
    """
    text = path.strip()
    resolved_roots = [Path(r).expanduser().resolve() for r in roots]
    where = ", ".join(map(str, resolved_roots)) or "none configured"
    if not text or "\0" in text:
        raise ModelPathError(
            f"model path {text!r} is empty or holds a NUL: give a folder under the model roots "
            f"({where}){' or a Hugging Face id (org/name)' if allow_hub else ''}"
        )
    try:
        expanded = Path(text).expanduser()
    except RuntimeError:  # ~user that does not exist
        expanded = Path(text)
    if expanded.is_absolute():
        return str(_inside(text, expanded, resolved_roots, where))
    if os.path.normpath(text).split(os.sep)[0] in ("..", "~"):
        raise _outside(text, where)
    for root in resolved_roots:
        if os.path.lexists(root / text):
            return str(_inside(text, root / text, resolved_roots, where))
    if is_hub_id(text):
        local = (cwd or Path.cwd()) / text
        if os.path.lexists(local):
            raise ModelPathError(
                f"model {text!r} names {local} in the working directory, not a Hugging Face id, "
                f"and is not under the model roots ({where}): move it under a root and give that "
                f"path, or add its folder to {ROOTS_VARIABLE}"
            )
        if allow_hub:
            return text
        raise ModelPathError(
            f"model {text!r} is not under the model roots ({where}) and Hugging Face ids are off "
            f"({HUB_VARIABLE}=false): download it under a root and give that path, or set "
            f"{HUB_VARIABLE}=true"
        )
    if not resolved_roots:
        raise _no_roots(text)
    raise ModelPathError(
        f"no model folder {text!r} under the model roots ({where}): give the path of a folder "
        f"under a root (absolute, or relative to a root)"
        + (", or a Hugging Face id (org/name)" if allow_hub else "")
    )


def _inside(text: str, path: Path, roots: list[Path], where: str) -> Path:
    if not roots:
        raise _no_roots(text)
    resolved = confined(path, roots)
    if resolved is None:
        raise _outside(text, where)
    return resolved


def _no_roots(text: str) -> ModelPathError:
    return ModelPathError(
        f"local model path {text!r} refused: no model roots configured "
        f"(set {ROOTS_VARIABLE} to the folders that may hold checkpoints)"
    )


def _outside(text: str, where: str) -> ModelPathError:
    return ModelPathError(
        f"model path {text!r} is outside the configured roots ({where}); move it under a root "
        f"or add its folder to {ROOTS_VARIABLE}"
    )


class HasModelSettings(Protocol):
    """What :meth:`ModelRules.of` reads: the app's WebSettings and the worker's WorkerSettings."""

    model_roots: tuple[Path, ...]
    allow_hub_models: bool


@dataclass(frozen=True)
class ModelRules:
    """Where models may come from in this process: folders under ``roots``, and Hugging Face ids
    when ``allow_hub`` (FORGETMAP_MODEL_ROOTS, FORGETMAP_ALLOW_HUB_MODELS)."""

    roots: tuple[Path, ...] = ()
    allow_hub: bool = True

    @classmethod
    def of(cls, settings: HasModelSettings) -> ModelRules:
        return cls(tuple(settings.model_roots), bool(settings.allow_hub_models))

    def check(self, path: str) -> str:
        """:func:`check_model_path` under these rules."""
        return check_model_path(path, self.roots, allow_hub=self.allow_hub)

    def check_folder(self, path: str) -> str:
        """A local folder under the roots, never a hub id (a checkpoint of a training run)."""
        return check_model_path(path, self.roots, allow_hub=False)

    def folders(self, pattern: str) -> list[str]:
        """The folders a checkpoint glob (``/runs/sft/checkpoint-*``, or relative to a root)
        matches, each checked; the pattern's fixed part is checked before anything is listed,
        so a pattern outside the roots tells nothing about what exists there. No match: []."""
        if not glob.has_magic(pattern):
            return [self.check_folder(pattern)]
        where = ", ".join(map(str, self.roots)) or "none configured"
        if not self.roots:
            raise _no_roots(pattern)
        parts = Path(pattern).parts
        if ".." in parts or parts[0].startswith("~"):  # a glob ``..`` would list outside a root
            raise _outside(pattern, where)
        fixed = Path(*parts[: next(i for i, p in enumerate(parts) if glob.has_magic(p))])
        if Path(pattern).is_absolute():
            resolved_roots = [Path(r).expanduser().resolve() for r in self.roots]
            _inside(pattern, fixed, resolved_roots, where)  # before anything is listed
            candidates = [pattern]
        else:  # relative: under each root in turn, the first with a match wins
            candidates = [str(Path(root) / pattern) for root in self.roots]
        for candidate in candidates:
            matches = sorted(glob.glob(candidate))
            if matches:
                return [self.check_folder(m) for m in matches]
        return []
