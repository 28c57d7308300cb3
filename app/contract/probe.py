"""Asking the model again on both ends (issue 53): the probe a submitter asks for (a pair's models,
which flips, the controls' sizes), the spec its shard carries, the items the worker fetches and
the outcomes it uploads. The probe itself is ``forgetmap.analysis.probe``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from forgetmap.contract.base import Int, Name, Strict
from forgetmap.contract.jobs import Engine, ModelIn
from forgetmap.contract.limits import MAX_ID
from forgetmap.contract.shards import ShardModel
from forgetmap.core.errors import InputError
from forgetmap.core.recoverability_names import ANSWER_TOKENS, FINAL_ANSWER, FORCED_ANSWER
from pydantic import BaseModel, ConfigDict, Field, model_validator

PROBE_CAUSES = ("all", "answered", "no_answer")
"""Which flips: every one, those whose post answer had an extractable option, or those without."""
MAX_PROBE_ITEMS = 100_000


class ProbeOptionsIn(Strict):
    """Which flips are probed and how large the controls are.

    ``benchmarks``: the stored benchmark names to probe (None: every multiple-choice benchmark
    of the pair); ``cause``: every flip, or only those whose post answer had (``answered``) or
    lacked (``no_answer``) an extractable option; ``max_flips``: at most this many flips (the
    first in a seeded order); ``kept``: how many 1->1 rows the ``kept`` control probes;
    ``seed``: the order, the kept sample and the shuffled control; ``prefix``: the forced-answer
    continuation the option letters are scored after; ``answer_prefix`` and ``answer_tokens``: what
    a generative item's short answer is generated after, and how many tokens it may take."""

    benchmarks: Annotated[list[Name], Field(min_length=1, max_length=200)] | None = None
    cause: Literal["all", "answered", "no_answer"] = "all"
    max_flips: Annotated[Int, Field(ge=1, le=MAX_PROBE_ITEMS)] = 2000
    kept: Annotated[Int, Field(ge=0, le=MAX_PROBE_ITEMS)] = 200
    seed: Annotated[Int, Field(ge=0, le=MAX_ID)] = 0
    prefix: Annotated[str, Field(min_length=1, max_length=200)] = FORCED_ANSWER
    answer_prefix: Annotated[str, Field(min_length=1, max_length=200)] = FINAL_ANSWER
    answer_tokens: Annotated[Int, Field(ge=1, le=256)] = ANSWER_TOKENS
    engine: Literal["vllm", "transformers"] = Engine.vllm.value


class ShardProbeOptions(ProbeOptionsIn):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class ProbeShardSpec(BaseModel):
    """What a probe shard tells its worker (``shards.spec``), as ProbeJobIn.shard_spec writes it.
    Unknown keys are ignored: an older worker still reads a newer spec."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)
    base: ShardModel
    post: ShardModel
    options: ShardProbeOptions


class ProbeJobIn(Strict):
    """A probe of a stored pair's flips (one shard): the post model answers again, with its
    controls; ``base`` is probed on the same flips as the ``base`` control."""

    kind: Literal["probe"]
    base: ModelIn
    post: ModelIn
    options: ProbeOptionsIn = ProbeOptionsIn()

    def check(self) -> ProbeJobIn:
        if self.base.name == self.post.name:
            raise InputError("the base and the post-trained model need different names")
        return self

    def shard_spec(self) -> ProbeShardSpec:
        """What the worker needs; its hash keys reuse (same models and options)."""
        parts = self.model_dump(mode="json", include={"base", "post", "options"})
        return ProbeShardSpec.model_validate(parts)

    def payload(self) -> dict[str, Any]:
        """The job as stored (``jobs.request``), with its pair as evaluation jobs name theirs."""
        pair = {"base": self.base.name, "post": self.post.name}
        return {**self.model_dump(mode="json"), "pairs": [pair]}


class ProbeItemOut(BaseModel):
    """One row for the worker to probe: which arm, its place in the store, the prompt its model
    saw, the answer to show after it, the option count and the gold option's index (a generative
    item: 0 options, gold 0, and ``gold_answer`` to grade its regenerated answer against)."""

    arm: Literal["flips", "shuffled", "kept", "base"]
    benchmark: str
    seed: int
    sample_id: str
    prompt: str
    answer: str
    num_choices: int
    gold: int
    gold_answer: str | None = None


class ProbeItemsOut(BaseModel):
    """``GET /api/shards/{id}/probe``: every item of a probe shard, and what was left out."""

    prefix: str
    answer_prefix: str = FINAL_ANSWER
    answer_tokens: int = ANSWER_TOKENS
    items: list[ProbeItemOut]
    left_out: dict[str, int] = Field(default_factory=dict)


class ProbeOutcomeIn(Strict):
    """What the probe made of one item: the option that scored highest (None: a tie at the
    top); a generative item (0 options, gold 0): 0 when its regenerated answer was right, else
    None."""

    arm: Literal["flips", "shuffled", "kept", "base"]
    benchmark: Name
    seed: Annotated[Int, Field(ge=0, le=MAX_ID)]
    sample_id: Annotated[str, Field(min_length=1, max_length=1000)]
    num_choices: Annotated[Int, Field(ge=0, le=26)]
    gold: Annotated[Int, Field(ge=0, le=25)]
    chosen: Annotated[Int, Field(ge=0, le=25)] | None

    @model_validator(mode="after")
    def _options(self) -> ProbeOutcomeIn:
        if self.num_choices == 1:
            raise ValueError("num_choices is 0 (a generative item) or 2 to 26 options")
        return self


class ProbeIn(Strict):
    """``POST /api/shards/{id}/probe``: a probe shard's outcomes, one per item it fetched."""

    outcomes: Annotated[list[ProbeOutcomeIn], Field(max_length=4 * MAX_PROBE_ITEMS)]
    timing: dict[str, float] = Field(default_factory=dict)
