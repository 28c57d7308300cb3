"""Model family and size read off a checkpoint name (pure; a best guess the user can override).

"Qwen/Qwen2.5-7B-Instruct" -> ("Qwen2.5", 7e9); "meta-llama/Llama-3.1-8B" -> ("Llama-3.1", 8e9);
"OLMo-2-1124-13B-DPO" -> ("OLMo-2", 13e9); "SmolLM2-360M" -> ("SmolLM2", 3.6e8). Names without a
size give (family or None, None).
"""

from __future__ import annotations

import re
from typing import Any

_SIZE = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)\s*([BbMm])(?![A-Za-z])")
_SCALE = {"b": 1e9, "m": 1e6}


def infer_family_and_size(name: str) -> tuple[str | None, int | None]:
    base = name.rsplit("/", 1)[-1]
    match = _SIZE.search(base.replace("_", "-"))
    size = int(float(match.group(1)) * _SCALE[match.group(2).lower()]) if match else None
    family_part = base[: match.start()] if match else base
    # drop date-like or trailing separators: "OLMo-2-1124-" -> "OLMo-2"
    family_part = re.sub(r"[-_ ]\d{4}[-_ ]*$", "", family_part).strip("-_ ")
    if not match:
        family_part = re.split(
            r"[-_](?:instruct|chat|base|sft|dpo|rl|it)\b", family_part, flags=re.I
        )[0]
    return (family_part or None), size


def pair_label(pair: dict[str, Any]) -> str:
    """What a pair is called on pages and in tables: its label, else ``base → post``."""
    return pair["label"] or f"{pair['base']} → {pair['post']}"
