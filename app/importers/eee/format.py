"""What reading and writing Every Eval Ever files share: the schema's version, how the two files
of a run are linked, the ``metadata`` keys forgetmap reads and writes, and the seed rule.

Read from the schema's own source (evaleval/every_eval_ever, ``eval.schema.json`` and
``instance_level_eval.schema.json``, version 0.3.0): an instance line holds no seed, no option
count and no category, and its ``metadata`` is a map of strings "about the sample"; forgetmap keeps
those values there under the keys below, which other writers use too (the schema's inspect
converter writes ``epoch``, its lm-eval converter ``doc_hash``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from forgetmap.core.errors import InputError

SCHEMA_VERSION = "0.3.0"
SAMPLES_SUFFIX = "_samples.jsonl"
"""An instance file is ``<uuid>_samples.jsonl``, beside its aggregate ``<uuid>.json``, which names
it in ``detailed_evaluation_results.file_path``."""

SEED = "seed"
EPOCH = "epoch"
NUM_CHOICES = "num_choices"
CATEGORY = "category"
DOC_HASH = "doc_hash"
ANSWER_STATUS = "answer_status"
"""An answer's status (``forgetmap.core.answer_status.STATUSES``), as forgetmap writes it."""
TRUNCATED = "truncated"
"""forgetmap's older ``"true"`` / ``"false"``: ``"true"`` reads as the status ``truncated``."""
STOP_REASON = "stop_reason"
CUT_OFF_STOPS = frozenset({"max_tokens", "model_length"})
"""inspect's stop reasons (``metadata.stop_reason``) for an answer the token limit cut off."""


def seed_of(metadata: Mapping[str, object], where: str) -> int:
    """The seed of an instance line: ``metadata.seed``; else ``metadata.epoch`` - 1 (inspect
    numbers a sample's repeats 1, 2, ...: its first epoch pairs with a one-run file's seed 0);
    else 0. A value that is not a whole number (or an epoch below 1) is refused."""
    for key, offset in ((SEED, 0), (EPOCH, 1)):
        value = metadata.get(key)
        if value is None or value == "":
            continue
        number = whole_number(value)
        if number is None or (key == EPOCH and number < 1):
            raise InputError(
                f"{where}: metadata.{key} is {value!r}; it must be a whole number"
                + (" from 1" if key == EPOCH else "")
            )
        return number - offset
    return 0


def whole_number(value: object) -> int | None:
    """An integer from a metadata value ("3", 3, 3.0); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return int(text)
    return None


def flag_text(value: bool) -> str:
    """A boolean as a metadata value (the schema's metadata holds strings)."""
    return "true" if value else "false"


def sample_hash(raw: str, reference: list[str]) -> str:
    """The schema's cross-model key of a sample (its recipe, as its adapters compute it): the
    sha256 of ``{"raw": ..., "reference": [...]}`` as compact JSON with sorted keys."""
    text = json.dumps({"raw": raw, "reference": reference}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
