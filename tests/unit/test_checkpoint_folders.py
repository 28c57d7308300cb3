"""The watcher's scan: which checkpoint folders are complete, and their steps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from forgetmap.services.watch import Scanner, safetensors_complete, step_of
from safetensors.numpy import save_file


def _weights(path: Path, n: int = 1000) -> Path:
    save_file({"w": np.arange(n, dtype=np.float32), "b": np.ones(7, dtype=np.float32)}, str(path))
    return path


def _checkpoint(root: Path, name: str, *, config: bool = True, cut: int | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    weights = _weights(folder / "model.safetensors")
    if cut is not None:  # a save in progress: only the first bytes are on disk
        data = weights.read_bytes()
        weights.write_bytes(data[:cut])
    if config:
        (folder / "config.json").write_text("{}")
    return folder


def test_a_safetensors_file_is_complete_only_at_its_full_length(tmp_path):
    path = _weights(tmp_path / "m.safetensors")
    assert safetensors_complete(path)
    data = path.read_bytes()
    for cut in (0, 5, 8, 60, len(data) - 1):
        path.write_bytes(data[:cut])
        assert not safetensors_complete(path), cut
    path.write_bytes(data + b"\0")  # longer than the header says: not a finished save either
    assert not safetensors_complete(path)


def test_scan_skips_partial_saves_tmp_folders_and_folders_without_config(tmp_path):
    _checkpoint(tmp_path, "checkpoint-300")
    _checkpoint(tmp_path, "checkpoint-100")
    _checkpoint(tmp_path, "checkpoint-200", cut=500)
    _checkpoint(tmp_path, "tmp-checkpoint-400")
    _checkpoint(tmp_path, "checkpoint-500", config=False)
    (tmp_path / "runs").mkdir()  # TensorBoard logs, not a checkpoint
    found = Scanner(tmp_path).scan()
    assert [(c.step, c.path.name) for c in found] == [
        (100, "checkpoint-100"),
        (300, "checkpoint-300"),
    ]
    # the partial save completes: found at the next scan, placed by step
    folder = tmp_path / "checkpoint-200"
    _weights(folder / "model.safetensors")
    assert [c.step for c in Scanner(tmp_path).scan()] == [100, 200, 300]


def test_sharded_checkpoints_need_every_shard(tmp_path):
    folder = tmp_path / "checkpoint-7"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    _weights(folder / "model-00001-of-00002.safetensors")
    index = {
        "weight_map": {
            "w": "model-00001-of-00002.safetensors",
            "v": "model-00002-of-00002.safetensors",
        }
    }
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    assert Scanner(tmp_path).scan() == []
    _weights(folder / "model-00002-of-00002.safetensors")
    assert [c.step for c in Scanner(tmp_path).scan()] == [7]


def test_bin_weights_count_once_their_size_holds_over_two_scans(tmp_path):
    folder = tmp_path / "checkpoint-9"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "pytorch_model.bin").write_bytes(b"x" * 100)
    scanner = Scanner(tmp_path)
    assert scanner.scan() == []  # first sight: may still be growing
    (folder / "pytorch_model.bin").write_bytes(b"x" * 200)
    assert scanner.scan() == []  # it grew
    assert [c.step for c in scanner.scan()] == [9]


def test_a_marker_file_decides_when_given(tmp_path):
    folder = _checkpoint(tmp_path, "checkpoint-4")
    assert Scanner(tmp_path, marker="DONE").scan() == []
    (folder / "DONE").write_text("")
    assert [c.step for c in Scanner(tmp_path, marker="DONE").scan()] == [4]


def test_step_from_trainer_state_when_the_name_has_none(tmp_path):
    folder = _checkpoint(tmp_path, "final")
    assert step_of(folder) is None
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 1234}))
    assert step_of(folder) == 1234
    assert [(c.step, c.path.name) for c in Scanner(tmp_path).scan()] == [(1234, "final")]
