"""A checkpoint's identity, so that the same weights under two names are recognized."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

_HASHED_FILES = ("config.json", "generation_config.json", "tokenizer_config.json")


def model_fingerprint(path: str, revision: str | None = None) -> str:
    """sha256 over the config files and the (name, size) of every weight file of a local
    checkpoint, plus the first MiB of each weight file; ``hf:<id>@<revision>`` for hub ids."""
    local = Path(path)
    if not local.exists():
        return f"hf:{path}@{revision or 'main'}"
    digest = hashlib.sha256()
    for name in _HASHED_FILES:
        f = local / name
        if f.exists():
            digest.update(name.encode() + b"\0" + f.read_bytes())
    weights = sorted(p for p in local.iterdir() if p.suffix in (".safetensors", ".bin", ".pt"))
    digest.update(json.dumps([(p.name, p.stat().st_size) for p in weights]).encode())
    for p in weights:
        with p.open("rb") as fh:
            digest.update(fh.read(1 << 20))
    return "sha256:" + digest.hexdigest()[:32]
