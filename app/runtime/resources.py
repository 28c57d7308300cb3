"""Where the page templates, the static files and the schema migrations are on disk.

They live at the top of the source tree, beside app/ and worker/; the wheel carries them inside
the package, under ``forgetmap/assets/`` (pyproject.toml's ``package-dir``), so an installed
forgetmap puts no top-level ``templates``, ``static`` or ``migrations`` into site-packages. An
editable install imports ``forgetmap`` from the checkout's app/, which has no ``assets/``: there
the folders are read from the checkout's top."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Literal

ResourceFolder = Literal["templates", "static", "migrations"]
RESOURCE_FOLDERS: tuple[ResourceFolder, ...] = ("templates", "static", "migrations")

SOURCE_TREE = Path(__file__).resolve().parents[2]
"""The checkout's top when app/ is imported from one (in an installed wheel: site-packages)."""


def resource_dir(name: ResourceFolder) -> Path:
    """The folder ``name`` as a directory on disk: Jinja2, Starlette's StaticFiles and Alembic
    read real files."""
    if name not in RESOURCE_FOLDERS:
        raise ValueError(f"no resource folder {name!r}; one of {', '.join(RESOURCE_FOLDERS)}")
    bundled = files("forgetmap").joinpath("assets", name)
    if bundled.is_dir():
        # app is a regular package installed as files, so its resources are pathlib paths
        return Path(str(bundled))
    return SOURCE_TREE / name
