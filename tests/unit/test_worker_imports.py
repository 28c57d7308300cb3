"""The worker never opens the database: loading its task module loads no SQL library and none of
forgetmap.db or the services that run SQL (it learns everything over HTTP)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_worker_loads_no_module_that_runs_sql():
    probe = (
        "import sys, forgetmap.worker.tasks, forgetmap.worker.settings; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('duckdb', 'sqlalchemy') "
        "or m.startswith(('forgetmap.db', 'forgetmap.services.jobs', 'forgetmap.services.queue', "
        "'forgetmap.services.tokens'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "[]"
