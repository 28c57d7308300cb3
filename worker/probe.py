"""Asking the model again on the worker: one engine scores every probe item's options after its
forced-answer context (``forgetmap.analysis.probe``), in batches, one forward pass per item (the
options of an item share its context, so an engine with prefix caching reads it once)."""

from __future__ import annotations

from collections.abc import Sequence

from forgetmap.analysis.probe import (
    FORCED_ANSWER,
    ProbeItem,
    ProbeOutcome,
    option_labels,
    outcome_of,
    probe_context,
)
from forgetmap.worker.engines.base import Engine

PROBE_BATCH = 64
"""Items scored per engine call."""


def run_probe(
    engine: Engine,
    items: Sequence[ProbeItem],
    *,
    prefix: str = FORCED_ANSWER,
    batch: int = PROBE_BATCH,
) -> list[ProbeOutcome]:
    """Each item's outcome, in item order: its options' letters scored after ``probe_context``."""
    outcomes: list[ProbeOutcome] = []
    for start in range(0, len(items), batch):
        chunk = items[start : start + batch]
        scores = engine.choice_logprobs(
            [probe_context(item, prefix) for item in chunk],
            [option_labels(item.num_choices) for item in chunk],
        )
        outcomes += [outcome_of(item, s) for item, s in zip(chunk, scores, strict=True)]
    return outcomes
