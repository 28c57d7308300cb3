"""End to end, adaptive: job -> rounds of slices -> Redis -> `forgetmap worker` (Celery) ->
transformers on a tiny model -> app -> DuckDB -> the app's look at the paired interval.

Two names for one checkpoint (greedy decoding: the same answers, no flips) make the interval
shrink as fast as it can: the benchmark stops well before its end, and a second job with a
tighter target continues from where the first stopped."""

from __future__ import annotations

import json
import subprocess

import pytest
from forgetmap.analysis.adaptive import evaluation_order

from tests.support.worker_env import (
    FORGETMAP,
    Deployment,
    require_redis,
    write_toy_benchmark,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

N = 200


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from tests.support.services import service_missing

    try:
        from forgetmap.demo.tiny_model import build_tiny_model
    except ImportError as exc:
        service_missing(f"torch/transformers not installed: {exc}")
    root = tmp_path_factory.mktemp("zoo")
    return {"path": build_tiny_model(root / "models" / "tiny", seed=1), "root": root}


def _job(model, target: float) -> dict:
    path = str(model["path"])
    return {
        "models": [
            {"name": "tiny-a", "path": path, "prompting": "base"},
            {"name": "tiny-b", "path": path, "prompting": "base"},
        ],
        "benchmarks": ["local:toy.jsonl"],
        "seeds": [0],
        "config": {
            "engine": "transformers",
            "mode": "generate",
            "temperature": 0.0,
            "max_tokens": 2,
            "shots": 1,
        },
        "pairs": [{"base": "tiny-a", "post": "tiny-b", "label": "twins"}],
        "adaptive": {
            "target_points": target,
            "min_samples": 20,
            "chunk_size": 20,
            "max_samples": 180,
        },
    }


def _deployment(tmp_path, model) -> Deployment:
    """The app and Redis (the worker starts when a test says), the tiny model, and a toy
    benchmark of N generative items."""
    require_redis()
    dep = Deployment(tmp_path, upload_batch=20)
    dep.models.symlink_to(model["root"] / "models", target_is_directory=True)
    write_toy_benchmark(dep.benchmarks / "toy.jsonl", 0, generative=N)
    return dep


def test_adaptive_job_stops_early_and_a_tighter_one_continues(tmp_path, model):
    dep = _deployment(tmp_path, model)
    try:
        dep.start_worker()
        first = dep.wait(dep.submit(_job(model, 1.0)), timeout=300)
        assert first["status"] == "done", first
        bench = first["adaptive"]["benchmarks"][0]
        pair = bench["pairs"][0]
        # no flips: the 1-point half-width is first reached at 80 samples, far from max 180; the
        # round that holds it runs to its end at 100
        assert (pair["n"], pair["stopped"], bench["full_size"]) == (100, "target met", N)
        assert {s["status"] for s in first["shards"]} == {"done"}
        # four rounds per model, each reaching 1.5 times the prefix: 20, 40, 60, 100
        assert sorted(s["total"] for s in first["shards"] if s["model"] == "tiny-a") == [
            20,
            20,
            20,
            40,
        ]
        assert all(s["done"] == s["total"] for s in first["shards"])
        used = first["adaptive"]
        assert (used["samples_used"], used["samples_full"]) == (2 * 100, 2 * N)
        assert 0 < used["tokens_used"] < used["tokens_full_estimated"]
        page = dep.http.get(f"/jobs/{first['id']}").text
        assert "100 of 200" in page and "estimated" in page

        # the tighter job through the command line (the same body as _job(model, 0.6))
        path = str(model["path"])
        submitted = subprocess.run(
            [
                FORGETMAP,
                "job",
                "submit",
                "--base",
                f"tiny-a={path}",
                "--post",
                f"tiny-b={path}",
                "--post-prompting",
                "base",
                "--benchmarks",
                "local:toy.jsonl",
                "--seeds",
                "0",
                "--engine",
                "transformers",
                "--temperature",
                "0",
                "--max-tokens",
                "2",
                "--shots",
                "1",
                "--label",
                "twins",
                "--adaptive",
                "--target",
                "0.6",
                "--min-samples",
                "20",
                "--chunk",
                "20",
                "--max-samples",
                "180",
                "--app",
                dep.url,
                "--token",
                dep.submit_token,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        second_id = json.loads(submitted.stdout)["id"]
        by_cli = {k: v for k, v in dep.job(second_id)["request"].items() if k != "rounds"}
        by_api = {k: v for k, v in first["request"].items() if k != "rounds"}
        assert by_cli == {**by_api, "adaptive": {**by_api["adaptive"], "target_points": 0.6}}
        second = dep.wait(second_id, timeout=300)
        pair = second["adaptive"]["benchmarks"][0]["pairs"][0]
        assert (second["status"], pair["n"], pair["stopped"]) == ("done", 160, "target met")
        # it continued after the 100 stored samples: one round of 60 per model, nothing again
        assert len(second["shards"]) == 2 and all(s["total"] == 60 for s in second["shards"])
        full = dep.http.get("/api/map", params={"level": "benchmark"}).json()
        assert [(r["benchmark"], r["n"]) for r in full] == [("toy", 160)]
    finally:
        dep.close()
    rows = dep.results()
    assert len(rows) == 2 * 160 and len(set(rows)) == len(rows)
    order = evaluation_order("toy", [f"g{i:03d}" for i in range(N)])
    for name in ("tiny-a", "tiny-b"):
        # the samples evaluated are exactly the first 160 of the shared evaluation order
        assert {sid for m, _, _, sid in rows if m == name} == set(order[:160])


def test_two_jobs_on_one_base_at_once_evaluate_its_samples_once(tmp_path, model):
    dep = _deployment(tmp_path, model)
    try:
        first = dep.submit(_job(model, 1.0))
        body = _job(model, 1.0)
        body["models"][1]["name"] = "tiny-c"
        body["pairs"] = [{"base": "tiny-a", "post": "tiny-c", "label": "twins too"}]
        second = dep.submit(body)  # before any worker runs: both rounds want tiny-a's [0, 20)
        dep.start_worker()
        jobs = [dep.wait(first, timeout=300), dep.wait(second, timeout=300)]
    finally:
        dep.close()
    for job in jobs:
        pair = job["adaptive"]["benchmarks"][0]["pairs"][0]
        assert (job["status"], pair["n"], pair["stopped"]) == ("done", 100, "target met"), job
    # the second job's rounds waited for the first job's shards of the shared base
    assert {s["model"] for s in jobs[1]["shards"]} == {"tiny-c"}
    evaluated = [s["total"] for job in jobs for s in job["shards"] if s["model"] == "tiny-a"]
    rows = dep.results()
    assert sum(evaluated) == len([r for r in rows if r[0] == "tiny-a"]) == 100
