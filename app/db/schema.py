"""Tables of the store.

Metadata tables (models, benchmarks, runs, pairs, jobs, api_tokens, shards, recoveries, series,
series_checkpoints, watch_submissions) are
declared here as SQLAlchemy models: the schema's readable reference. The hand-written migrations
are the DDL (autogenerate does not work with duckdb-engine), queries are parameterized SQL in this
package, and tests/unit/test_store.py checks that these declarations and the migrated file agree
column by column, so neither drifts. The per-sample
``results`` table and the materialized count tables (transitions, coverage, seed_transitions) are
defined by the migration alone: rows reach them only through Arrow bulk SQL (ingest.py), and
``results`` deliberately has no primary key (an ART index made bulk inserts 13x slower here);
its key (model, benchmark, seed, sample) is kept unique by the single-writer ingest path.

DuckDB has no SERIAL: integer keys take an explicit sequence as their server default.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    DateTime,
    Integer,
    Sequence,
    SmallInteger,
    String,
    UniqueConstraint,
    func,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

MODELS_SEQ = Sequence("models_id_seq")
BENCHMARKS_SEQ = Sequence("benchmarks_id_seq")
RUNS_SEQ = Sequence("runs_id_seq")
PAIRS_SEQ = Sequence("pairs_id_seq")
JOBS_SEQ = Sequence("jobs_id_seq")
API_TOKENS_SEQ = Sequence("api_tokens_id_seq")
SHARDS_SEQ = Sequence("shards_id_seq")
RECOVERIES_SEQ = Sequence("recoveries_id_seq")
SERIES_SEQ = Sequence("series_id_seq")


def _id(seq: Sequence) -> Mapped[int]:
    return mapped_column(Integer, seq, server_default=seq.next_value(), primary_key=True)


class Base(DeclarativeBase):
    pass


class Model(Base):
    __tablename__ = "models"
    id: Mapped[int] = _id(MODELS_SEQ)
    name: Mapped[str] = mapped_column(String, unique=True)
    # content fingerprint of the checkpoint (set by the worker); evaluations are reused by it
    fingerprint: Mapped[str | None] = mapped_column(String)
    family: Mapped[str | None] = mapped_column(String)
    size_params: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
    # JSON text: the checkpoint a job named (path, revision, prompting), for later jobs
    spec: Mapped[str | None] = mapped_column(String)


class Benchmark(Base):
    __tablename__ = "benchmarks"
    id: Mapped[int] = _id(BENCHMARKS_SEQ)
    name: Mapped[str] = mapped_column(String, unique=True)
    category: Mapped[str] = mapped_column(String)
    # the usual number of options (None: generative or varying per question)
    num_choices: Mapped[int | None] = mapped_column(SmallInteger)


class Run(Base):
    """One evaluation of a model on a benchmark at a seed under one eval config."""

    __tablename__ = "runs"
    __table_args__ = (UniqueConstraint("model_id", "benchmark_id", "seed", "config_hash"),)
    id: Mapped[int] = _id(RUNS_SEQ)
    model_id: Mapped[int] = mapped_column(Integer)
    benchmark_id: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(Integer)
    config_hash: Mapped[str] = mapped_column(String)
    # JSON text: source ("import:table", "import:lm-eval", ...), file name, metric, engine settings
    config: Mapped[str] = mapped_column(String)
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())


class Pair(Base):
    __tablename__ = "pairs"
    __table_args__ = (UniqueConstraint("base_model_id", "post_model_id"),)
    id: Mapped[int] = _id(PAIRS_SEQ)
    base_model_id: Mapped[int] = mapped_column(Integer)
    post_model_id: Mapped[int] = mapped_column(Integer)
    label: Mapped[str | None] = mapped_column(String)
    # post-training regime: instruct, sft, rl, domain-cpt, merge, other
    stage: Mapped[str | None] = mapped_column(String)
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())


class Job(Base):
    __tablename__ = "jobs"
    id: Mapped[int] = _id(JOBS_SEQ)
    kind: Mapped[str] = mapped_column(String)
    status: Mapped[str] = mapped_column(String)
    payload: Mapped[str] = mapped_column(String)
    error: Mapped[str | None] = mapped_column(String)
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
    owner: Mapped[str | None] = mapped_column(String)  # the submitting token's name (0004)


class ApiToken(Base):
    __tablename__ = "api_tokens"
    id: Mapped[int] = _id(API_TOKENS_SEQ)
    name: Mapped[str] = mapped_column(String, unique=True)
    token_hash: Mapped[str] = mapped_column(String, unique=True)  # sha256: the token is never kept
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime)
    role: Mapped[str | None] = mapped_column(
        String, server_default="submit"
    )  # read/submit/worker/admin


class Shard(Base):
    """One task of a job: (model, benchmark, seed) to evaluate, or a pair's recoverability."""

    __tablename__ = "shards"
    id: Mapped[int] = _id(SHARDS_SEQ)
    job_id: Mapped[int] = mapped_column(Integer)
    model_id: Mapped[int] = mapped_column(Integer)
    benchmark: Mapped[str] = mapped_column(String)  # 'recover:<corpus>' for recoverability
    seed: Mapped[int] = mapped_column(Integer)
    config_hash: Mapped[str] = mapped_column(String)
    spec: Mapped[str] = mapped_column(String)  # JSON: what the worker runs
    status: Mapped[str] = mapped_column(String)  # queued, running, done, failed, reused, cancelled
    done: Mapped[int] = mapped_column(Integer, server_default="0")
    total: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String)
    attempts: Mapped[int] = mapped_column(Integer, server_default="0")
    worker: Mapped[str | None] = mapped_column(String)
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    kind: Mapped[str | None] = mapped_column(String, server_default="evaluate")  # or 'recover'
    # sent again because no worker started it in time (its broker message was lost)
    resends: Mapped[int | None] = mapped_column(Integer, server_default="0")
    delivery: Mapped[str | None] = mapped_column(String)  # the message (task id) that claimed it


class Recovery(Base):
    """A stored recoverability analysis. Its per-document loss sums live in
    ``recovery_documents`` (long form, bulk-written like ``results``, no primary key)."""

    __tablename__ = "recoveries"
    id: Mapped[int] = _id(RECOVERIES_SEQ)
    pair_id: Mapped[int] = mapped_column(Integer)
    shard_id: Mapped[int | None] = mapped_column(Integer, unique=True)
    corpus: Mapped[str] = mapped_column(String)
    config: Mapped[str] = mapped_column(String)  # JSON: corpus, options, models, split sizes
    summary: Mapped[str] = mapped_column(String)  # JSON: shares recomputed by the app, fits
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())


class Series(Base):
    """A base model and its checkpoints in training order (``series_checkpoints``)."""

    __tablename__ = "series"
    id: Mapped[int] = _id(SERIES_SEQ)
    name: Mapped[str] = mapped_column(String, unique=True)
    base_model_id: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())


class SeriesCheckpoint(Base):
    """One checkpoint of a series at its training step, with the (base, checkpoint) pair."""

    __tablename__ = "series_checkpoints"
    __table_args__ = (UniqueConstraint("series_id", "model_id"),)
    series_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    step: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    model_id: Mapped[int] = mapped_column(Integer)
    pair_id: Mapped[int] = mapped_column(Integer)


class WatchSubmission(Base):
    """A checkpoint folder the watcher submitted: kept so a restart never submits it twice."""

    __tablename__ = "watch_submissions"
    series_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    path: Mapped[str] = mapped_column(String, primary_key=True)
    step: Mapped[int] = mapped_column(BigInteger)
    model_id: Mapped[int] = mapped_column(Integer)
    job_id: Mapped[int | None] = mapped_column(Integer)
    attempts: Mapped[int] = mapped_column(Integer, server_default="0")
    submitted_at: Mapped[datetime] = mapped_column(DateTime, server_default=func.now())
