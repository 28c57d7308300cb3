"""Commands through the app: while `forgetmap serve` owns a database, the CLI's commands on it run
through the app (the owner file beside the database), with the same output and exit codes; a
remote app takes a token of the command's role; a stale owner file is ignored."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import httpx
import pytest
from forgetmap.runtime.owner import owner_path, read_owner

from tests.support.cli import Cli, cli_both_ways
from tests.support.server import Server, free_port

GOOD = "model,benchmark,sample_id,seed,correct\nb,piqa,1,0,1\nb,piqa,2,0,0\n"
POST = "model,benchmark,sample_id,seed,correct\np,piqa,1,0,0\np,piqa,2,0,1\n"

cli = cli_both_ways(shared_owner=True)


def test_token_commands_both_ways(cli):
    name = f"t-{os.urandom(4).hex()}"  # the owner's database is shared by the module
    secret = cli("token", "create", name, "--role", "read").stdout.strip()
    assert secret.startswith("fm_")
    listed = cli("token", "list").stdout
    assert any(line.split("\t")[:2] == [name, "read"] for line in listed.splitlines())
    assert cli("token", "revoke", name).stdout == f"revoked token {name}\n"
    again = cli("token", "revoke", name, ok=False)
    assert (again.exit_code, again.stderr) == (2, f"error: no token named '{name}'\n")


def test_a_failing_import_answers_the_same_both_ways(tmp_path, monkeypatch):
    """The same bad file, relative to the client's folder (not the app's): identical stdout,
    stderr and exit code with the owner absent and running."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.csv").write_text(GOOD)
    (tmp_path / "bad.csv").write_text("model,benchmark,sample_id,correct\nm,piqa,1,2\n")
    answers = {}
    for mode in ("local", "owner"):
        run = Cli(tmp_path / f"{mode}.duckdb", owner=mode == "owner")
        try:
            run("import", "table", "good.csv")
            bad = run("import", "table", "bad.csv", ok=False)
            missing = run("import", "table", "nope.csv", ok=False)
            answers[mode] = [(r.exit_code, r.stdout, r.stderr) for r in (bad, missing)]
        finally:
            run.stop()
    assert answers["owner"] == answers["local"]
    (bad_code, _, bad_err), (missing_code, _, missing_err) = answers["local"]
    assert bad_code == missing_code == 2
    assert (
        bad_err.startswith("error: bad.csv: row 1: correct must be 0/1")
        and bad_err.count("\n") == 1
    )
    assert missing_err == f"error: {tmp_path / 'nope.csv'}: no such file (nothing was imported)\n"


@pytest.fixture
def served(tmp_path):
    (tmp_path / "base.csv").write_text(GOOD)
    (tmp_path / "post.csv").write_text(POST)
    local = Cli(tmp_path / "fm.duckdb")
    local("import", "table", tmp_path / "base.csv")
    local("import", "table", tmp_path / "post.csv")
    reader = local("token", "create", "reader", "--role", "read").stdout.strip()
    server = Server(tmp_path / "fm.duckdb")
    yield server, reader
    server.stop()


def test_owner_file_is_private_names_the_app_and_goes_with_it(served):
    server, _ = served
    path = owner_path(server.db)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    owner = read_owner(path)
    assert (owner.url, owner.pid) == (server.url, server.proc.pid)
    assert owner.credential.startswith("fml_")
    assert httpx.get(server.url + "/healthz").headers["X-Forgetmap-App-Id"] == owner.app_id
    server.stop()
    assert not path.exists()


def test_owner_writes_read_back_after_it_stops(served, tmp_path):
    server, _ = served
    owned = Cli(server.db, server=server)
    assert "added pair 1: b -> p" in owned("pair", "add", "b", "p").stdout
    records = owned.json("map", "--level", "benchmark", "--format", "json")
    server.stop()
    assert Cli(server.db).json("map", "--level", "benchmark", "--format", "json") == records
    assert records[0]["n_10"] == 1 and records[0]["n_01"] == 1


def test_serve_is_refused_through_the_app(served):
    server, _ = served
    owner = read_owner(owner_path(server.db))
    answer = httpx.post(
        server.url + "/api/cli",
        json={"argv": ["serve"], "cwd": "/"},
        headers={"Authorization": f"Bearer {owner.credential}"},
    )
    assert answer.status_code == 400
    assert answer.json()["detail"] == (
        "`forgetmap serve` does not run through the app; run it in a shell of its own"
    )
    # `forgetmap serve` itself runs here and says why it cannot: one line, exit 2
    second = Cli(server.db)("serve", "--port", "0", ok=False)
    assert second.exit_code == 2
    assert second.stderr.count("\n") == 1 and "is in use by another process" in second.stderr


def test_route_needs_a_token(served):
    server, _ = served
    answer = httpx.post(server.url + "/api/cli", json={"argv": ["map"], "cwd": "/"})
    assert answer.status_code == 401


def test_remote_app_takes_a_token_of_the_commands_role(served, tmp_path):
    server, reader = served
    Cli(server.db, server=server)("pair", "add", "b", "p")
    elsewhere = Cli(tmp_path / "not-this-one.duckdb")  # --url wins over --db
    remote = ("--url", server.url, "--token", reader)
    records = json.loads(elsewhere(*remote, "map", "--format", "json").stdout)
    assert {(r["base"], r["post"]) for r in records} == {("b", "p")}
    refused = elsewhere(*remote, "pair", "add", "b", "p", ok=False)
    assert refused.exit_code == 2
    assert refused.stderr == (
        f"error: the app at {server.url} refused the command (403): this needs a token with "
        "role submit or admin; token 'reader' has role read\n"
    )
    files = elsewhere(*remote, "recover", "export", "1", tmp_path / "out.csv", ok=False)
    assert files.exit_code == 2
    assert files.stderr == (
        "error: `forgetmap recover export` reads or writes files on this machine, which a "
        "remote app (--url) cannot do: run it on the app's machine\n"
    )
    assert not (tmp_path / "out.csv").exists()
    missing = elsewhere("--url", server.url, "map", ok=False)
    assert missing.exit_code == 2 and "needs a token" in missing.stderr
    assert not (tmp_path / "not-this-one.duckdb").exists()


def test_a_stale_owner_file_is_ignored(tmp_path):
    local = Cli(tmp_path / "fm.duckdb")
    (tmp_path / "base.csv").write_text(GOOD)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    stale = {
        "url": f"http://127.0.0.1:{free_port()}",
        "credential": "fml_x",
        "app_id": "a",
        "started_at": "2026-01-01T00:00:00+00:00",
    }
    for pid in (int(dead.stdout), os.getpid()):  # a dead pid; a live one that does not answer
        owner_path(local.db).write_text(json.dumps({**stale, "pid": pid}))
        out = local("import", "table", tmp_path / "base.csv").stdout
        assert "already stored" in out


def test_a_killed_apps_owner_file_is_ignored(served, tmp_path):
    server, _ = served
    server.kill()
    assert owner_path(server.db).exists()  # SIGKILL: no shutdown ran
    assert "added pair 1" in Cli(server.db)("pair", "add", "b", "p").stdout
