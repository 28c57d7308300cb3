"""Uploads bounded by what they cost, not only by bytes (issue 50, row 3): a table too wide, a line
too long, a value too long, JSON nested too deep, a number too long, a Parquet footer too large,
an archive that unpacks to far more than its size. Each is refused with its one-line error,
through the command line (`forgetmap import table`, in process) and through the app's upload
(`POST /api/imports`): nothing imported, nothing left in the staging folder; a normal file beside
it still imports."""

from __future__ import annotations

import json
import os
import tarfile
import time
import zipfile
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from forgetmap.importers.common import MAX_JSON_DEPTH, MAX_LINE_BYTES
from forgetmap.importers.table import MAX_HEADER_BYTES, MAX_PARQUET_FOOTER_BYTES, MAX_TABLE_COLUMNS
from forgetmap.runtime.config import WebSettings
from forgetmap.services.imports import MAX_UNPACK_RATIO, staging_folder

from tests.support.app_client import finished_job
from tests.support.cli import Cli
from tests.support.server import Server

ROW = {"model": "m", "benchmark": "mmlu_anatomy", "sample_id": "q1", "correct": 1}
CSV_HEADER = "model,benchmark,sample_id,correct"


def _jsonl(path: Path, *records: dict) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _wide_csv(path: Path, columns: int) -> None:
    path.write_text(",".join(f"c{i}" for i in range(columns)) + "\n" + "1," * (columns - 1) + "1\n")


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _fake_footer(path: Path) -> None:
    """A file whose last 8 bytes state a footer over the cap: refused before it is parsed."""
    size = MAX_PARQUET_FOOTER_BYTES + 1
    path.write_bytes(b"PAR1" + bytes(size) + size.to_bytes(4, "little") + b"PAR1")


HOSTILE = {
    # name: (writer, the error's text after "NAME: ")
    "wide.csv": (
        lambda p: _wide_csv(p, MAX_TABLE_COLUMNS + 1),
        "the file has 1,001 columns; a table may have at most 1,000",
    ),
    "very-wide.csv": (  # the 2.9 MB of 300,000 columns: the header is read 1 MiB only
        lambda p: _wide_csv(p, 300_000),
        "the file has more than 1",  # as many as the first MiB names
    ),
    "zeros.csv": (  # a header line with no end: 2 MiB of NUL bytes
        lambda p: p.write_bytes(bytes(2 * MAX_HEADER_BYTES)),
        "the header line is longer than 1,048,576 bytes (1 MiB)",
    ),
    "wide.jsonl": (
        lambda p: _jsonl(p, {**ROW, **{f"c{i}": 1 for i in range(MAX_TABLE_COLUMNS)}}),
        "the file has 1,004 columns; a table may have at most 1,000",
    ),
    "long.jsonl": (
        lambda p: _jsonl(p, ROW, {**ROW, "sample_id": "q2", "response": "x" * MAX_LINE_BYTES}),
        "line 2 is longer than 16,777,216 bytes (16 MiB)",
    ),
    "deep.jsonl": (  # the 100,000-deep choices
        lambda p: p.write_text(json.dumps(ROW)[:-1] + f', "choices": {_deep(100_000)}}}\n'),
        f"line 1 nests lists and objects more than {MAX_JSON_DEPTH} deep",
    ),
    "just-too-deep.jsonl": (
        lambda p: p.write_text(json.dumps(ROW)[:-1] + f', "choices": {_deep(64)}}}\n'),
        "line 1 nests lists and objects more than 64 deep",
    ),
    "seed.jsonl": (  # the 5,000-digit seed
        lambda p: p.write_text(json.dumps(ROW)[:-1] + ', "seed": ' + "9" * 5000 + "}\n"),
        "line 1 holds a number of more than 4,300 digits",
    ),
    "seed.csv": (
        lambda p: p.write_text(f"{CSV_HEADER},seed\nm,mmlu_anatomy,q1,1,{'9' * 5000}\n"),
        "row 1: seed must be",
    ),
    "deep-choices.csv": (
        lambda p: p.write_text(f'{CSV_HEADER},choices\nm,mmlu_anatomy,q1,1,"{_deep(100_000)}"\n'),
        "row 1: choices nests lists more than 64 deep",
    ),
    "options.csv": (
        lambda p: p.write_text(f"{CSV_HEADER},num_choices\nm,mmlu_anatomy,q1,1,40000\n"),
        "row 1: num_choices is 40,000, over the 32,767 it may be",
    ),
    "wide.parquet": (
        lambda p: pq.write_table(pa.table({f"c{i}": [1] for i in range(MAX_TABLE_COLUMNS + 1)}), p),
        "the file has 1,001 columns; a table may have at most 1,000",
    ),
    "footer.parquet": (
        _fake_footer,
        "the Parquet footer (its schema and row-group index) has 16,777,217 bytes",
    ),
    "value.parquet": (
        lambda p: pq.write_table(
            pa.table({k: [v] for k, v in ROW.items()} | {"prompt": ["x" * (MAX_LINE_BYTES + 1)]}), p
        ),
        "row 1: prompt is 16,777,217 bytes, over the 16,777,216 bytes it may be",
    ),
}


def _normal_files(folder: Path) -> dict[str, Path]:
    """Legitimate files the caps must let through: the widest allowed table, a 1 MB answer
    (a long chain of thought), JSON nested as deep as allowed, the most options."""
    csv = folder / "normal.csv"
    names = [*ROW, *(f"extra{i}" for i in range(MAX_TABLE_COLUMNS - len(ROW)))]
    csv.write_text(",".join(names) + "\n" + "m,mmlu_anatomy,n1,1" + ",x" * (len(names) - 4) + "\n")
    jsonl = folder / "normal.jsonl"
    _jsonl(
        jsonl,
        {**ROW, "sample_id": "n2", "response": "think " * 200_000},
        {**ROW, "sample_id": "n3", "num_choices": 32_767},
    )
    deep = folder / "deep-ok.jsonl"
    deep.write_text(json.dumps({**ROW, "sample_id": "n4"})[:-1] + f', "extra": {_deep(63)}}}\n')
    parquet = folder / "normal.parquet"
    pq.write_table(pa.table({k: [v] for k, v in {**ROW, "sample_id": "n5"}.items()}), parquet)
    return {"csv": csv, "jsonl": jsonl, "deep": deep, "parquet": parquet}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    written = {}
    for name, (write, _) in HOSTILE.items():
        write(folder / name)
        written[name] = folder / name
    return written | _normal_files(folder)


def _results(cli: Cli) -> list[tuple]:
    return cli.contents()["results"]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_cli_refuses_each_with_one_line(files, tmp_path, name):
    cli = Cli(tmp_path / "cli.duckdb")
    cli("import", "table", files["csv"])
    before = _results(cli)
    refused = cli("import", "table", files[name], ok=False)
    assert refused.exit_code == 2
    assert refused.stderr.count("\n") == 1, refused.stderr[:500]
    assert refused.stderr.startswith(f"error: {name}: {HOSTILE[name][1]}"), refused.stderr[:500]
    assert refused.stderr.endswith("(nothing was imported)\n")
    assert len(refused.stderr) < 400
    assert _results(cli) == before


def test_the_cli_imports_the_normal_files_beside_them(files, tmp_path):
    cli = Cli(tmp_path / "cli.duckdb")
    for name in ("csv", "jsonl", "deep", "parquet"):
        assert "imported" in cli("import", "table", files[name]).stdout
    assert len(_results(cli)) == 5


# ------------------------------------------------------------------------------ the app


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _zeros_zip(path: Path, megabytes: int) -> Path:
    """A zip bomb: ``megabytes`` MiB of zeros, about 1,000 times smaller, streamed in."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open("zeros.csv", "w", force_zip64=True) as member:
            for _ in range(megabytes):
                member.write(bytes(1 << 20))
    return path


class _Zeros:
    """``left`` zero bytes, read as a file (no more in memory than a read asks for)."""

    def __init__(self, left: int):
        self.left = left

    def read(self, size: int = -1) -> bytes:
        n = self.left if size < 0 else min(size, self.left)
        self.left -= n
        return bytes(n)


def _zeros_tar_gz(path: Path, megabytes: int) -> Path:
    with tarfile.open(path, "w:gz", compresslevel=9) as tf:
        info = tarfile.TarInfo("zeros.csv")
        info.size = megabytes << 20
        tf.addfile(info, _Zeros(info.size))
    return path


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("app")
    db = folder / "app.duckdb"
    token = Cli(db)("token", "create", "submitter", "--role", "submit").stdout.strip()
    server = Server(db, env={**os.environ, "FORGETMAP_WARM_START": "false"})
    client = httpx.Client(
        base_url=server.url, timeout=120, headers={"Authorization": f"Bearer {token}"}
    )
    yield {"server": server, "db": db, "client": client}
    client.close()
    server.stop()


def _upload(app, path: Path, name: str | None = None) -> dict:
    client = app["client"]
    reply = client.post(
        "/api/imports",
        params={"kind": "table", "filename": name or path.name},
        content=path.read_bytes(),
    )
    assert reply.status_code == 202, reply.text
    return finished_job(client, reply.json()["id"], timeout=120)


def _staged(app) -> list[Path]:
    """What is left in the staging folder once the import thread has removed the job's upload
    (just after it writes the job's end)."""
    staging = staging_folder(app["db"])
    for _ in range(50):
        left = list(staging.rglob("*")) if staging.exists() else []
        if not left:
            break
        time.sleep(0.1)
    return left


def _failed_with(job: dict, text: str) -> None:
    assert job["status"] == "failed", job
    error = job["error"]
    assert "\n" not in error and len(error) < 400, error[:500]
    assert text in error, error
    assert error.endswith("(nothing was imported)")
    assert "Traceback" not in error and "Exception" not in error


@pytest.mark.parametrize(
    "name",
    ["very-wide.csv", "zeros.csv", "long.jsonl", "deep.jsonl", "seed.jsonl", "wide.parquet"],
)
def test_the_app_refuses_each_upload_with_one_line(app, files, name):
    job = _upload(app, files[name])
    _failed_with(job, f"{name}: {HOSTILE[name][1]}")
    assert _staged(app) == []


def test_archive_bombs_are_refused_as_they_unpack_and_leave_nothing(app, tmp_path):
    bomb = _zeros_zip(tmp_path / "bomb.zip", 64)
    assert (64 << 20) > 200 * bomb.stat().st_size  # deflate: about 1,000x
    job = _upload(app, bomb)
    _failed_with(
        job, f"unpacks to more than {MAX_UNPACK_RATIO} times its own {bomb.stat().st_size:,} bytes"
    )
    assert _staged(app) == []
    gz = _zeros_tar_gz(tmp_path / "bomb.tar.gz", 64)
    job = _upload(app, gz)
    _failed_with(job, f"unpacks to more than {MAX_UNPACK_RATIO} times its own")
    assert _staged(app) == []


def test_a_compressible_archive_under_the_ratio_still_imports(app, tmp_path):
    # a results table with repeated names compresses well, but far less than 200x
    rows = "".join(f"m,mmlu_anatomy,z{i},{i % 2}\n" for i in range(50_000))
    data = (CSV_HEADER + "\n" + rows).encode()
    archive = _zip(tmp_path / "results.zip", {"results.csv": data})
    assert len(data) > 5 * archive.stat().st_size
    job = _upload(app, archive)
    assert job["status"] == "done", job
    assert job["request"]["lines"][0].startswith("imported 50,000 new rows")
    assert _staged(app) == []


def test_the_app_imports_the_normal_files_beside_them(app, files):
    for name in ("csv", "jsonl", "deep", "parquet"):
        job = _upload(app, files[name])
        assert job["status"] == "done", job
    assert _staged(app) == []


def test_nothing_the_refused_uploads_held_was_stored(app):
    """Run last of the app's tests: the database holds the normal files' rows and no other."""
    app["server"].stop()
    stored = Cli(app["db"]).contents()["results"]
    assert len(stored) == 50_000 + 5  # the compressible archive's, then the four normal files'


def test_the_default_unpack_limit_is_8_gib(monkeypatch):
    monkeypatch.delenv("FORGETMAP_IMPORT_MAX_UNPACKED_BYTES", raising=False)
    assert WebSettings().import_max_unpacked_bytes == 8 << 30
