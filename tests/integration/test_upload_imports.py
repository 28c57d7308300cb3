"""Imports through the app: files uploaded to a real `forgetmap serve` (``POST /api/imports``)
give the same map as the command line's import of the same files; a bad file, an archive that
leaves its folder or holds a link, an upload over the limit, a token without role submit are
refused, and leave the database as it was."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import httpx
import pytest
from forgetmap.contract.imports import ImportOptions, import_options
from forgetmap.core.display import binary_size
from forgetmap.db import open_store
from forgetmap.demo.layouts.lm_eval import write_lm_eval_samples
from forgetmap.demo.layouts.paper import make_items, write_run
from forgetmap.services.import_upload import ImportFailed, upload_import

from tests.support.app_client import finished_job
from tests.support.cli import Cli
from tests.support.server import Server
from tests.support.store_contents import table_contents
from tests.support.tables import BASE, POST, rows_for, write_csv

LIMIT = 1_000_000  # bytes an upload may have here (FORGETMAP_IMPORT_MAX_BYTES)
TASK = "community|bbh_reasoning_letter:navigate|0"
ITEMS = make_items("navigate", 6)


def _files(root: Path) -> dict[str, Path]:
    """A table of two models, an lm-eval samples file per model, a lighteval tree of two."""
    table = write_csv(root / "pair.csv", rows_for("base", BASE) + rows_for("post", POST))
    lm_base = write_lm_eval_samples(root / "lm-base", "mmlu_anatomy", [1, 1, 1, 0, 0, 1, 1, 1])
    lm_post = write_lm_eval_samples(root / "lm-post", "mmlu_anatomy", [1, 0, 1, 0, 1, 1, 1, 1])
    tree = root / "lighteval-out"
    write_run(
        tree,
        "org/le-base",
        "2025-07-01T10-00-00.000001",
        {TASK: (ITEMS, [1, 1, 0, 0, 1, 0])},
        style="base",
        seed=0,
    )
    write_run(
        tree,
        "org/le-post",
        "2025-07-02T10-00-00.000001",
        {TASK: (ITEMS, [1, 0, 1, 0, 1, 1])},
        style="chat",
        seed=0,
    )
    return {"table": table, "lm_base": lm_base, "lm_post": lm_post, "tree": tree}


def _zip(folder: Path, to: Path) -> Path:
    with zipfile.ZipFile(to, "w") as zf:
        for path in sorted(folder.rglob("*")):
            zf.write(path, path.relative_to(folder).as_posix())
    return to


@pytest.fixture
def app(tmp_path, monkeypatch):
    """A served app with a submit and a read token; stops at the end of the test."""
    db = tmp_path / "app.duckdb"
    cli = Cli(db)
    tokens = {
        role: cli("token", "create", f"t-{role}", "--role", role).stdout.strip()
        for role in ("submit", "read")
    }
    monkeypatch.setenv("FORGETMAP_IMPORT_MAX_BYTES", str(LIMIT))
    server = Server(db)
    yield {"server": server, "db": db, "tokens": tokens, "cli": cli}
    if server.proc.poll() is None:
        server.stop()


def _client(app, role: str = "submit") -> httpx.Client:
    return httpx.Client(
        base_url=app["server"].url,
        timeout=60,
        headers={"Authorization": f"Bearer {app['tokens'][role]}"},
    )


def _post(client: httpx.Client, path: Path, **params) -> httpx.Response:
    params.setdefault("filename", path.name)
    return client.post("/api/imports", params=params, content=path.read_bytes())


def _import(client: httpx.Client, path: Path, **params) -> dict:
    reply = _post(client, path, **params)
    assert reply.status_code == 202, reply.text
    return finished_job(client, reply.json()["id"])


def _contents(db: Path) -> dict:
    store = open_store(db)
    try:
        with store.read() as conn:
            return table_contents(conn)
    finally:
        store.close()


def test_uploads_give_the_map_of_the_cli_import(app, tmp_path):
    files = _files(tmp_path)
    zipped = _zip(files["tree"], tmp_path / "lighteval-out.zip")
    with _client(app) as client:
        job = _import(client, files["table"], kind="table")
        assert job["status"] == "done" and job["kind"] == "import" and job["error"] is None
        assert job["request"]["lines"] == [
            "imported 56 new rows (0 already stored) for base, post on 2 benchmarks"
        ]
        for side in ("base", "post"):
            job = _import(client, files[f"lm_{side}"], kind="lm-eval", model=f"lm-{side}")
            assert job["status"] == "done", job
        job = _import(client, zipped, kind="lighteval")  # the tree names its two models
        assert job["status"] == "done", job
        assert job["request"]["result"]["models"] == ["org/le-base", "org/le-post"]
        for base, post in (
            ("base", "post"),
            ("lm-base", "lm-post"),
            ("org/le-base", "org/le-post"),
        ):
            reply = client.post("/api/pairs", json={"base": base, "post": post})
            assert reply.status_code == 201, reply.text
        served = client.get("/api/map", params={"level": "benchmark"}).json()
        assert client.get(f"/jobs/{job['id']}").text.count("imported 12 new rows") == 1

    cli = Cli(tmp_path / "cli.duckdb")
    cli("import", "table", files["table"])
    cli("import", "lm-eval", files["lm_base"], "--model", "lm-base")
    cli("import", "lm-eval", files["lm_post"], "--model", "lm-post")
    cli("import", "lighteval", files["tree"])
    for base, post in (("base", "post"), ("lm-base", "lm-post"), ("org/le-base", "org/le-post")):
        cli("pair", "add", base, post)
    local = cli.json("map", "--level", "benchmark", "--format", "json")
    assert len(served) == 6  # two benchmarks x two seeds, one, one
    assert served == local


def test_the_client_sends_a_folder_as_a_tar_and_follows_the_job(app, tmp_path):
    files = _files(tmp_path)
    heard = []
    options = import_options("lighteval", seed=3)
    job = upload_import(
        app["server"].url,
        app["tokens"]["submit"],
        files["tree"],
        options,
        on_progress=lambda *p: heard.append(p),
        poll_seconds=0.05,
    )
    assert job["status"] == "done"
    assert job["request"]["import"] == {
        "kind": "lighteval",
        "file": "lighteval-out.tar",
        "bytes": job["request"]["import"]["bytes"],
        "seed": 3,
    }
    assert job["request"]["lines"][0].startswith("imported 12 new rows (0 already stored)")
    with pytest.raises(
        ImportFailed, match=r"^samples_mmlu_anatomy_.*: missing columns .*\(nothing was imported\)$"
    ):
        upload_import(
            app["server"].url,
            app["tokens"]["submit"],
            files["lm_base"],
            import_options("table"),
            poll_seconds=0.05,
        )
    unchecked = ImportOptions("lm-eval")  # what the app checks again: no model
    with pytest.raises(
        ImportFailed, match=r"^import lm-eval needs --model NAME .*\(nothing was imported\)$"
    ):
        upload_import(app["server"].url, app["tokens"]["submit"], files["lm_base"], unchecked)
    assert all(stage in ("queued", "unpack", "read files", "write") for stage, _, _ in heard)


def test_a_bad_file_fails_the_job_with_the_cli_message_and_changes_nothing(app, tmp_path):
    files = _files(tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "model,benchmark,sample_id,correct\nm,mmlu_anatomy,q1,1\nm,mmlu_anatomy,q2,0.5\n"
    )
    with _client(app) as client:
        assert _import(client, files["table"], kind="table")["status"] == "done"
    app["server"].stop()
    before = _contents(app["db"])
    app["server"] = Server(app["db"])
    with _client(app) as client:
        job = _import(client, bad, kind="table", model="m")
        page = client.get(f"/jobs/{job['id']}").text
    app["server"].stop()
    after = _contents(app["db"])

    cli = Cli(tmp_path / "cli.duckdb")
    refused = cli("import", "table", bad, "--model", "m", ok=False)
    assert job["status"] == "failed"
    assert refused.stderr == f"error: {job['error']}\n"
    assert "0.5" in job["error"] and job["error"].endswith("(nothing was imported)")
    assert 'id="import-error"' in page
    jobs = after.pop("jobs")
    assert len(jobs) == len(before.pop("jobs")) + 1
    assert after == before  # nothing but the failed job's row
    assert not any((app["db"].parent / "app.duckdb.imports").iterdir())  # its upload removed


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for info, data in members:
            info.size = len(data) if data is not None else 0
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def test_archives_that_leave_their_folder_or_hold_links_are_refused(app, tmp_path):
    csv = write_csv(tmp_path / "t.csv", rows_for("base", BASE)).read_bytes()
    link = tarfile.TarInfo("details/link.parquet")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    hard = tarfile.TarInfo("t2.csv")
    hard.type, hard.linkname = tarfile.LNKTYPE, "t.csv"
    cases = {
        "up.tar.gz": (_tar([(tarfile.TarInfo("../t.csv"), csv)]), "points outside"),
        "abs.tar.gz": (_tar([(tarfile.TarInfo("/tmp/t.csv"), csv)]), "points outside"),
        "link.tar.gz": (_tar([(tarfile.TarInfo("t.csv"), csv), (link, None)]), "is a link"),
        "hard.tar.gz": (_tar([(tarfile.TarInfo("t.csv"), csv), (hard, None)]), "is a link"),
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("ok/t.csv", csv)
        zf.writestr("ok/../../t.csv", csv)
    cases["up.zip"] = (buf.getvalue(), "points outside")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = zipfile.ZipInfo("t.csv")
        info.external_attr = 0o120777 << 16  # a symbolic link, as zip -y stores it
        zf.writestr(info, "/etc/passwd")
    cases["link.zip"] = (buf.getvalue(), "is a link")
    with _client(app) as client:
        for name, (body, why) in cases.items():
            reply = client.post(
                "/api/imports", params={"kind": "table", "filename": name}, content=body
            )
            assert reply.status_code == 202, reply.text
            job = finished_job(client, reply.json()["id"])
            assert job["status"] == "failed" and why in job["error"], (name, job["error"])
            assert "/" + "tmp/" not in job["error"].replace("/tmp/t.csv", "")  # no app paths
        assert client.get("/api/models").json() == []
    assert not (tmp_path / "t.csv.unpacked").exists()
    staging = app["db"].parent / "app.duckdb.imports"
    assert not any(staging.iterdir())


def test_uploads_over_the_limit_are_refused_with_413(app):
    staging = app["db"].parent / "app.duckdb.imports"
    with _client(app) as client:
        declared = client.post(
            "/api/imports",
            params={"kind": "table", "filename": "big.csv"},
            content=b"x" * (LIMIT + 1),
        )
        assert declared.status_code == 413
        assert f"over the limit of {binary_size(LIMIT)}" in declared.json()["detail"]
        assert "FORGETMAP_IMPORT_MAX_BYTES" in declared.json()["detail"]

        def chunks():  # no Content-Length: counted as it comes
            for _ in range(40):
                yield b"y" * 50_000

        streamed = client.post(
            "/api/imports", params={"kind": "table", "filename": "big.csv"}, content=chunks()
        )
        assert streamed.status_code == 413
        assert client.get("/api/jobs").json() == []
    assert not staging.exists() or not any(staging.iterdir())


def test_roles_and_options_are_checked_before_the_upload(app, tmp_path):
    path = write_csv(tmp_path / "t.csv", rows_for("base", BASE))
    with _client(app, "read") as client:
        assert _post(client, path, kind="table").status_code == 403
    with httpx.Client(base_url=app["server"].url) as client:
        assert _post(client, path, kind="table").status_code == 401
    with _client(app) as client:
        refusals = {
            (("kind", "lm-eval"),): "import lm-eval needs --model NAME",
            (("kind", "table"), ("seed", "1")): "import table takes no --seed",
            (("kind", "table"), ("filename", "../t.csv")): "is not a file name",
            (("kind", "csv"),): "kind",
            (("kind", "lm-eval"), ("model", "m"), ("filter", "a=")): "give a filter name",
        }
        for params, message in refusals.items():
            reply = client.post(
                "/api/imports",
                params={"filename": "t.csv", **dict(params)},
                content=path.read_bytes(),
            )
            assert reply.status_code == 422 and message in reply.json()["detail"], reply.text
        assert client.get("/api/jobs").json() == []


def test_a_restart_settles_what_a_stopped_app_left(tmp_path):
    db = tmp_path / "app.duckdb"
    store = open_store(db)
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO jobs (kind, status, payload) VALUES "
            "('import', 'running', "
            '\'{"import": {"kind": "table", "file": "t.csv", "bytes": 3}}\')'
        )
    store.close()
    left = tmp_path / "app.duckdb.imports" / "upload-x"
    left.mkdir(parents=True)
    (left / "upload").write_bytes(b"abc")
    server = Server(db)
    try:
        [job] = httpx.get(server.url + "/api/jobs").json()
        detail = httpx.get(f"{server.url}/api/jobs/{job['id']}").json()
    finally:
        server.stop()
    assert job["status"] == "failed" and "the app stopped" in detail["error"]
    assert not left.exists()
