"""The import's options, checked once for the command line and the upload route; the tar the
client streams for a folder; what an archive member may name."""

from __future__ import annotations

import io
import tarfile

import pytest
from forgetmap.contract.imports import import_options
from forgetmap.core.errors import InputError
from forgetmap.services.import_upload import upload_body
from forgetmap.services.imports import archive_kind, member_path, upload_name


def test_each_kind_takes_the_commands_options():
    assert import_options("lm-eval", model="m").seed == 0  # lm-eval's default seed
    assert import_options("lighteval").seed is None  # each run's own
    options = import_options("lm-eval", model="m", metric="acc", filters=["gsm8k=strict-match", ""])
    assert options.importer_kwargs() == {
        "model": "m",
        "metric": "acc",
        "filter_name": ["gsm8k=strict-match"],
        "seed": 0,
        "latest": False,
    }
    assert ("filter", "gsm8k=strict-match") in options.as_query()
    assert import_options("table", model="  ").model is None  # empty: not given


@pytest.mark.parametrize(
    ("kind", "options", "message"),
    [
        ("csv", {}, "unknown import kind 'csv'; use one of table, lm-eval, lighteval"),
        ("table", {"seed": 1}, "import table takes no --seed (only lm-eval and lighteval)"),
        ("table", {"metric": "acc"}, "import table takes no --metric (only lm-eval and lighteval)"),
        ("lighteval", {"filters": ["x"]}, "import lighteval takes no --filter (only lm-eval)"),
        (
            "lm-eval",
            {"latest": True, "model": "m"},
            "import lm-eval takes no --latest (only lighteval)",
        ),
        ("lm-eval", {}, "import lm-eval needs --model NAME (the files do not name the model)"),
        ("lighteval", {"seed": 2**31}, "--seed must be between"),
        ("table", {"model": "a\nb"}, "--model must be at most 200 printable characters"),
    ],
)
def test_options_a_kind_does_not_take_are_refused_in_the_commands_words(kind, options, message):
    with pytest.raises(InputError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        import_options(kind, **options)


def test_the_cli_refuses_with_the_same_line(cli, tmp_path):
    (tmp_path / "t.csv").write_text("model,benchmark,sample_id,correct\n")
    result = cli(
        "import", "lighteval", tmp_path / "t.csv", "--model", "m", "--metric", "x\ty", ok=False
    )
    assert (
        result.stderr
        == "error: --metric must be at most 200 printable characters (nothing was imported)\n"
    )


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/../../x", "a\\b", "a\0b"])
def test_members_that_leave_the_folder_are_refused(name):
    with pytest.raises(InputError):
        member_path(name)


def test_member_paths_stay_inside():
    assert str(member_path("./details/org/m/x.parquet")) == "details/org/m/x.parquet"
    assert member_path("./") is None


@pytest.mark.parametrize("name", ["", "..", "a/b.csv", "x" * 256, "a\nb"])
def test_upload_names_are_plain_file_names(name):
    with pytest.raises(InputError, match="is not a file name"):
        upload_name(name)


def test_a_folder_is_sent_as_a_tar_of_its_files_with_its_size_known(tmp_path):
    tree = tmp_path / "out"
    (tree / "details" / "org" / "m").mkdir(parents=True)
    (tree / "details" / "org" / "m" / "a.parquet").write_bytes(b"A" * 700)
    long = "d" * 120
    (tree / long).mkdir()
    (tree / long / "b.json").write_text("{}")
    (tree / "link").symlink_to(tree / long / "b.json")  # left out: the app refuses links
    name, size, chunks = upload_body(tree)
    body = b"".join(chunks)
    assert name == "out.tar" and size == len(body)
    with tarfile.open(fileobj=io.BytesIO(body)) as tf:
        got = {m.name: tf.extractfile(m).read() for m in tf}
    assert got == {"details/org/m/a.parquet": b"A" * 700, f"{long}/b.json": b"{}"}
    path = tmp_path / "body"
    path.write_bytes(body)
    assert archive_kind(path) == "tar"
