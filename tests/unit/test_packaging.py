"""The wheel: templates, static files and migrations ride inside the app package (app/assets/),
every module of app/, worker/ and forgetmap/ ships, and nothing else lands at the top of site-packages.
scripts/check-wheel installs that wheel in a clean venv and uses it; CI runs it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from app.runtime.resources import RESOURCE_FOLDERS, resource_dir

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory) -> set[str]:
    pytest.importorskip("setuptools", reason="the offline build uses this interpreter's setuptools")
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check-wheel"), "--build-only", str(out),
         "--no-build-isolation"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    with zipfile.ZipFile(built.stdout.strip()) as wheel:
        return set(wheel.namelist())


def _source_files(folder: str, pattern: str = "*") -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / folder).rglob(pattern)
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_wheel_carries_every_template_static_file_and_migration(wheel_files):
    for folder in RESOURCE_FOLDERS:
        expected = {f"app/assets/{name}" for name in _source_files(folder)}
        assert expected, f"{folder}/ is empty in the checkout"
        assert expected - wheel_files == set()
    assert {
        "app/assets/templates/map.html",
        "app/assets/static/plotly.min.js",
        "app/assets/static/htmx.min.js",
        "app/assets/static/swagger/swagger-ui-bundle.js",
        "app/assets/migrations/env.py",
        "app/assets/migrations/schema.sql",
        "app/assets/migrations/script.py.mako",
        "app/assets/migrations/versions/0001_initial.py",
        "app/core/taxonomy.yaml",
    } <= wheel_files


def test_wheel_carries_every_module_of_app_worker_and_forgetmap(wheel_files):
    # pyproject.toml lists the packages by name (the asset folders are mapped into app)
    modules = {
        name for top in ("app", "worker", "forgetmap") for name in _source_files(top, "*.py")
    }
    assert modules - wheel_files == set()


def test_wheel_puts_only_app_worker_and_forgetmap_at_the_top_of_site_packages(wheel_files):
    top = {name.split("/")[0] for name in wheel_files}
    dist_info = {
        name for name in top if name.startswith("forgetmap-") and name.endswith(".dist-info")
    }
    # forgetmap: the public names (``from forgetmap import ForgetmapCallback``)
    assert top - dist_info == {"app", "worker", "forgetmap"}


def test_checkout_reads_its_top_level_folders():
    assert [resource_dir(name) for name in RESOURCE_FOLDERS] == [
        ROOT / name for name in RESOURCE_FOLDERS
    ]
    with pytest.raises(ValueError, match="no resource folder 'tests'"):
        resource_dir("tests")
