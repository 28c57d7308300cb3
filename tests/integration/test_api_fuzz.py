"""The OpenAPI document is honest: schemathesis 4 (every check) over /openapi.json of a real
`forgetmap serve`, once per role and once without a token, in private mode so every role's reads
are exercised. It must find no server error, no timeout, no undocumented status code, no
response that breaks its declared schema, no invalid body accepted.

Two checks are configured. ``positive_data_acceptance`` also accepts 422: a schema cannot say
that a pair's two models differ, that a corpus names a dataset, that a shard is a
recoverability shard, or that the theory lab finishes within its time budget; the app answers
those schema-valid requests with its documented 422 and a message. ``negative_data_rejection``
also takes 413 as a refusal: a body over its route's limit is refused before it is parsed
(forgetmap.web.limits).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.cli import Cli
from tests.support.server import free_port
from tests.support.services import service_missing
from tests.support.tables import BASE, POST, rows_for, write_csv

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ST = Path(sys.executable).parent / "st"
FORGETMAP = Path(sys.executable).parent / "forgetmap"
ROLES = ("read", "submit", "worker", "admin")

CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429"]

# schemathesis's own list, with 413: a body over its route's limit is refused before it is parsed
[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428",
                     "429", "5xx"]

[parameters]
"path.pair_id" = 1
"path.job_id" = 1
"path.shard_id" = 1
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not ST.exists():
        service_missing("schemathesis is not installed (pip install -e '.[dev]')")
    tmp = tmp_path_factory.mktemp("fuzz")
    db = tmp / "fm.duckdb"
    cli = Cli(db)

    def forgetmap(*args: str) -> str:
        return cli(*args).stdout.strip()

    write_csv(tmp / "base.csv", rows_for("base-7b", BASE))
    write_csv(tmp / "post.csv", rows_for("post-7b", POST))
    forgetmap("import", "table", tmp / "base.csv")
    forgetmap("import", "table", tmp / "post.csv")
    forgetmap("pair", "add", "base-7b", "post-7b", "--label", "fuzzed")
    tokens = {role: forgetmap("token", "create", role, "--role", role) for role in ROLES}
    env = {
        "FORGETMAP_PRIVATE": "1",
        "FORGETMAP_THEORY_SECONDS": "0.2",
        "FORGETMAP_DATA_DIR": str(tmp),
        "FORGETMAP_RECONCILE_SECONDS": "3600",
    }
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # the access log of thousands of requests goes to a file: a pipe nobody reads would fill up
    with (tmp / "server.log").open("w") as log:
        proc = subprocess.Popen(
            [str(FORGETMAP), "--db", str(db), "serve", "--port", str(port)],
            env={**os.environ, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_healthy(url, proc)
        # a job with a shard, so the job and shard operations reach their logic (ids 1)
        job = {
            "models": [{"name": "base-7b", "path": "org/base"}],
            "benchmarks": ["piqa"],
            "seeds": [7],
        }
        headers = {"Authorization": f"Bearer {tokens['admin']}"}
        r = httpx.post(url + "/api/jobs", json=job, headers=headers)
        assert r.status_code == 201, r.text
        (tmp / "schemathesis.toml").write_text(CONFIG)
        # private mode: the document itself needs a token; the tokenless run reads it from a file
        (tmp / "openapi.json").write_text(httpx.get(url + "/openapi.json", headers=headers).text)
        yield url, tokens, tmp
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _wait_healthy(url: str, proc: subprocess.Popen) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            if proc.poll() is not None:
                raise RuntimeError("the server exited") from None
            time.sleep(0.2)
    raise RuntimeError("the server did not start in 60 s")


# admin passes every role check, so its run goes deepest: every phase (coverage: boundary values
# of every parameter; fuzzing; stateful). The other roles and no token are refused at the same
# points of every operation, so random fuzzing suffices to check those answers are documented.
RUNS = {
    "admin": ("examples,coverage,fuzzing,stateful", 8),
    "submit": ("fuzzing", 4),
    "worker": ("fuzzing", 4),
    "read": ("fuzzing", 4),
    None: ("fuzzing", 3),
}


@pytest.mark.parametrize("role", list(RUNS))
def test_fuzz_openapi(server, role):
    url, tokens, tmp = server
    phases, examples = RUNS[role]
    command = [
        str(ST),
        "--config-file",
        str(tmp / "schemathesis.toml"),
        "run",
        str(tmp / "openapi.json"),
        "--url",
        url,
        "--checks",
        "all",
        "--phases",
        phases,
        "--max-examples",
        str(examples),
        "--request-timeout",
        "30",
        "--generation-deterministic",
        "--no-color",
    ]
    if role:
        command += ["-H", f"Authorization: Bearer {tokens[role]}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp)
    report = result.stdout[-12000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    tested = re.search(r"Tested: (\d+)", report)
    assert tested and int(tested.group(1)) >= 25, report  # every operation was exercised
