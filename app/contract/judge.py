"""A judge on both ends (issue 53): the job a submitter asks for (a stored pair, the judge model,
which rows), the spec its shard carries, the items the worker fetches and the outcomes it
uploads. The judge's forced choice is ``forgetmap.analysis.probe.judge_context``; the app keeps
its readings as a score set (``forgetmap.services.judge``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from forgetmap.contract.base import Int, Name, Strict
from forgetmap.contract.jobs import Engine, ModelIn
from forgetmap.contract.limits import MAX_ID
from forgetmap.contract.probe import MAX_PROBE_ITEMS
from forgetmap.contract.shards import ShardModel
from forgetmap.core.errors import InputError
from forgetmap.core.recoverability_names import JUDGE_TEMPLATE
from pydantic import BaseModel, ConfigDict, Field

JUDGE_PURPOSES = ("no_answer", "audit")
"""What a judged row is for: a ``no_answer`` row of either model is graded by the judge; an
``audit`` row, one the harness read an option from, measures how often the judge agrees."""


class JudgeOptionsIn(Strict):
    """Which rows the judge reads. ``benchmarks``: the stored names (None: every multiple-choice
    benchmark of the pair); ``max_rows``: at most this many ``no_answer`` rows (a seeded order);
    ``audit``: rows of both models the harness read an option from, for the judge's agreement
    with it; ``score_set``: the name its readings are kept under (default ``judge:<judge
    model's name>``, written again by a later judge of the same name)."""

    benchmarks: Annotated[list[Name], Field(min_length=1, max_length=200)] | None = None
    max_rows: Annotated[Int, Field(ge=1, le=MAX_PROBE_ITEMS)] = 5000
    audit: Annotated[Int, Field(ge=0, le=MAX_PROBE_ITEMS)] = 200
    seed: Annotated[Int, Field(ge=0, le=MAX_ID)] = 0
    engine: Literal["vllm", "transformers"] = Engine.vllm.value
    score_set: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    template: Annotated[str, Field(min_length=1, max_length=2000)] = JUDGE_TEMPLATE


class ShardJudgeOptions(JudgeOptionsIn):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class JudgeShardSpec(BaseModel):
    """What a judge shard tells its worker (``shards.spec``), as JudgeJobIn.shard_spec writes
    it. Unknown keys are ignored: an older worker still reads a newer spec."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)
    base: str
    post: str
    judge: ShardModel
    options: ShardJudgeOptions


class JudgeJobIn(Strict):
    """A judge of a stored pair's unread answers (one shard): the same judge reads both models'
    ``no_answer`` rows, never one side only."""

    kind: Literal["judge"]
    base: Name
    post: Name
    judge: ModelIn
    options: JudgeOptionsIn = JudgeOptionsIn()

    def check(self) -> JudgeJobIn:
        if self.base == self.post:
            raise InputError("the base and the post-trained model need different names")
        if "{prompt}" not in self.options.template or "{answer}" not in self.options.template:
            raise InputError("a judge's template names {prompt} and {answer}")
        return self

    def score_set(self) -> str:
        return self.options.score_set or f"judge:{self.judge.name}"

    def shard_spec(self) -> JudgeShardSpec:
        parts = self.model_dump(mode="json", include={"base", "post", "judge", "options"})
        return JudgeShardSpec.model_validate(parts)

    def payload(self) -> dict[str, Any]:
        """The job as stored, with its pair as evaluation jobs name theirs."""
        return {**self.model_dump(mode="json"), "pairs": [{"base": self.base, "post": self.post}]}


class JudgeItemOut(BaseModel):
    """One row for the judge: why it is read, whose answer, its place in the store, the prompt
    the judged model saw, its answer, the option count, the gold option and (audit rows) the
    option the harness read."""

    purpose: Literal["no_answer", "audit"]
    model: str
    benchmark: str
    seed: int
    sample_id: str
    prompt: str
    answer: str
    num_choices: int
    gold: int
    harness: int | None = None


class JudgeItemsOut(BaseModel):
    """``GET /api/shards/{id}/judge``: every item of a judge shard, its template, what was left
    out."""

    template: str
    items: list[JudgeItemOut]
    left_out: dict[str, int] = Field(default_factory=dict)


class JudgeOutcomeIn(Strict):
    """The judge's reading of one item: the option it named (``num_choices``: none of them;
    None: a tie at the top)."""

    purpose: Literal["no_answer", "audit"]
    model: Name
    benchmark: Name
    seed: Annotated[Int, Field(ge=0, le=MAX_ID)]
    sample_id: Annotated[str, Field(min_length=1, max_length=1000)]
    num_choices: Annotated[Int, Field(ge=2, le=26)]
    chosen: Annotated[Int, Field(ge=0, le=26)] | None


class JudgeIn(Strict):
    """``POST /api/shards/{id}/judge``: a judge shard's readings, one per item it fetched."""

    outcomes: Annotated[list[JudgeOutcomeIn], Field(max_length=4 * MAX_PROBE_ITEMS)]
    timing: dict[str, float] = Field(default_factory=dict)
