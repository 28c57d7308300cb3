"""A series' results as a tracker takes them (``GET /api/series/{id}/export``, `forgetmap series
export`, the Trainer callback): per (step, category) the numbers of `forgetmap series show` with
their 95% margins and exact flip counts, and the flipped samples themselves, row by row.

Written by the app (or the CLI on the file) and read back by the CLI that writes it to W&B,
MLflow or TensorBoard in the user's own process: the same class on both sides.
"""

from __future__ import annotations

from typing import Literal

from forgetmap.contract.base import Strict
from forgetmap.core.vocabularies import Aggregate

MAX_FLIPS = 1000
"""Flip rows per step by default: a tracker's table stays readable and its upload small."""
TEXT_LIMIT = 500
"""Characters kept of a flip's question and answers (a cut text ends, or for a question
starts, with "…")."""

Fate = Literal["forgotten", "learned"]


class SeriesResult(Strict):
    """One (step, category) of a series, "Total" included: the record of `forgetmap series show`
    with its margins and flip counts."""

    step: int
    post: str
    category: str
    f_true: float
    # half-width of the 95% Student-t interval across seeds (None with one seed)
    f_true_margin: float | None
    bt_true: float
    bt_true_margin: float | None
    noise_floor: float | None
    seeds: int
    # exact counts over the category's benchmarks and all seeds: 1->0 and 0->1 flips, and the
    # (question, seed) pairs compared
    forgotten: int
    learned: int
    n: int


class SeriesFlip(Strict):
    """One flipped (step, benchmark, sample, seed): what the base answered and the checkpoint."""

    step: int
    category: str
    benchmark: str
    sample_id: str
    seed: int
    fate: Fate
    # the question (or, when the store has none apart, the prompt's end), cut at text_limit
    question: str | None
    gold: str | None
    base_answer: str | None
    checkpoint_answer: str | None


class SeriesExport(Strict):
    """A series' results and flips for the steps asked (all by default), in step order."""

    series: str
    base: str
    aggregate: Aggregate
    steps: list[int]  # the steps with results, in order
    results: list[SeriesResult]
    flips: list[SeriesFlip]
    max_flips: int  # flip rows kept per step
    text_limit: int  # characters kept of a question or an answer
    flips_truncated: bool  # some step had more flips than max_flips
