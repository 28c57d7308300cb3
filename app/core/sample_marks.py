"""The marks a sample id carries: made by ``forgetmap.core.sample_identity`` (importers), read by
the store's pairing and queries. A leaf module (no Arrow, no numpy): the `pair` and `map` commands
import it without the importers' libraries."""

from __future__ import annotations

QUESTION_KEY_PREFIX = "q:"
"""Sample ids made from the question carry this prefix (the pair report names the rule by it)."""

AMBIGUOUS_MARK = "~ambiguous"
"""Suffix of sample ids that stand for several samples with the same key (never paired)."""
