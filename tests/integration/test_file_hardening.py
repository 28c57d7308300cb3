"""What the app writes on disk is private, and what it reads from disk is checked (issue 50, row
7): under the usual umask 022 every file and folder that `forgetmap serve`, an import (on the
app's disk and uploaded), a backup, a restore and the embedded queue write has no group or other
bits; an owner file that someone else could have written (another mode, another user, a link, a
URL off this machine) is ignored with a warning and the command runs on the database file, while
the app's own owner file still routes through the app; a tampered backup is refused in one line
and leaves nothing, while a backup as taken restores whole."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import duckdb
import pytest
from forgetmap.db import open_store, texts
from forgetmap.db.backup import MANIFEST, TABLES, TEXTS
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.owner import owner_path, read_owner

from tests.support.cli import Cli
from tests.support.server import Server

LONG = "x" * 300  # over texts.LONG_TEXT_BYTES: kept in an answer file
NOBODY = 65534


def _table(model: str, flips: int, seed: int = 0) -> str:
    rows = ["model,benchmark,sample_id,seed,correct,response"]
    rows += [f"{model},piqa,{i},{seed},{int(i >= flips)},{LONG}" for i in range(6)]
    return "\n".join(rows) + "\n"


@pytest.fixture
def loose_umask():
    """The umask most systems start with (022): what the app writes must be private anyway."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _not_private(root: Path, skip=lambda path: False) -> list[str]:
    """Every path under ``root`` (itself included) with a group or other bit, and its mode."""
    paths = [root, *root.rglob("*")]
    return [
        f"{p} {stat.S_IMODE(p.lstat().st_mode):04o}"
        for p in paths
        if not skip(p) and stat.S_IMODE(p.lstat().st_mode) & 0o077
    ]


def _written_by_the_test(path: Path) -> bool:
    return "inputs" in path.parts or ".serve-" in path.name


# ------------------------------------------------------------------------------ modes


def test_every_file_and_folder_the_app_writes_is_private(tmp_path, loose_umask):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "base.csv").write_text(_table("b", 0))
    (inputs / "post.csv").write_text(_table("p", 3))
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    db = data / "fm.duckdb"
    server = Server(db)  # a process of its own, started under umask 022
    try:
        owned = Cli(db, server=server)
        owned("import", "table", inputs / "base.csv")  # on the app's disk
        submit = owned("token", "create", "uploader", "--role", "submit").stdout.strip()
        remote = Cli(tmp_path / "client.duckdb")  # uploaded: staged beside the database
        remote("--url", server.url, "--token", submit, "import", "table", inputs / "post.csv")
        owned("pair", "add", "b", "p")
        owned("backup", tmp_path / "backup")
        written = {p.name for p in data.iterdir()}
        assert {
            "fm.duckdb",
            "fm.duckdb.texts",
            "fm.duckdb.imports",
            "fm.duckdb.app.json",
        } <= written
        assert len(list(texts.folder_of(db).iterdir())) == 2
        assert _not_private(data, _written_by_the_test) == []
    finally:
        server.stop()
    assert _not_private(data, _written_by_the_test) == []
    assert _not_private(tmp_path / "backup") == []
    assert not (tmp_path / "client.duckdb").exists()


def test_a_database_made_readable_before_is_made_private_when_opened(tmp_path, loose_umask):
    """A file, answer files and an upload staging folder left 0644/0755 (by a forgetmap before
    this one, or copied in by hand) lose their group and other bits at the next open."""
    (tmp_path / "base.csv").write_text(_table("b", 0))
    cli = Cli(tmp_path / "fm.duckdb")
    cli("import", "table", tmp_path / "base.csv")
    folder = texts.folder_of(cli.db)
    loosened = [cli.db, folder, *folder.iterdir()]
    for path in loosened:
        path.chmod(0o755 if path.is_dir() else 0o644)
    cli("model", "sizes")  # any command that opens the file
    assert [p for p in loosened if stat.S_IMODE(p.stat().st_mode) & 0o077] == []


def test_the_embedded_queue_folder_is_private(tmp_path, loose_umask):
    made_before = tmp_path / "old" / "broker" / "queue"
    made_before.mkdir(parents=True, mode=0o755)
    for data_dir in (tmp_path / "new", tmp_path / "old"):
        BrokerSettings(url=None, data_dir=data_dir).celery_config()
        assert _not_private(data_dir / "broker") == []
        assert {p.name for p in (data_dir / "broker").iterdir()} == {
            "queue",
            "processed",
            "control",
        }


# ------------------------------------------------------------------------------ the owner file


@pytest.fixture
def two_databases(tmp_path):
    """An app serving database A; database B, on the file, with other data."""
    for name, model in (("a", "app-model"), ("b", "file-model")):
        (tmp_path / f"{name}.csv").write_text(_table(model, 0))
        Cli(tmp_path / f"{name}.duckdb")("import", "table", tmp_path / f"{name}.csv")
    server = Server(tmp_path / "a.duckdb")
    yield server, Cli(tmp_path / "b.duckdb")
    server.stop()


FORGERIES = {
    "mode 0644": "its mode is 0644, not 0600 (others could have written it)",
    "another user": f"it belongs to uid {NOBODY}, not to this user (uid {os.geteuid()})",
    "a symbolic link": "it is a symbolic link (the app writes a plain file)",
    "a url off this machine": "its url 'http://10.255.255.1:8000' is not on this machine",
}


@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_forged_owner_file_is_ignored_and_the_command_runs_on_the_file(two_databases, forgery):
    """B's owner file is made to name the app that serves A, with its credential: trusted, a
    command on B would run on A. Each forgery is refused, and the command runs on B's file."""
    server, on_b = two_databases
    app_owner = owner_path(server.db)
    forged = owner_path(on_b.db)
    content = json.loads(app_owner.read_text())
    if forgery == "a symbolic link":
        forged.symlink_to(app_owner)
    else:
        if forgery == "a url off this machine":
            content["url"] = "http://10.255.255.1:8000"  # refused before anything is sent
        forged.write_text(json.dumps(content))
        forged.chmod(0o644 if forgery == "mode 0644" else 0o600)
        if forgery == "another user":
            if os.geteuid() != 0:
                pytest.skip("giving a file to another user needs root")
            os.chown(forged, NOBODY, NOBODY)
    result = on_b("model", "sizes")
    assert result.stderr.startswith(f"warning: ignoring the owner file {forged}: ")
    assert FORGERIES[forgery] in result.stderr.splitlines()[0]
    assert "file-model" in result.stdout and "app-model" not in result.stdout
    # the same content in a file of this user, 0600, loopback: trusted, so runs on A
    forged.unlink()
    forged.write_text(json.dumps({**content, "url": server.url}))
    forged.chmod(0o600)
    trusted = on_b("model", "sizes")
    assert "app-model" in trusted.stdout and "warning" not in trusted.stderr


def test_the_apps_own_owner_file_still_routes_through_the_app(two_databases):
    server, _ = two_databases
    owner = read_owner(owner_path(server.db))
    assert owner is not None and owner.url == server.url
    through = Cli(server.db, server=server)("model", "sizes")  # the file is locked: via the app
    assert "app-model" in through.stdout and "warning" not in through.stderr


# ------------------------------------------------------------------------------ backups


@pytest.fixture
def backup(tmp_path) -> Path:
    cli = Cli(tmp_path / "fm.duckdb")
    (tmp_path / "base.csv").write_text(_table("b", 0))
    (tmp_path / "post.csv").write_text(_table("p", 3))
    cli("import", "table", tmp_path / "base.csv")
    cli("import", "table", tmp_path / "post.csv")
    cli("pair", "add", "b", "p")
    cli("token", "create", "alice", "--role", "read")
    cli("backup", tmp_path / "backup")
    return tmp_path / "backup"


def _rewrite(backup: Path, table: str, statement: str, added: int = 0) -> None:
    """Run ``statement`` on table ``t`` (the backup's Parquet file of ``table``) and write it
    back; the manifest's count follows, so only the change itself can be refused."""
    path = backup / TABLES / f"{table}.parquet"
    conn = duckdb.connect()
    conn.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [str(path)])
    conn.execute(statement)
    conn.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    conn.close()
    manifest = json.loads((backup / MANIFEST).read_text())
    manifest["tables"][table] += added
    (backup / MANIFEST).write_text(json.dumps(manifest))


def _answer_file(backup: Path) -> Path:
    return next((backup / TEXTS).iterdir())


def _link_to_a_copy(path: Path) -> None:
    outside = path.parent.parent.parent / "outside.parquet"
    shutil.copyfile(path, outside)
    path.unlink()
    path.symlink_to(outside)


TAMPERS = {
    "a token of an unknown role": (
        lambda b: _rewrite(
            b,
            "api_tokens",
            "INSERT INTO t SELECT id + 100, 'evil', "
            "repeat('a', 64), created_at, NULL, 'root' FROM t",
            added=1,
        ),
        "refused: the backup's api_tokens.role holds 'root', which the app never writes",
    ),
    "a token's name twice": (
        lambda b: _rewrite(
            b,
            "api_tokens",
            "INSERT INTO t SELECT id + 100, name, "
            "repeat('b', 64), created_at, NULL, 'admin' FROM t",
            added=1,
        ),
        "refused: the backup's api_tokens holds the key (name='alice') 2 times",
    ),
    "a result twice": (
        lambda b: _rewrite(b, "results", "INSERT INTO t SELECT * FROM t LIMIT 1", added=1),
        "refused: the backup's results holds the key (model_id=",
    ),
    "a negative seed": (
        lambda b: _rewrite(b, "results", "UPDATE t SET seed = -1 WHERE sample_id = '0'"),
        "refused: the backup's results.seed holds -1, which the app never writes",
    ),
    "a num_choices of 1": (
        lambda b: _rewrite(b, "results", "UPDATE t SET num_choices = 1"),
        "refused: the backup's results.num_choices holds 1, which the app never writes",
    ),
    "a negative count": (
        lambda b: _rewrite(b, "transitions", "UPDATE t SET n_10 = -5"),
        "refused: the backup's transitions.n_10 holds -5, which the app never writes",
    ),
    "a correct of 5": (
        lambda b: _rewrite(
            b, "results", "ALTER TABLE t ALTER correct TYPE INTEGER; UPDATE t SET correct = 5"
        ),
        "refused: the backup's results.correct is INTEGER, the schema's BOOLEAN",
    ),
    "an answer file that is a link": (
        lambda b: _link_to_a_copy(_answer_file(b)),
        "refused: the backup holds texts/",
    ),
    "a table that is a link": (
        lambda b: _link_to_a_copy(b / TABLES / "api_tokens.parquet"),
        "refused: the backup holds tables/api_tokens.parquet, a symbolic link",
    ),
    "a pipe": (
        lambda b: os.mkfifo(b / TEXTS / "fifo"),
        "refused: the backup holds texts/fifo, a device, pipe or socket",
    ),
}


@pytest.mark.parametrize("tamper", TAMPERS)
def test_a_tampered_backup_is_refused_in_one_line_and_leaves_nothing(backup, tmp_path, tamper):
    damage, message = TAMPERS[tamper]
    damage(backup)
    target = tmp_path / "restored"
    target.mkdir()
    result = Cli(target / "fm.duckdb")("restore", backup, ok=False)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {message}"), result.stderr
    assert result.stderr.count("\n") == 1
    assert list(target.iterdir()) == []


def test_a_tampered_backup_leaves_an_empty_database_empty(backup, tmp_path):
    TAMPERS["a token of an unknown role"][0](backup)
    empty = tmp_path / "empty.duckdb"
    open_store(empty).close()
    before = empty.read_bytes()
    result = Cli(empty)("restore", backup, ok=False)
    assert result.exit_code == 2 and "'root'" in result.stderr
    assert empty.read_bytes() == before and not texts.folder_of(empty).exists()


def test_a_backup_as_taken_restores_whole_and_private(backup, tmp_path, loose_umask):
    original = Cli(tmp_path / "fm.duckdb")
    restored = Cli(tmp_path / "restored" / "fm.duckdb")
    out = restored("restore", backup).stdout
    assert out.splitlines()[-1] == "restored tokens: alice (read)"
    assert restored.contents() == original.contents()
    assert restored.json("map", "--format", "json") == original.json("map", "--format", "json")
    assert _not_private(tmp_path / "restored") == []
    assert _not_private(backup) == []


def test_a_planted_admin_token_is_shown_and_can_be_left_out(backup, tmp_path):
    """A token of a known role cannot be told from a real one: the restore names every token it
    brings back, and --without-tokens brings none (create new ones after)."""
    TAMPERS["a token's name twice"][0](backup)
    _rewrite(backup, "api_tokens", "UPDATE t SET name = 'planted' WHERE role = 'admin'")
    shown = Cli(tmp_path / "shown.duckdb")("restore", backup).stdout
    assert shown.splitlines()[-1] == "restored tokens: alice (read), planted (admin)"
    without = Cli(tmp_path / "without.duckdb")
    out = without("restore", backup, "--without-tokens").stdout
    assert out.splitlines()[-1] == "restored no tokens (--without-tokens)"
    assert without.contents()["api_tokens"] == []
    assert "added pair" in without("pair", "add", "p", "b").stdout
