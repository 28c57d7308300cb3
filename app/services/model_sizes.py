"""Model sizes read from the local Hugging Face cache, for models whose name gives none.

Names stay first (``forgetmap.core.naming``, at import) and ``forgetmap model set NAME --size`` wins
over everything; this fills only the sizes still unknown. Nothing is fetched: files are read with
``hf_hub_download(..., local_files_only=True)``, so ``HF_HUB_CACHE``/``HF_HOME`` apply and a
model that is not cached stays unknown. The first of these rules that applies gives the count:

1. ``model.safetensors.index.json`` ``metadata.total_parameters``: the model's own count, which
   transformers' ``save_pretrained`` writes (``num_parameters()``; a tied weight once).
2. The safetensors headers: the elements of every stored tensor, summed (a tied weight is stored
   once). A single-file model's ``model.safetensors``, or every shard the index names when all
   are cached. Only each file's header is read (8 bytes of length, then JSON), not the weights.
3. ``metadata.total_size`` of the index (bytes) divided by the bytes of ``config.json``'s
   ``torch_dtype`` (``dtype`` in transformers 5): exact when every tensor is stored in that
   dtype, as a checkpoint saved in one dtype is; a total that does not divide is not used.

A quantized checkpoint (``quantization_config`` in ``config.json``) packs several weights into
one stored element, so none of these counts its parameters: it stays unknown (set it with
``model set``). The model card is not read: its metadata has no field for a parameter count
(``model-index`` holds evaluation results).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

from forgetmap.db import Store, queries
from forgetmap.db.ingest import set_model_meta

INDEX = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
CONFIG = "config.json"
MAX_HEADER_BYTES = 100 << 20  # safetensors' own limit on a header

DTYPE_BYTES = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int8": 1,
    "uint8": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}
DTYPE_SHORT = {"float64": "fp64", "float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


@dataclass(frozen=True)
class HubSize:
    """What the cache says of a model's size: ``params`` with the rule that gave it (``how``),
    or None with why not (``how``)."""

    params: int | None
    how: str


class _NotCached(Exception):
    """A file the cache does not hold (or a name that is not a hub id)."""


def _cached_file(model: str, filename: str) -> Path:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HFValidationError

    try:
        return Path(hf_hub_download(model, filename, local_files_only=True))
    except (OSError, ValueError, HFValidationError) as exc:  # not cached, or not a hub id
        raise _NotCached(filename) from exc


def _json_file(model: str, filename: str) -> dict | None:
    """A cached JSON file's object; None when not cached or not a JSON object."""
    try:
        data = json.loads(_cached_file(model, filename).read_text())
    except (_NotCached, ValueError):
        return None
    return data if isinstance(data, dict) else None


def safetensors_elements(path: Path) -> int:
    """The elements of every tensor in a safetensors file, read from its header alone (ValueError
    for a file that is not one)."""
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ValueError(f"{path.name} is too short for a safetensors file")
        (length,) = struct.unpack("<Q", head)
        if length > MAX_HEADER_BYTES:
            raise ValueError(f"{path.name}: a header of {length:,} bytes is not safetensors'")
        header = json.loads(f.read(length))
    if not isinstance(header, dict):
        raise ValueError(f"{path.name}: the header is not a JSON object")
    total = 0
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        elements = 1
        for dim in tensor["shape"]:
            elements *= int(dim)
        total += elements
    return total


def _weight_files(index: dict | None) -> list[str]:
    """The safetensors files holding the weights: the shards the index names, else the single
    file."""
    if index is None:
        return [SINGLE_FILE]
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict):
        return []
    return sorted({f for f in weight_map.values() if isinstance(f, str)})


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def size_from_hub_cache(model: str) -> HubSize:
    """The parameter count of ``model`` (a hub id, ``org/name``) from the local cache, by the
    first rule of the module's docstring that applies."""
    if "/" not in model:
        return HubSize(None, "not a hub id (org/name)")
    try:
        import huggingface_hub  # noqa: F401 - only to say so when it is missing
    except ImportError:
        return HubSize(None, "huggingface_hub is not installed")
    config = _json_file(model, CONFIG)
    index = _json_file(model, INDEX)
    if (config or {}).get("quantization_config"):
        return HubSize(None, "a quantized checkpoint: its stored elements are not its parameters")
    metadata = (index or {}).get("metadata") or {}
    total_parameters = metadata.get("total_parameters")
    if isinstance(total_parameters, int) and total_parameters > 0:
        return HubSize(total_parameters, "safetensors index, total_parameters")
    files = _weight_files(index)
    try:
        if files:
            counted = sum(safetensors_elements(_cached_file(model, f)) for f in files)
            return HubSize(counted, f"safetensors headers, {_plural(len(files), 'file')}")
    except (_NotCached, ValueError, KeyError, TypeError):
        pass  # a shard not cached, or a header that is not safetensors': the next rule
    if index is None:
        if config is None:
            return HubSize(None, "not in the local hub cache")
        return HubSize(None, f"no {INDEX} or {SINGLE_FILE} in the local hub cache")
    total_size = metadata.get("total_size")
    dtype = (config or {}).get("torch_dtype") or (config or {}).get("dtype")
    if not isinstance(total_size, int) or total_size <= 0:
        return HubSize(
            None, "the safetensors index gives no total_size, and not every shard is cached"
        )
    if dtype not in DTYPE_BYTES:
        return HubSize(None, f"no dtype in config.json to divide total_size by (got {dtype!r})")
    params, rest = divmod(total_size, DTYPE_BYTES[dtype])
    if rest:
        return HubSize(None, f"total_size, {total_size:,} bytes, is no whole number of {dtype}")
    return HubSize(params, f"safetensors index, {DTYPE_SHORT.get(dtype, dtype)}")


@dataclass(frozen=True)
class ModelSize:
    """A stored model's size (None: unknown) and, for an unknown one, what the cache says."""

    name: str
    size_params: int | None
    hub: HubSize | None


def model_sizes(store: Store) -> list[ModelSize]:
    """Every stored model by name, the unknown sizes looked up in the local hub cache."""
    with store.read() as conn:
        models = queries.models(conn)
    return [
        ModelSize(
            m["name"],
            m["size_params"],
            size_from_hub_cache(m["name"]) if m["size_params"] is None else None,
        )
        for m in models
    ]


def fill_sizes_from_hub(store: Store) -> list[ModelSize]:
    """Set every unknown size the local hub cache gives (one transaction); answers the models
    that were unknown, each with what the cache said. A size set meanwhile is kept."""
    unknown = [m for m in model_sizes(store) if m.size_params is None]
    found = {m.name: m.hub.params for m in unknown if m.hub is not None and m.hub.params}
    if found:
        with store.transaction() as conn:
            still_unknown = {m["name"] for m in queries.models(conn) if m["size_params"] is None}
            for name, params in found.items():
                if name in still_unknown:
                    set_model_meta(conn, name, family=None, size_params=params)
    return unknown


def hub_cache_folder() -> str | None:
    """Where huggingface_hub looks for its cache in this process (None when not installed)."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return None
    return constants.HF_HUB_CACHE
