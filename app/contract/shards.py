"""A shard on both ends of the line: the spec the app stores and the worker checks before loading
anything, and the bodies of the worker's calls about a shard (start, progress, finish, fail) with
the app's answers. The app's routes take and return these models; the worker builds and reads them,
so a misspelt field fails in the worker instead of coming back as a 422.
"""

from __future__ import annotations

from typing import Annotated, Any

from forgetmap.contract.base import Choice, Int, Name, Strict
from forgetmap.contract.jobs import EvalConfigIn, ModelIn, Prompting, ShardKind
from forgetmap.contract.limits import MAX_ID
from pydantic import BaseModel, ConfigDict, Field

# the worker names itself in this header on every call, so the app can say which worker it refused
WORKER_HEADER = "X-Forgetmap-Worker"

# ---------------------------------------------------------------------------------- the spec


class ShardConfig(EvalConfigIn):
    """A shard's eval config: the job's, plus how its model is prompted (and, once finished, the
    benchmark copy it ran on)."""

    model_config = ConfigDict(strict=True, extra="ignore")
    prompting: Choice[Prompting] = Prompting.chat
    revision: Annotated[str, Field(max_length=200)] | None = None


class ShardModel(ModelIn):
    model_config = ConfigDict(strict=True, extra="ignore")


class ShardSlice(BaseModel):
    """An adaptive round's part of a benchmark: samples ``start`` to ``end`` (excluded) of its
    evaluation order (forgetmap.analysis.adaptive.evaluation_order keyed by ``order``, the stored
    benchmark name); the end may pass the benchmark's size (the worker stops at it)."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)
    start: Annotated[int, Field(ge=0)]
    end: Annotated[int, Field(ge=1)]
    order: Name
    round: Annotated[int, Field(ge=0)] = 0


class EvaluationShardSpec(BaseModel):
    """What an evaluation shard tells its worker (``shards.spec``); the worker checks it before
    loading anything. Unknown keys are ignored: an older worker still reads a newer spec."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)
    model: ShardModel
    config: ShardConfig
    slice: ShardSlice | None = None  # None: the whole benchmark


# ------------------------------------------------------------------------- the worker's calls


class StartIn(Strict):
    worker: Annotated[str, Field(max_length=200)] = "unknown"
    # the broker message's id (Celery task id): a re-delivery of the claiming message may take
    # a running shard over, another message may not while the shard's worker is alive
    delivery: Annotated[str, Field(max_length=200)] | None = None


class ClaimedShard(BaseModel):
    """A shard as the app hands it to the worker that claimed it: what the worker reads of its
    row (other columns are ignored), the spec still a mapping that its kind's model checks in the
    worker before anything loads (``EvaluationShardSpec``; recoverability's
    ``RecoveryShardSpec``), so that a spec an older app wrote fails as the shard's own error."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    id: int
    job_id: int
    kind: ShardKind = ShardKind.evaluate
    benchmark: Annotated[str, Field(min_length=1)]
    seed: int
    spec: dict[str, Any]


class ShardClaim(BaseModel):
    """The answer to a start: whether to run, and the shard when so."""

    run: bool
    shard: ClaimedShard | None


class ProgressIn(Strict):
    done: Annotated[Int, Field(ge=0, le=MAX_ID)]
    total: Annotated[Int, Field(ge=0, le=MAX_ID)] | None = None


class ShardState(BaseModel):
    """The shard's status after a call (``cancelled``: the worker stops)."""

    status: str


class ShardData(Strict):
    """The data a shard was evaluated on: a local copy (file, sha256) or the hub."""

    source: Annotated[str, Field(pattern="^(local|hub)$")]
    file: Annotated[str, Field(max_length=300)] | None = None
    sha256: Annotated[str, Field(pattern="^[0-9a-f]{64}$")] | None = None


class FinishIn(Strict):
    fingerprint: Annotated[str, Field(max_length=200)] | None = None
    data: ShardData | None = None
    # the samples the worker's loader saw (benchmarks.full_size; adaptive rounds stop at it)
    full_size: Annotated[Int, Field(ge=0, le=MAX_ID)] | None = None


class FailIn(Strict):
    error: Annotated[str, Field(max_length=1_000_000)]
