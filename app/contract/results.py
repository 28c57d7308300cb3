"""Per-sample results as the worker uploads them (``POST /api/results``): one row per graded
sample of one shard."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from forgetmap.contract.base import Int, Strict
from forgetmap.contract.limits import MAX_ID
from pydantic import Field, model_validator

AnswerStatus = Literal["answered", "no_answer", "truncated", "refused"]
"""``forgetmap.core.answer_status.STATUSES``, as a body's field takes them."""


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
    # why the answer is what it is (forgetmap.core.answer_status; null: not said)
    answer_status: AnswerStatus | None = None
    # older workers' flag: true is the status "truncated" where answer_status is not given
    truncated: bool | None = None

    @model_validator(mode="after")
    def _agree(self) -> ResultRow:
        """``truncated`` and ``answer_status`` given together must say the same."""
        if (
            self.truncated is not None
            and self.answer_status is not None
            and self.truncated != (self.answer_status == "truncated")
        ):
            raise ValueError(
                f"truncated is {str(self.truncated).lower()} but answer_status is "
                f"{self.answer_status!r}; send answer_status alone"
            )
        return self

    @property
    def status(self) -> str | None:
        """The row's status: ``answer_status``, else ``truncated`` where the older flag is
        true; else not said."""
        if self.answer_status is not None:
            return self.answer_status
        return "truncated" if self.truncated else None


class ResultsIn(Strict):
    shard_id: Annotated[Int, Field(ge=0, le=MAX_ID)]
    rows: Annotated[list[ResultRow], Field(max_length=100_000)]

    def columns(self) -> dict[str, list[Any]]:
        """The rows as columns named as the store names them (``choices`` as JSON text; one
        ``answer_status`` from both of a row's status fields, no ``truncated``)."""
        names = [name for name in ResultRow.model_fields if name != "truncated"]
        columns = {name: [getattr(row, name) for row in self.rows] for name in names}
        columns["answer_status"] = [row.status for row in self.rows]
        columns["choices"] = [
            None if c is None else json.dumps(c, ensure_ascii=False) for c in columns["choices"]
        ]
        return columns
