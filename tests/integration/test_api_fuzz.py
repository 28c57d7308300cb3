"""The OpenAPI document is honest: schemathesis 4 (every check) over /openapi.json of a real
`forgetmap serve`, once per role and once without a token, in private mode so every role's reads
are exercised. It must find no server error, no timeout, no undocumented status code, no
response that breaks its declared schema, no invalid body accepted.

One check is configured: ``positive_data_acceptance`` also accepts 422. A schema cannot say
that a pair's two models differ, that a corpus names a dataset, that a shard is a
recoverability shard, or that the theory lab finishes within its time budget; the app answers
those schema-valid requests with its documented 422 and a message.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser.conftest import Server
from tests.integration.test_import_and_map import BASE, POST, rows_for, write_csv

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ST = Path(sys.executable).parent / "st"
FORGETMAP = Path(sys.executable).parent / "forgetmap"
ROLES = ("read", "submit", "worker", "admin")

CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429"]

[parameters]
"path.pair_id" = 1
"path.job_id" = 1
"path.shard_id" = 1
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not ST.exists():
        pytest.skip("schemathesis is not installed (pip install -e '.[dev]')")
    tmp = tmp_path_factory.mktemp("fuzz")
    db = tmp / "fm.duckdb"

    def forgetmap(*args: str) -> str:
        command = [str(FORGETMAP), "--db", str(db), *map(str, args)]
        return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()

    write_csv(tmp / "base.csv", rows_for("base-7b", BASE))
    write_csv(tmp / "post.csv", rows_for("post-7b", POST))
    forgetmap("import", "table", tmp / "base.csv")
    forgetmap("import", "table", tmp / "post.csv")
    forgetmap("pair", "add", "base-7b", "post-7b", "--label", "fuzzed")
    tokens = {role: forgetmap("token", "create", role, "--role", role) for role in ROLES}
    env = {"FORGETMAP_PRIVATE": "1", "FORGETMAP_THEORY_SECONDS": "1",
           "FORGETMAP_DATA_DIR": str(tmp), "FORGETMAP_RECONCILE_SECONDS": "3600"}  # fmt: skip
    os.environ.update(env)  # the server reads its settings from its environment
    try:
        srv = Server(db)
    finally:
        for key in env:
            os.environ.pop(key, None)
    # a job with a shard, so the job and shard operations reach their logic (ids 1)
    import httpx

    job = {
        "models": [{"name": "base-7b", "path": "org/base"}],
        "benchmarks": ["piqa"],
        "seeds": [7],
    }
    r = httpx.post(
        srv.url + "/api/jobs", json=job, headers={"Authorization": f"Bearer {tokens['admin']}"}
    )
    assert r.status_code == 201, r.text
    (tmp / "schemathesis.toml").write_text(CONFIG)
    yield srv, tokens, tmp
    srv.stop()


@pytest.mark.parametrize("role", [*ROLES, None])
def test_fuzz_openapi(server, role):
    srv, tokens, tmp = server
    command = [str(ST), "--config-file", str(tmp / "schemathesis.toml"), "run",
               srv.url + "/openapi.json", "--checks", "all", "--max-examples", "12",
               "--request-timeout", "10", "--generation-deterministic", "--no-color"]  # fmt: skip
    if role:
        command += ["-H", f"Authorization: Bearer {tokens[role]}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp)
    report = result.stdout[-12000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    tested = re.search(r"Tested: (\d+)", report)
    assert tested and int(tested.group(1)) >= 25, report  # every operation was exercised
