"""What a job is made of, with its one set of limits, and the names of its states. The API's
bodies, the submission form, the CLI, the services that build jobs (app/services/jobs.py, the
watcher, the demo) and the worker all use these models, so a value one of them accepts the others
accept too.

A leaf module (pydantic only): the worker imports it without importing the database.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from forgetmap.contract.base import Choice, Int, Name, Strict
from forgetmap.contract.limits import MAX_SEED, MIN_SEED
from forgetmap.core.errors import InputError
from forgetmap.core.stages import Stage  # the one list of stages (CLI included)
from pydantic import BaseModel, Field, model_validator

# ------------------------------------------------------------------------------ names of states


class JobStatus(StrEnum):
    queued = "queued"
    running = "running"
    done = "done"  # every shard done or reused
    failed = "failed"  # some shard failed
    cancelled = "cancelled"


class ShardStatus(StrEnum):
    """queued -> running -> done | failed; queued -> reused | cancelled."""

    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"
    reused = "reused"  # evaluated before under the same eval config: not run again
    cancelled = "cancelled"


TERMINAL = frozenset(
    {ShardStatus.done, ShardStatus.failed, ShardStatus.reused, ShardStatus.cancelled}
)


class ShardKind(StrEnum):
    evaluate = "evaluate"
    recover = "recover"  # a recoverability analysis (worker/recoverability_job.py)
    probe = "probe"  # asking the post model again, flip by flip (worker/probe.py)
    judge = "judge"  # a judge model reads a pair's unread answers (worker/probe.py)
    merge = "merge"  # a merged checkpoint built, then evaluated by its worker (worker/merge_job.py)


class Engine(StrEnum):
    vllm = "vllm"
    transformers = "transformers"


class Mode(StrEnum):
    generate = "generate"  # generate and extract an answer
    loglik = "loglik"  # score the choices


class Prompting(StrEnum):
    chat = "chat"  # zero-shot CoT through the chat template
    base = "base"  # few-shot


# ------------------------------------------------------------------------------------- limits

MAX_TEMPERATURE = (
    2.0  # beyond 2 sampling is close to uniform noise (OpenAI's and vLLM's UIs stop there)
)
MAX_GENERATED_TOKENS = 65536
MAX_SHOTS = 25
# models x benchmarks x seeds of one job: the paper's suite for two models and three seeds is 564,
# the form's largest (ten seeds) 1,880; saving and sending take ~2 ms a shard here (bench: 564 in
# 1.2 s), so one request stays within a few seconds
MAX_SHARDS_PER_JOB = 2000

Seed = Annotated[Int, Field(ge=MIN_SEED, le=MAX_SEED)]  # base.seed_problem's range
Seeds = Annotated[list[Seed], Field(min_length=1, max_length=20)]
Benchmarks = Annotated[list[Name], Field(min_length=1, max_length=1000)]


# -------------------------------------------------------------------------------------- jobs


class ModelIn(Strict):
    """A checkpoint: a Hugging Face id (optionally at a revision) or a local path under the
    roots."""

    name: Name
    path: Annotated[str, Field(min_length=1, max_length=1000)]
    revision: Annotated[str, Field(max_length=200)] | None = None
    prompting: Choice[Prompting] = Prompting.chat


class EvalConfigIn(Strict):
    """Everything that changes a model's answers; its hash keys evaluation reuse."""

    engine: Choice[Engine] = Engine.vllm
    mode: Choice[Mode] = Mode.generate
    temperature: Annotated[float, Field(ge=0, le=MAX_TEMPERATURE)] = 0.6
    top_p: Annotated[float, Field(gt=0, le=1)] = 0.95
    max_tokens: Annotated[Int, Field(ge=1, le=MAX_GENERATED_TOKENS)] = 2048
    shots: Annotated[Int, Field(ge=0, le=MAX_SHOTS)] = 3
    limit: Annotated[Int, Field(ge=1, le=10_000_000)] | None = None  # items per benchmark


class PairSpecIn(Strict):
    base: Name
    post: Name
    label: Annotated[str, Field(max_length=500)] | None = None
    stage: Choice[Stage] | None = None


# adaptive evaluation (app/analysis/adaptive.py): a target below 0.1 points needs more samples than
# any benchmark has; 50 points is a coin's whole range; a chunk over 100,000 is a full run; rounds
# growing more than 10x are a full run in two or three rounds
MIN_TARGET_POINTS, MAX_TARGET_POINTS = 0.1, 50.0
MAX_ROUND_GROWTH = 10.0
MAX_ADAPTIVE_SAMPLES = 10_000_000
MAX_CHUNK = 100_000


class AdaptiveIn(Strict):
    """Adaptive evaluation of a job's pairs: per benchmark, samples in the shared evaluation order,
    looked at every ``chunk_size``, until both F_true and BT_true are known to +-``target_points``
    (95% fixed-width sequential interval, forgetmap.analysis.adaptive), never before
    ``min_samples``, never past ``max_samples`` (None: all); each round after the first reaches
    ``round_growth`` times the samples before it (app/services/rounds.py)."""

    target_points: Annotated[float, Field(ge=MIN_TARGET_POINTS, le=MAX_TARGET_POINTS)] = 1.5
    min_samples: Annotated[Int, Field(ge=1, le=MAX_ADAPTIVE_SAMPLES)] = 100
    max_samples: Annotated[Int, Field(ge=1, le=MAX_ADAPTIVE_SAMPLES)] | None = None
    chunk_size: Annotated[Int, Field(ge=1, le=MAX_CHUNK)] = 50
    round_growth: Annotated[float, Field(ge=1.0, le=MAX_ROUND_GROWTH)] = 1.5

    @model_validator(mode="after")
    def _max_at_least_min(self) -> AdaptiveIn:
        if self.max_samples is not None and self.max_samples < self.min_samples:
            raise ValueError(
                f"max_samples ({self.max_samples}) must be >= min_samples ({self.min_samples})"
            )
        return self


class EvaluateJobIn(Strict):
    """An evaluation: every model on every benchmark and seed (one shard each); with
    ``adaptive``, the pairs' benchmarks in rounds of slices until their intervals are narrow."""

    kind: Literal["evaluate"] = "evaluate"
    models: Annotated[list[ModelIn], Field(min_length=1, max_length=50)]
    benchmarks: Benchmarks
    seeds: Seeds = [0, 1, 2]
    config: EvalConfigIn = EvalConfigIn()
    pairs: Annotated[list[PairSpecIn], Field(max_length=100)] = []
    adaptive: AdaptiveIn | None = None

    def check(self) -> EvaluateJobIn:
        """What the fields cannot see one by one: the job's size and its names. Returns the job;
        an InputError says what is wrong (the API answers it as a 422 with this message)."""
        shards = len(self.models) * len(self.benchmarks) * len(self.seeds)
        if shards > MAX_SHARDS_PER_JOB:
            raise InputError(
                f"this job has {shards} shards (models x benchmarks x seeds), over the limit of "
                f"{MAX_SHARDS_PER_JOB}; split it into several jobs"
            )
        names = [m.name for m in self.models]
        if len(set(names)) != len(names):
            raise InputError("model names in a job must be distinct")
        for pair in self.pairs:
            for name in (pair.base, pair.post):
                if name not in names:
                    raise InputError(f"pair names {name!r}, which is not one of the job's models")
        if self.adaptive is not None:
            paired = {name for pair in self.pairs for name in (pair.base, pair.post)}
            alone = [n for n in names if n not in paired]
            if not self.pairs or alone:
                raise InputError(
                    "adaptive evaluation stops on a pair's interval: every model needs a pair"
                    + (f" ({', '.join(alone)} has none)" if alone and self.pairs else "")
                )
        return self

    def payload(self) -> dict[str, Any]:
        """The job as stored (``jobs.request``, shown by ``GET /api/jobs/{id}``): the body
        without its kind, and without ``adaptive`` when the job is not adaptive."""
        return self.model_dump(
            mode="json", exclude={"kind", *([] if self.adaptive else ["adaptive"])}
        )


class SeriesJobIn(Strict):
    """A training run (app/services/series.py): a base plus checkpoint folders or glob patterns,
    each evaluated once and placed in the series by step; the base is evaluated once."""

    kind: Literal["series"]
    series: Name
    base: Name
    base_path: Annotated[str, Field(min_length=1, max_length=1000)] | None = None
    checkpoints: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=1000)]],
        Field(min_length=1, max_length=200),
    ]
    benchmarks: Benchmarks
    seeds: Seeds = [0, 1, 2]
    config: EvalConfigIn = EvalConfigIn()
    prompting: Choice[Prompting] = Prompting.chat
    base_prompting: Choice[Prompting] = Prompting.base
    stage: Choice[Stage] | None = None  # the run's stage: its pairs' (a stage filter keeps it)


class CheckpointSubmission(BaseModel):
    """One checkpoint folder of a training run to evaluate and add to a series (the watcher's
    request, ``POST /api/checkpoints``); its parts and limits are the boundary's."""

    series: Name
    base: Name = Field(description="the base model's name")
    base_path: str | None = Field(None, description="its checkpoint (default: the stored spec)")
    folder: str = Field(min_length=1, description="the checkpoint folder (under a model root)")
    step: int = Field(ge=0)
    benchmarks: Benchmarks
    seeds: Seeds = [0, 1, 2]
    config: EvalConfigIn = EvalConfigIn()
    prompting: Choice[Prompting] = Prompting.chat
    base_prompting: Choice[Prompting] = Prompting.base
    stage: Choice[Stage] | None = Field(None, description="the run's post-training stage")
