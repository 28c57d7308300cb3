"""The closed vocabularies of a map that every entry point shares, each spelled once: the API's
query types and the contract's bodies take the ``Literal``, the CLI's choices and the services'
checks the tuple of its values. (The post-training stages are ``core.stages``'s enum.) Plain Python,
so that a command's options cost no import."""

from __future__ import annotations

from typing import Literal, get_args

Aggregate = Literal["macro", "micro"]
"""How a mean over benchmarks weighs them: "macro" every benchmark alike (the paper's), "micro"
every paired sample alike."""
AGGREGATES: tuple[str, ...] = get_args(Aggregate)

Level = Literal["benchmark", "category"]
"""A map's columns: one per benchmark, or one per category (with their Total)."""
LEVELS: tuple[str, ...] = get_args(Level)
