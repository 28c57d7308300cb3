"""Models in huggingface_hub's own cache layout, as `hf_hub_download` leaves them
(``<HF_HUB_CACHE>/models--<org>--<name>/refs/main`` names the commit whose files are in
``snapshots/<commit>/``), for tests that read the cache offline: model cards (pair suggestions)
and the files that give a model's size."""

from __future__ import annotations

import json
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def use_cache(monkeypatch, cache: Path) -> None:
    """Point huggingface_hub at ``cache``, offline: the variables for a server the test starts,
    and the constant an already imported huggingface_hub read from them when it loaded."""
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))


def snapshot(cache: Path, repo: str) -> Path:
    """The snapshot folder of ``repo``'s main branch (made, with its ref, on first use)."""
    folder = cache / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text(COMMIT)
    files = folder / "snapshots" / COMMIT
    files.mkdir(parents=True, exist_ok=True)
    return files


def write_card(cache: Path, repo: str, base_model) -> None:
    """A model card whose metadata names ``base_model`` (a name or a list)."""
    (snapshot(cache, repo) / "README.md").write_text(
        f"---\nbase_model: {json.dumps(base_model)}\nlicense: mit\n---\n# {repo}\n"
    )


def write_json(cache: Path, repo: str, filename: str, data: dict) -> None:
    """A JSON file of the model's snapshot (config.json, model.safetensors.index.json)."""
    (snapshot(cache, repo) / filename).write_text(json.dumps(data))
