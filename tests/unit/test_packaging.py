"""The wheel installs one name, ``forgetmap``: app/ is the package, worker/ its
``forgetmap.worker``, templates, static files and migrations ride inside it (forgetmap/assets/),
every module of app/ and worker/ ships, and nothing else lands at the top of site-packages.
scripts/check-wheel installs that wheel in a clean venv and uses it; CI runs it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from forgetmap.runtime.resources import RESOURCE_FOLDERS, resource_dir

from tests.support.services import require_module

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory) -> set[str]:
    require_module("setuptools", "the offline build uses this interpreter's setuptools")
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "check-wheel"),
            "--build-only",
            str(out),
            "--no-build-isolation",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
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
        expected = {f"forgetmap/assets/{name}" for name in _source_files(folder)}
        assert expected, f"{folder}/ is empty in the checkout"
        assert expected - wheel_files == set()
    assert {
        "forgetmap/assets/templates/map.html",
        "forgetmap/assets/static/plotly.min.js",
        "forgetmap/assets/static/htmx.min.js",
        "forgetmap/assets/static/swagger/swagger-ui-bundle.js",
        "forgetmap/assets/migrations/env.py",
        "forgetmap/assets/migrations/schema.sql",
        "forgetmap/assets/migrations/script.py.mako",
        "forgetmap/assets/migrations/versions/0001_initial.py",
        "forgetmap/core/taxonomy.yaml",
    } <= wheel_files


def test_wheel_carries_every_module_of_app_and_worker_under_its_one_name(wheel_files):
    # pyproject.toml lists the packages by name: app/ is forgetmap, worker/ forgetmap.worker
    installed = {"app": "forgetmap", "worker": "forgetmap/worker"}
    modules = {
        installed[top] + name[len(top) :]
        for top in installed
        for name in _source_files(top, "*.py")
    }
    assert modules - wheel_files == set()


def test_wheel_puts_only_forgetmap_at_the_top_of_site_packages(wheel_files):
    top = {name.split("/")[0] for name in wheel_files}
    dist_info = {
        name for name in top if name.startswith("forgetmap-") and name.endswith(".dist-info")
    }
    assert len(dist_info) == 1
    assert top - dist_info == {"forgetmap"}


def test_checkout_reads_its_top_level_folders():
    assert [resource_dir(name) for name in RESOURCE_FOLDERS] == [
        ROOT / name for name in RESOURCE_FOLDERS
    ]
    with pytest.raises(ValueError, match="no resource folder 'tests'"):
        resource_dir("tests")
