"""Every command through the app (``POST /api/cli``) needs the role of the command click
runs, whatever the spelling (issue 50, row 1): a read token once printed an admin token with
``token -- create evil --role admin``. Walked over every leaf command of the CLI and every role,
against the app over a real DuckDB file."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from forgetmap.cli import main
from forgetmap.runtime.config import WebSettings
from forgetmap.runtime.owner import LOCAL_ONLY
from forgetmap.services.tokens import Role
from forgetmap.web import create_app
from forgetmap.web.cli import COMMAND_ROLES, REMOTE_REFUSED, AppCommandLine

from tests.support.cli import Cli
from tests.unit.test_command_line_resolution import LEAVES, leaf_click_runs, spellings

ROLES = (Role.read, Role.submit, Role.worker, Role.admin)


@pytest.fixture(scope="module")
def app_client(tmp_path_factory):
    folder = tmp_path_factory.mktemp("through_app")
    cli = Cli(folder / "fm.duckdb")
    cli("import", "table", _table(folder))
    tokens = {
        role: cli("token", "create", f"{role}-1", "--role", role).stdout.strip() for role in ROLES
    }
    app = create_app(
        cli.db,
        settings=WebSettings(secret_key="k", reconcile_seconds=3600),
        command_line=AppCommandLine(main, "http://testserver"),
    )
    with TestClient(app) as client:
        yield client, tokens, folder


def _table(folder):
    path = folder / "base.csv"
    path.write_text("model,benchmark,sample_id,seed,correct\nb,piqa,1,0,1\nb,piqa,2,0,0\n")
    return path


def run(client, token: str, argv: list[str], cwd) -> tuple[int, str]:
    answer = client.post(
        "/api/cli",
        json={"argv": argv, "cwd": str(cwd)},
        headers={"Authorization": f"Bearer {token}"},
    )
    if answer.status_code != 200:
        return answer.status_code, answer.json()["detail"]
    lines = [json.loads(line) for line in answer.text.splitlines()]
    return 200, "".join(line.get("text", "") for line in lines)


def expected_status(path: tuple[str, ...], role: Role) -> int:
    if path[0] in LOCAL_ONLY:
        return 400
    needed = COMMAND_ROLES[" ".join(path)]
    if needed != Role.read and role not in (needed, Role.admin):
        return 403
    return 400 if " ".join(path) in REMOTE_REFUSED or _names_files(path) else 200


def _names_files(path: tuple[str, ...]) -> bool:
    from forgetmap.contract.cli import resolve_command_line, touches_files

    command = resolve_command_line(main, list(path)).command
    return command is not None and touches_files(command)


@pytest.mark.parametrize("role", ROLES)
def test_every_command_needs_its_own_role_whatever_the_spelling(app_client, role):
    """The expected answer comes from what click runs (``leaf_click_runs``, on a mirror of the CLI),
    not from the app's own reading of the line."""
    client, tokens, folder = app_client
    wrong = []
    for path in LEAVES:
        for argv in spellings(path):
            runs = leaf_click_runs(argv)
            if runs is not None:
                want = expected_status(runs, role)
            else:  # usage or a group's help: for any role, unless the group never runs here
                want = 400 if path[0] in LOCAL_ONLY else 200
            status, detail = run(client, tokens[role], argv, folder)
            if status != want:
                wrong.append((" ".join(argv), status, want, detail[:80]))
    assert not wrong, wrong


def test_the_attack_as_written_is_refused_and_the_admin_still_creates_tokens(app_client):
    client, tokens, folder = app_client
    attack = ["token", "--", "create", "planted", "--role", "admin"]
    status, detail = run(client, tokens[Role.read], attack, folder)
    assert status == 403 and "admin" in detail and "read" in detail
    assert run(client, tokens[Role.read], ["token", "list"], folder)[0] == 403
    status, printed = run(client, tokens[Role.admin], attack, folder)
    assert status == 200 and printed.strip().startswith("fm_")
    listed = run(client, tokens[Role.admin], ["token", "list"], folder)[1]
    assert "planted\tadmin" in listed


@pytest.mark.parametrize("role", ROLES)
def test_every_role_reads(app_client, role):
    client, tokens, folder = app_client
    status, printed = run(client, tokens[role], ["map", "--format", "json"], folder)
    assert status == 200, printed
    assert run(client, tokens[role], ["pair", "list"], folder)[0] == 200


def test_files_of_the_apps_machine_stay_refused_whatever_the_spelling(app_client):
    client, tokens, folder = app_client
    for argv in (
        ["export", "--", "eee", "b", str(folder / "out")],
        ["import", "--", "table", str(folder / "base.csv")],
        ["--", "backup", str(folder / "bk")],
    ):
        status, detail = run(client, tokens[Role.admin], argv, folder)
        assert status == 400 and "files of the app's machine" in detail, argv
    assert not (folder / "out").exists() and not (folder / "bk").exists()


def test_options_of_forgetmap_itself_are_refused(app_client):
    client, tokens, folder = app_client
    status, detail = run(
        client, tokens[Role.admin], ["--db", str(folder / "x.duckdb"), "map"], folder
    )
    assert status == 400 and "--db" in detail
    assert not (folder / "x.duckdb").exists()
