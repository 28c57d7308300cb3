"""Worker settings, read once from the environment (prefix ``FORGETMAP_``) when the worker
starts."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import ENVIRONMENT, PathList, read_settings, shown
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings


class WorkerSettings(BaseSettings):
    model_config = ENVIRONMENT

    app_url: str = Field(
        "http://127.0.0.1:8000", description="the app it reports shards to and uploads rows to"
    )
    token: str = Field(
        "",
        validation_alias="FORGETMAP_API_TOKEN",
        repr=False,
        description="a token of role `worker`",
        json_schema_extra=shown("none (required)"),
    )
    name: str = Field(
        default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}",
        validation_alias="FORGETMAP_WORKER_NAME",
        description="the name shown on job pages",
        json_schema_extra=shown("`host:pid`"),
    )
    broker: BrokerSettings = Field(default_factory=BrokerSettings)  # the broker's own variables
    model_roots: PathList = Field(
        (),
        description="folders local checkpoints must sit under (as the app's); checked again "
        "before each load",
    )
    allow_hub_models: bool = Field(
        True,
        description="false: load only folders under the model roots, never a Hugging Face id (as "
        "the app's)",
    )
    benchmark_dirs: PathList = Field(
        (), description="local benchmark files and suite copies, used before the hub"
    )
    corpus_dirs: PathList = Field(
        (),
        description="recoverability corpora",
        json_schema_extra=shown("the benchmark folders"),
    )
    trust_remote_code: bool = Field(
        False, description="true: let a checkpoint run its own code when it loads"
    )
    tensor_parallel_size: int = Field(
        1,
        ge=1,
        description="vLLM's tensor-parallel size (one worker per tensor-parallel group)",
    )
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1, description="vLLM's share of GPU memory")
    batch_invariant: bool = Field(
        False,
        validation_alias="VLLM_BATCH_INVARIANT",
        description="true: vLLM's batch-invariant kernels (GPU only)",
    )
    upload_batch: int = Field(256, ge=1, description="rows per results upload")
    torch_threads: int | None = Field(
        None,
        ge=1,
        description="threads of the transformers engine on CPU; set 1 on shared machines",
        json_schema_extra=shown("torch's default"),
    )
    recover_memory_gb: float = Field(
        16.0,
        gt=0,
        description="above this per model, a recoverability job keeps its token statistics in "
        "memory maps",
    )
    merge_dir: Path | None = Field(
        None,
        description="where merge sweeps build their merged checkpoints (one at a time, removed "
        "after its evaluation unless kept)",
        json_schema_extra=shown("`forgetmap-merges` under the first model root"),
    )
    scratch_dir: Path | None = Field(
        None,
        description="where those memory maps go (removed after each model's fits)",
        json_schema_extra=shown("the system's temp folder"),
    )

    @field_validator("app_url")
    @classmethod
    def _no_trailing_slash(cls, url: str) -> str:
        return url.rstrip("/")

    @classmethod
    def from_env(cls) -> WorkerSettings:
        return read_settings(cls)
