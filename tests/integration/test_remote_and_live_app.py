"""Through the app, as on the file: an import into a remote app (``--url``, no shared files)
uploads what it names and answers as the import on the file does; a bad option fails before
anything is sent; a forwarded command's output arrives as it is written (an import's progress
while it runs), rendered for the client's terminal."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from forgetmap.cli import main
from forgetmap.demo.layouts.lm_eval import write_lm_eval_samples
from forgetmap.demo.layouts.paper import make_items, write_run
from forgetmap.runtime.owner import owner_path, read_owner

from tests.support.cli import Cli
from tests.support.server import Server

BASE = "model,benchmark,sample_id,seed,correct\nb,piqa,1,0,1\nb,piqa,2,0,0\nb,piqa,3,0,1\n"
POST = "model,benchmark,sample_id,seed,correct\np,piqa,1,0,0\np,piqa,2,0,1\np,piqa,3,0,1\n"
BAD = "model,benchmark,sample_id,correct\nm,piqa,1,2\n"
TASK = "community|bbh_reasoning_letter:navigate|0"
PROGRESS = re.compile(r"^importing \S+: .+ \(\d+\.\d s\)$")
"""A progress line (``forgetmap.runtime.progress.LineProgress``): its stages and times are the
import's own, through the app or not."""


def _client_files(folder: Path) -> None:
    """Tables, an lm-eval samples file per model and a lighteval tree of two models."""
    (folder / "base.csv").write_text(BASE)
    (folder / "post.csv").write_text(POST)
    (folder / "bad.csv").write_text(BAD)
    write_lm_eval_samples(folder / "lm-base", "mmlu_anatomy", [1, 1, 1, 0, 0, 1, 1, 1])
    write_lm_eval_samples(folder / "lm-post", "mmlu_anatomy", [1, 0, 1, 0, 1, 1, 1, 1])
    items = make_items("navigate", 6)
    write_run(
        folder / "le-out",
        "org/le-base",
        "2025-07-01T10-00-00.000001",
        {TASK: (items, [1, 1, 0, 0, 1, 0])},
        style="base",
        seed=0,
    )
    write_run(
        folder / "le-out",
        "org/le-post",
        "2025-07-02T10-00-00.000001",
        {TASK: (items, [1, 0, 1, 0, 1, 1])},
        style="chat",
        seed=0,
    )


IMPORTS = [
    ("import", "table", "base.csv"),
    ("import", "table", "post.csv"),
    ("import", "lm-eval", "lm-base", "--model", "lm-base"),
    ("import", "lm-eval", "lm-post", "--model", "lm-post"),
    ("import", "lighteval", "le-out"),
    ("import", "table", "base.csv"),  # again: nothing new
    ("import", "table", "bad.csv"),  # a bad file: the reader's line, exit 2
    ("import", "table", "nope.csv"),  # no such file
    ("import", "lighteval", "nope"),
    ("import", "table"),  # a usage error
    ("import", "lm-eval", "lm-base"),  # no --model: click's line
]
PAIRS = [("b", "p"), ("lm-base", "lm-post"), ("org/le-base", "org/le-post")]


@pytest.fixture
def remote(tmp_path, monkeypatch):
    """A served app on a database of its own, tokens of role submit and read, and a client
    folder with the files to import, which the app cannot see: the tests run in it, where the
    default database (data/forgetmap.duckdb) does not exist."""
    db = tmp_path / "app" / "fm.duckdb"
    db.parent.mkdir()
    owner = Cli(db)
    tokens = {
        role: owner("token", "create", f"t-{role}", "--role", role).stdout.strip()
        for role in ("submit", "read")
    }
    server = Server(db)
    client = tmp_path / "client"
    client.mkdir()
    _client_files(client)
    monkeypatch.chdir(client)
    monkeypatch.delenv("FORGETMAP_DB", raising=False)
    yield {"server": server, "tokens": tokens, "client": client}
    server.stop()


def _remote(server: Server, token: str, *args: str):
    """`forgetmap --url URL --token TOKEN ARGS`, with no --db: the default database path."""
    return CliRunner().invoke(
        main, ["--url", server.url, "--token", token, *args], catch_exceptions=False
    )


def _without_progress(stderr: str) -> str:
    return "".join(line for line in stderr.splitlines(True) if not PROGRESS.match(line.rstrip()))


def test_a_remote_import_answers_and_maps_as_the_import_on_the_file(remote, tmp_path):
    server, submit = remote["server"], remote["tokens"]["submit"]
    on_file = Cli(tmp_path / "local.duckdb")
    answers = {"remote": [], "local": []}
    progress = []
    for args in IMPORTS:
        remote_run = _remote(server, submit, *args)
        local_run = on_file(*args, ok=False)
        progress += [line for line in remote_run.stderr.splitlines() if PROGRESS.match(line)]
        for way, run in (("remote", remote_run), ("local", local_run)):
            answers[way].append((args, run.exit_code, run.stdout, _without_progress(run.stderr)))
    assert answers["remote"] == answers["local"]
    codes = [code for _, code, _, _ in answers["local"]]
    assert codes == [0] * 6 + [2] * 5
    assert (
        answers["local"][0][2] == "imported 3 new rows (0 already stored) for b on 1 benchmarks\n"
    )
    assert answers["local"][5][2].startswith("imported 0 new rows (3 already stored)")
    assert answers["local"][6][3].startswith("error: bad.csv: row 1: correct must be 0/1")
    assert progress  # the job's progress, heard while it ran

    for base, post in PAIRS:
        assert _remote(server, submit, "pair", "add", base, post).exit_code == 0
        on_file("pair", "add", base, post)
    mapped = _remote(server, remote["tokens"]["read"], "map", "--format", "json")
    assert mapped.exit_code == 0, (mapped.stdout, mapped.stderr)
    remote_map = json.loads(mapped.stdout)
    assert remote_map == on_file.json("map", "--format", "json")
    assert {(r["base"], r["post"]) for r in remote_map} == set(PAIRS)
    assert not (remote["client"] / "data").exists()  # no database of its own was made here


def test_a_bad_option_fails_before_anything_is_sent(remote, tmp_path):
    server, tokens = remote["server"], remote["tokens"]
    bad = [
        ("import", "lighteval", "le-out", "--seed", str(2**31)),
        ("import", "table", "base.csv", "--model", "a\x01b"),
    ]
    for args in bad:
        sent = _remote(server, tokens["submit"], *args)
        local = Cli(tmp_path / "local.duckdb")(*args, ok=False)
        assert (sent.exit_code, sent.stdout, sent.stderr) == (local.exit_code, "", local.stderr)
        assert sent.exit_code == 2 and sent.stderr.count("\n") == 1
        assert sent.stderr.startswith("error: --") and "(nothing was imported)" in sent.stderr
    reader = _remote(server, tokens["read"], "import", "table", "base.csv")
    assert reader.exit_code == 2
    assert reader.stderr == (
        "error: this needs a token with role submit or admin; token "
        "'t-read' has role read (nothing was imported)\n"
    )
    jobs = httpx.get(
        server.url + "/api/jobs", headers={"Authorization": f"Bearer {tokens['read']}"}
    )
    assert jobs.json() == []  # no upload reached the app


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory) -> Path:
    """A lighteval run of 40 tasks of 1,500 questions: an import long enough (about a second)
    to tell progress that arrives as it goes from progress that arrives at the end."""
    folder = tmp_path_factory.mktemp("big")
    rng = random.Random(0)
    tasks = {}
    for number in range(40):
        items = make_items(f"task{number}", 1500)
        tasks[f"community|bbh_reasoning_letter:task{number}|0"] = (
            items,
            [rng.random() < 0.6 for _ in items],
        )
    write_run(folder / "le", "org/m", "2025-07-01T10-00-00.000001", tasks, style="chat", seed=0)
    return folder / "le"


MARGIN_SECONDS = 0.1
"""How long before its end a command's first line must arrive: its output was sent as it was
written, not kept to the end (where it arrived within milliseconds of the exit code)."""


def test_a_forwarded_imports_progress_arrives_while_it_runs(big_tree, tmp_path):
    db = tmp_path / "fm.duckdb"
    server = Server(db)
    try:
        credential = read_owner(owner_path(db)).credential
        arrivals = []
        call = {"argv": ["import", "lighteval", "le", "--seed", "1"], "cwd": str(big_tree.parent)}
        with httpx.stream(
            "POST",
            server.url + "/api/cli",
            json=call,
            timeout=120,
            headers={"Authorization": f"Bearer {credential}"},
        ) as answer:
            assert answer.status_code == 200
            assert answer.headers["content-type"].startswith("application/x-ndjson")
            for line in answer.iter_lines():
                arrivals.append((time.monotonic(), json.loads(line)))
        *pieces, (ended, end) = arrivals
        assert end == {"exit_code": 0}
        first_at, first = pieces[0]
        assert first["stream"] == "stderr" and PROGRESS.match(first["text"].splitlines()[0])
        assert first["text"].startswith("importing le: read files")
        assert ended - first_at >= MARGIN_SECONDS, arrivals
        stdout = "".join(p["text"] for _, p in pieces if p["stream"] == "stdout")
        assert stdout == "imported 60,000 new rows (0 already stored) for org/m on 40 benchmarks\n"

        # the command line prints each piece as it comes: a line of progress on its stderr
        # well before it ends, and before the summary on its stdout
        heard = _timed_lines(
            [
                str(Path(sys.executable).parent / "forgetmap"),
                "--db",
                str(db),
                "import",
                "lighteval",
                str(big_tree),
                "--seed",
                "2",
            ]
        )
        (exited, code), lines = heard[-1], heard[:-1]
        assert code == 0
        first_progress = next(at for at, stream, text in lines if stream == "stderr")
        summary = next(at for at, stream, text in lines if stream == "stdout")
        assert first_progress < summary and exited - first_progress >= MARGIN_SECONDS, heard
    finally:
        server.stop()


def _timed_lines(command: list[str]) -> list:
    """(time, stream, line) of each line a process prints, as it prints it; last (time, exit)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    heard: list = []
    lock = threading.Lock()

    def follow(stream, name: str) -> None:
        for line in stream:
            with lock:
                heard.append((time.monotonic(), name, line.rstrip("\n")))

    readers = [
        threading.Thread(target=follow, args=(process.stdout, "stdout")),
        threading.Thread(target=follow, args=(process.stderr, "stderr")),
    ]
    for reader in readers:
        reader.start()
    code = process.wait(timeout=120)
    exited = time.monotonic()
    for reader in readers:
        reader.join()
    return sorted(heard) + [(exited, code)]


def test_tables_are_as_wide_as_the_clients_terminal(tmp_path, monkeypatch):
    """`pair list` in a 50-column terminal: the table the app renders is the one rendered here
    (the app's own terminal, or none, is another width), in panels, with every cell whole."""
    (tmp_path / "base.csv").write_text(BASE)
    (tmp_path / "post.csv").write_text(POST)
    answers = {}
    for mode in ("local", "owner"):
        run = Cli(tmp_path / f"{mode}.duckdb", owner=mode == "owner")
        try:
            run("import", "table", tmp_path / "base.csv")
            run("import", "table", tmp_path / "post.csv")
            run("pair", "add", "b", "p", "--label", "a label long enough to wrap the table")
            with monkeypatch.context() as narrow:  # the app started without it
                narrow.setenv("COLUMNS", "50")
                answers[mode] = run("pair", "list").stdout
        finally:
            run.stop()
    assert answers["owner"] == answers["local"]
    assert max(map(len, answers["local"].splitlines())) <= 50
    assert "a label long enough to wrap the table" in answers["local"]  # never cut
