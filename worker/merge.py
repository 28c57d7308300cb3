"""Merged checkpoints for the merge path (issue 54): a base and its post-trained model mixed by
mergekit, as the paper's release merges them (linear and SLERP), and the uniform soup of a run's
last checkpoints.

``mix`` is the post model's share: 0 is the base, 1 the post model. A linear merge is
(1 - mix) * base + mix * post, tensor by tensor (mergekit's ``linear`` with those weights, not
normalized); SLERP interpolates each tensor along the arc from the base to the post model at
t = mix (mergekit's ``slerp``, the base as its ``base_model``); TIES and DARE add ``mix`` times
the post model's task vector (post - base) to the base after keeping a ``density`` share of it:
its largest entries by magnitude (``ties``), or a random share rescaled to the whole task
vector's L1 norm (``dare_ties``, mergekit's seeded random drop); a soup is the plain mean of
its checkpoints (``linear``, equal weights, normalized).

A merge is built aside (``.NAME.building`` beside its final folder) and renamed into place only
when mergekit has written all of it, so a worker that dies half-way leaves no model that looks
whole; the tokenizer of the first model is copied (or of ``tokenizer_from``). Nothing is
loaded with remote code.

Requires the ``merge`` extra (``pip install forgetmap[merge]``: mergekit, LGPL, CPU is enough).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

MergeMethod = Literal["linear", "slerp", "ties", "dare_ties"]
MERGE_METHODS: tuple[MergeMethod, ...] = ("linear", "slerp", "ties", "dare_ties")


def pair_config(
    method: MergeMethod,
    base: str,
    post: str,
    mix: float,
    dtype: str = "float32",
    density: float = 1.0,
) -> dict[str, Any]:
    """The mergekit configuration of one mix of a pair (a plain dict, as its YAML reads);
    ``density``: the share of the post model's task vector TIES and DARE keep."""
    if not 0.0 <= mix <= 1.0:
        raise ValueError(f"mix is the post model's share, from 0 to 1; got {mix}")
    if method in ("ties", "dare_ties"):
        if not 0.0 < density <= 1.0:
            raise ValueError(f"density is the share of the task vector kept, (0, 1]; got {density}")
        return {
            "merge_method": method,
            "base_model": base,
            "models": [{"model": post, "parameters": {"weight": mix, "density": density}}],
            # normalizing would divide the one weight away: mix is the task vector's scale
            "parameters": {"normalize": False},
            "dtype": dtype,
        }
    if method == "linear":
        return {
            "merge_method": "linear",
            "models": [
                {"model": base, "parameters": {"weight": 1.0 - mix}},
                {"model": post, "parameters": {"weight": mix}},
            ],
            "parameters": {"normalize": False},
            "dtype": dtype,
        }
    if method == "slerp":
        return {
            "merge_method": "slerp",
            "base_model": base,
            "models": [{"model": base}, {"model": post}],
            "parameters": {"t": mix},
            "dtype": dtype,
        }
    raise ValueError(f"merge method must be one of {', '.join(MERGE_METHODS)}, got {method!r}")


def soup_config(checkpoints: Sequence[str], dtype: str = "float32") -> dict[str, Any]:
    """The mergekit configuration of the uniform average of ``checkpoints`` (two or more)."""
    if len(checkpoints) < 2:
        raise ValueError("a soup needs at least two checkpoints")
    return {
        "merge_method": "linear",
        "models": [{"model": path, "parameters": {"weight": 1.0}} for path in checkpoints],
        "parameters": {"normalize": True},
        "dtype": dtype,
    }


def disk_needed(config: dict[str, Any]) -> int:
    """Bytes a merge of ``config`` writes: one checkpoint, as large as its first model's weight
    files (every model of a merge has the same tensors; ``dtype`` may only shrink them)."""
    first = Path(config["models"][0]["model"])
    return sum(f.stat().st_size for f in first.glob("*.safetensors")) + sum(
        f.stat().st_size for f in first.glob("*.bin")
    )


def check_disk(out: Path, needed: int) -> None:
    """OSError, saying how much is missing, when the disk ``out`` goes to has less free space
    than ``needed`` bytes and a tenth more (a merge is never started to fail half-way)."""
    folder = out.parent
    free = shutil.disk_usage(folder).free
    if free < needed * 1.1:
        raise OSError(
            f"not enough disk for a merge under {folder}: it needs {needed / 1e9:.2f} GB and a "
            f"tenth more, {free / 1e9:.2f} GB are free; free space there or point the merge "
            "elsewhere"
        )


TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
)


def build_merge(
    config: dict[str, Any],
    out: str | Path,
    *,
    threads: int | None = None,
    tokenizer_from: str | Path | None = None,
    notes: Mapping[str, str] | None = None,
) -> Path:
    """Run mergekit on ``config`` into ``out`` (built aside, then renamed); returns ``out``.
    Refuses to overwrite an existing folder, and to start without disk for one checkpoint
    (``check_disk``). ``tokenizer_from``: a folder whose tokenizer files (its chat template
    with them) replace the ones mergekit copied, so that a merge is prompted as the post
    model is (the models of a merge share one vocabulary). ``notes``: files (name -> text)
    written beside the weights before the rename, so a whole merge always carries them."""
    from mergekit.config import MergeConfiguration
    from mergekit.merge import run_merge
    from mergekit.options import MergeOptions

    final = Path(out)
    if final.exists():
        raise FileExistsError(f"{final} exists: a merge is never written over a model")
    staging = final.with_name(f".{final.name}.building")
    if staging.exists():
        shutil.rmtree(staging)
    check_disk(final, disk_needed(config))
    options = MergeOptions(
        copy_tokenizer=True,
        write_model_card=False,
        trust_remote_code=False,
        random_seed=0,
        quiet=True,
        num_threads=threads,
    )
    try:
        run_merge(MergeConfiguration.model_validate(config), str(staging), options)
        if tokenizer_from is not None:
            for name in TOKENIZER_FILES:
                source = Path(tokenizer_from) / name
                if source.is_file():
                    shutil.copyfile(source, staging / name)
        for name, text in (notes or {}).items():
            (staging / name).write_text(text)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    staging.rename(final)
    return final
