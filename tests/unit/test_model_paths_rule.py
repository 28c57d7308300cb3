"""The one model-path rule (forgetmap.runtime.paths.check_model_path and ModelRules): absolute paths
resolved inside a root, relative paths looked up under the roots, hub ids only where allowed and
never when they name a folder of the working directory. Every refusal is one line naming the roots.
The entry points that use it are tested in tests/integration/test_model_paths.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from forgetmap.runtime.paths import ModelPathError, ModelRules, check_model_path, is_hub_id


@pytest.fixture
def disk(tmp_path) -> dict[str, Path]:
    """Two roots, a folder outside them, symlinks in and out, and a working directory holding
    ``tmp/x`` and ``etc/ssl`` (what transformers would load for those "hub ids")."""
    root, second, outside, cwd = (tmp_path / n for n in ("models", "more", "outside", "cwd"))
    for folder in (
        root / "ok",
        root / "org" / "local",
        root / "both",
        second / "both",
        second / "two",
        root / "run" / "checkpoint-10",
        root / "run" / "checkpoint-20",
        outside,
        cwd / "tmp" / "x",
        cwd / "etc" / "ssl",
    ):
        folder.mkdir(parents=True)
    (root / "link").symlink_to(outside)  # inside a root, pointing out of it
    (root / "alias").symlink_to(root / "ok")  # inside a root, pointing inside it
    return {"root": root, "second": second, "outside": outside, "cwd": cwd}


def _refused(path: str, disk: dict, *, allow_hub: bool = True, roots=None, cwd=None) -> str:
    roots = [disk["root"], disk["second"]] if roots is None else roots
    with pytest.raises(ModelPathError) as refused:
        check_model_path(path, roots, allow_hub=allow_hub, cwd=cwd or disk["cwd"])
    message = str(refused.value)
    assert "\n" not in message  # one line
    return message


@pytest.mark.parametrize(
    "path",
    [
        "/etc",
        "root/../..",
        "../models/ok",
        "ok/../../outside",
        "~/x",
        "{root}/../outside",
        "{root}/ok/../../outside",
        "{root}-evil/ok",
        "{root}/link",
        "{root}/link/deeper",
        "link",
    ],
)
@pytest.mark.parametrize("allow_hub", [True, False])
def test_paths_out_of_the_roots_are_refused(disk, path, allow_hub):
    message = _refused(path.format(root=disk["root"]), disk, allow_hub=allow_hub)
    assert "outside the configured roots" in message
    assert str(disk["root"].resolve()) in message and "FORGETMAP_MODEL_ROOTS" in message


@pytest.mark.parametrize("allow_hub", [True, False])
def test_a_hub_shaped_name_of_a_folder_in_the_working_directory_is_never_a_hub_id(disk, allow_hub):
    message = _refused("tmp/x", disk, allow_hub=allow_hub)
    assert f"names {disk['cwd'] / 'tmp' / 'x'} in the working directory" in message
    assert str(disk["root"].resolve()) in message


def test_hub_ids_are_refused_where_the_configuration_turns_them_off(disk):
    for path in ("etc/ssl", "Qwen/Qwen2.5-7B-Instruct"):  # no such folder in the cwd here
        message = _refused(path, disk, allow_hub=False, cwd=disk["outside"])
        assert "Hugging Face ids are off (FORGETMAP_ALLOW_HUB_MODELS=false)" in message
        assert str(disk["root"].resolve()) in message
    # with them on, etc/ssl is refused only where ./etc/ssl exists
    assert "working directory" in _refused("etc/ssl", disk)


def test_other_refusals_say_what_to_give(disk):
    assert "no model folder 'nothere' under the model roots" in _refused("nothere", disk)
    assert "no model roots configured" in _refused(str(disk["root"] / "ok"), disk, roots=[])
    assert "no model roots configured" in _refused("ok", disk, roots=[])
    assert "is empty" in _refused("  ", disk)
    assert "holds a NUL" in _refused("ok\0", disk)


def test_folders_under_the_roots_load_absolute_or_relative(disk):
    root, second = disk["root"].resolve(), disk["second"].resolve()
    roots = [disk["root"], disk["second"]]

    def check(path: str, **kw) -> str:
        return check_model_path(path, roots, cwd=disk["cwd"], **kw)

    assert check(str(disk["root"] / "ok")) == str(root / "ok")
    assert check(str(disk["root"] / "run" / ".." / "ok")) == str(root / "ok")  # inside after all
    assert check(str(disk["root"] / "not-here-yet")) == str(root / "not-here-yet")  # worker's disk
    assert check("ok") == str(root / "ok")
    assert check("two") == str(second / "two")  # the first root that holds it
    assert check("both") == str(root / "both")
    assert check("alias") == str(root / "ok")  # a symlink that stays inside
    assert check("run/../ok") == str(root / "ok")
    # org/name that a root holds is that folder, hub ids on or off
    assert check("org/local", allow_hub=False) == str(root / "org" / "local")
    assert check("org/local") == str(root / "org" / "local")


def test_hub_ids_load_where_allowed(disk):
    for hub_id in ("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B", "etc/passwd"):
        assert check_model_path(hub_id, [disk["root"]], cwd=disk["cwd"]) == hub_id
    assert check_model_path("org/m", [], allow_hub=True, cwd=disk["cwd"]) == "org/m"  # no roots


@pytest.mark.parametrize(
    ("text", "hub"),
    [
        ("Qwen/Qwen2.5-7B-Instruct", True),
        ("a/b", True),
        ("a/..", False),
        ("../b", False),
        ("a--b/c", False),
        ("a/b/c", False),
        ("-a/b", False),
        ("a/b.", False),
        ("a", False),
        ("/a/b", False),
        ("a\\b/c", False),
        ("a/" + "b" * 97, False),
    ],
)
def test_hub_id_shape(text, hub):
    assert is_hub_id(text) is hub


def test_checkpoint_folders_and_globs_stay_inside(disk, monkeypatch):
    monkeypatch.chdir(disk["cwd"])
    rules = ModelRules(roots=(disk["root"], disk["second"]), allow_hub=True)
    root = disk["root"].resolve()
    steps = [str(root / "run" / "checkpoint-10"), str(root / "run" / "checkpoint-20")]
    assert rules.folders(str(disk["root"] / "run" / "checkpoint-*")) == steps
    assert rules.folders("run/checkpoint-*") == steps  # relative: under the roots
    assert rules.folders("run/nothing-*") == []
    assert rules.folders("ok") == [str(root / "ok")]
    for pattern in ("/etc/*", str(disk["root"] / "*" / ".." / ".." / "*"), "../*/x*", "~/*"):
        with pytest.raises(ModelPathError, match="outside the configured roots"):
            rules.folders(pattern)
    with pytest.raises(ModelPathError, match="outside the configured roots"):
        rules.folders(str(disk["root"] / "lin*"))  # matches the symlink out
    with pytest.raises(ModelPathError, match="Hugging Face ids are off"):
        rules.check_folder("org/name")  # a checkpoint is a folder, never a hub id
    with pytest.raises(ModelPathError, match="no model roots configured"):
        ModelRules().folders("run/*")
