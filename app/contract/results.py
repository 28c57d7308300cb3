"""Per-sample results as the worker uploads them (``POST /api/results``): one row per graded
sample of one shard."""

from __future__ import annotations

import json
from typing import Annotated

from forgetmap.contract.base import MAX_ID, Int, Strict
from pydantic import Field


class ResultRow(Strict):
    sample_id: Annotated[str, Field(min_length=1, max_length=1000)]
    correct: bool
    num_choices: Annotated[Int, Field(ge=2, le=1000)] | None = None
    category: str | None = None
    prompt: str | None = None
    response: str | None = None
    prediction: str | None = None
    gold: str | None = None
    choices: list[str] | None = None
    doc_hash: str | None = None
    prompt_tokens: Annotated[Int, Field(ge=0, le=MAX_ID)] | None = None
    completion_tokens: Annotated[Int, Field(ge=0, le=MAX_ID)] | None = None
    # the answer was cut off: it used every token the shard allowed (null: not said)
    truncated: bool | None = None


class ResultsIn(Strict):
    shard_id: Annotated[Int, Field(ge=0, le=MAX_ID)]
    rows: Annotated[list[ResultRow], Field(max_length=100_000)]

    def columns(self) -> dict[str, list]:
        """The rows as columns named as the store names them (``choices`` as JSON text)."""
        columns = {
            name: [getattr(row, name) for row in self.rows] for name in ResultRow.model_fields
        }
        columns["choices"] = [None if c is None else json.dumps(c, ensure_ascii=False)
                              for c in columns["choices"]]  # fmt: skip
        return columns
