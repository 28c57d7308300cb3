"""Every test carries its folder's markers (tests/conftest.py), so that ``-m`` selects by kind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = {  # one small file of each folder
    "unit": "tests/unit/test_display.py",
    "integration": "tests/integration/test_api.py",
    "browser": "tests/browser/test_faded_cells.py",
    "demo": "tests/demo/test_suite.py",
}


def _selected(expression: str) -> set[str]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            expression,
            *FILES.values(),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 5), done.stdout + done.stderr  # 5: nothing selected
    return {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}


@pytest.mark.parametrize(
    ("expression", "folders"),
    [
        ("unit", {"unit"}),
        ("browser or demo", {"browser", "demo"}),
        ("integration and not browser and not demo", {"integration"}),
    ],
)
def test_markers_follow_the_folders(expression, folders):
    assert _selected(expression) == {FILES[f] for f in folders}
