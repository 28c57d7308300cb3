"""Worker settings, read once from the environment (prefix ``FORGETMAP_``) when the worker starts."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import ENVIRONMENT, PathList, read_settings
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings


class WorkerSettings(BaseSettings):
    model_config = ENVIRONMENT

    app_url: str = "http://127.0.0.1:8000"
    token: str = Field("", validation_alias="FORGETMAP_API_TOKEN", repr=False)
    broker: BrokerSettings = Field(default_factory=BrokerSettings)
    model_roots: PathList = ()
    # False: only folders under model_roots load; True: also Hugging Face ids (org/name)
    allow_hub_models: bool = True
    benchmark_dirs: PathList = ()  # where local:NAME benchmarks live
    corpus_dirs: PathList = ()  # recoverability corpora (default: the above)
    trust_remote_code: bool = False
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    batch_invariant: bool = Field(False, validation_alias="VLLM_BATCH_INVARIANT")
    upload_batch: int = 256
    torch_threads: int | None = None  # transformers engine on CPU; None: torch's default
    scratch_dir: Path | None = None  # recoverability memory maps (None: the system's temp folder)
    recover_memory_gb: float = 16.0  # above this per model, recoverability statistics go to disk
    name: str = Field(
        default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}",
        validation_alias="FORGETMAP_WORKER_NAME",
    )

    @field_validator("app_url")
    @classmethod
    def _no_trailing_slash(cls, url: str) -> str:
        return url.rstrip("/")

    @classmethod
    def from_env(cls) -> WorkerSettings:
        return read_settings(cls)
