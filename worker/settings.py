"""Worker settings, read once from the environment when the worker starts."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from app.broker import BrokerSettings


def _paths(value: str | None) -> list[Path]:
    return [Path(p) for p in (value or "").split(os.pathsep) if p.strip()]


@dataclass(frozen=True)
class WorkerSettings:
    app_url: str = "http://127.0.0.1:8000"
    token: str = ""
    broker: BrokerSettings = field(default_factory=BrokerSettings)
    model_roots: list[Path] = field(default_factory=list)
    benchmark_dirs: list[Path] = field(default_factory=list)  # where local:NAME benchmarks live
    corpus_dirs: list[Path] = field(
        default_factory=list
    )  # recoverability corpora (default: the above)
    trust_remote_code: bool = False
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    batch_invariant: bool = False
    upload_batch: int = 256
    torch_threads: int | None = None  # transformers engine on CPU; None: torch's default
    scratch_dir: Path | None = None  # recoverability memory maps (None: the system's temp folder)
    recover_memory_gb: float = 16.0  # above this per model, recoverability statistics go to disk
    name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")

    @classmethod
    def from_env(cls) -> WorkerSettings:
        env = os.environ
        return cls(
            app_url=env.get("FORGETMAP_APP_URL", "http://127.0.0.1:8000").rstrip("/"),
            token=env.get("FORGETMAP_API_TOKEN", ""),
            broker=BrokerSettings.from_env(),
            model_roots=_paths(env.get("FORGETMAP_MODEL_ROOTS")),
            benchmark_dirs=_paths(env.get("FORGETMAP_BENCHMARK_DIRS")),
            corpus_dirs=_paths(env.get("FORGETMAP_CORPUS_DIRS")),
            trust_remote_code=env.get("FORGETMAP_TRUST_REMOTE_CODE", "0").lower()
            in ("1", "true", "yes"),
            tensor_parallel_size=int(env.get("FORGETMAP_TENSOR_PARALLEL_SIZE", "1")),
            gpu_memory_utilization=float(env.get("FORGETMAP_GPU_MEMORY_UTILIZATION", "0.9")),
            batch_invariant=env.get("VLLM_BATCH_INVARIANT", "0") == "1",
            upload_batch=int(env.get("FORGETMAP_UPLOAD_BATCH", "256")),
            scratch_dir=Path(env["FORGETMAP_SCRATCH_DIR"])
            if env.get("FORGETMAP_SCRATCH_DIR")
            else None,
            recover_memory_gb=float(env.get("FORGETMAP_RECOVER_MEMORY_GB", "16")),
            torch_threads=int(env["FORGETMAP_TORCH_THREADS"])
            if env.get("FORGETMAP_TORCH_THREADS")
            else None,
        )
