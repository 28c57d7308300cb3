"""Tables of the store.

Metadata tables (models, benchmarks, runs, pairs, jobs) are SQLAlchemy models. The per-sample
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
