"""The house rules hold: scripts/check-architecture finds no violation.

The script reads the code itself (imports, string literals, line counts); running it here keeps
the rules in CI: no import cycle in app/ and worker/, SQL text only in app/db and migrations, the
worker imports no module that runs SQL, at most 10 in-function imports of our own modules outside
the CLI, no source file over 700 lines, the environment written only where a process starts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_check_architecture_finds_no_violation():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check-architecture")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("check-architecture: ok")


def test_check_architecture_catches_each_rule(tmp_path):
    """Each rule fires on a tree that breaks it (a copy of the script run on a small fake tree)."""
    script = (ROOT / "scripts" / "check-architecture").read_text()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "check-architecture").write_text(script)
    for folder in ("app", "app/db", "app/core", "app/web", "worker", "bench"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "app" / "a.py").write_text("import forgetmap.b\n")
    (tmp_path / "app" / "b.py").write_text("import forgetmap.a\nQ = 'SELECT 1 FROM results'\n")
    (tmp_path / "app" / "db" / "store.py").write_text("import duckdb\n")
    (tmp_path / "app" / "service.py").write_text("import forgetmap.db.store\n")
    (tmp_path / "worker" / "task.py").write_text("import forgetmap.service\n")
    (tmp_path / "worker" / "old.py").write_text("from app.core import pure\n")
    inner = "".join(f"def f{i}():\n    import forgetmap.a\n" for i in range(11))
    (tmp_path / "app" / "lazy.py").write_text(inner)
    (tmp_path / "bench" / "long.py").write_text("x = 1\n" * 701)
    (tmp_path / "app" / "web" / "page.py").write_text("X = 1\n")
    (tmp_path / "app" / "core" / "pure.py").write_text("import forgetmap.web.page\n")
    (tmp_path / "worker" / "view.py").write_text("import forgetmap.web.page\n")
    (tmp_path / "app" / "core" / "env.py").write_text(
        "import os\n"
        "os.environ['A'] = '1'\n"
        "os.environ.setdefault('B', '2')\n"
        "x = os.environ.get('C')\n"
        "os.putenv('D', '3')\n"
        "if __name__ == '__main__':\n"
        "    os.environ['E'] = '4'\n"
    )
    (tmp_path / "app" / "cli").mkdir()
    (tmp_path / "app" / "cli" / "__init__.py").write_text("import os\nos.environ['F'] = '5'\n")
    done = subprocess.run(
        [sys.executable, str(tmp_path / "scripts" / "check-architecture")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = done.stdout
    assert done.returncode == 1
    assert "import cycle: forgetmap.a <-> forgetmap.b" in out
    assert "SQL outside app/db: app/b.py:2" in out
    assert (
        "worker imports a module that runs SQL: forgetmap.worker.task -> forgetmap.service -> "
        "forgetmap.db" in out
    )
    assert "11 in-function imports of our own modules (at most 10)" in out
    assert "file over 700 lines: bench/long.py (701)" in out
    assert "module outside the rooms of app/: app/service.py" in out
    assert (
        "import up: forgetmap.core.pure (forgetmap.core, floor 0) -> forgetmap.web.page (floor 5)"
        in out
    )
    assert "import sideways: forgetmap.db.store" not in out
    assert (
        "worker imports outside the shared rooms: forgetmap.worker.view -> forgetmap.web.page"
        in out
    )
    assert "import of the old top-level name 'app': worker/old.py:1" in out
    written = [line for line in out.splitlines() if line.startswith("environment written")]
    assert written == [
        f"environment written outside a process entry point: app/core/env.py:{n}" for n in (2, 3, 5)
    ]
