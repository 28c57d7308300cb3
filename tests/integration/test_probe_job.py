"""A probe end to end (issue 53): stored results -> job -> Redis -> `forgetmap worker` -> items
fetched, the post and base models asked again (transformers) -> outcomes uploaded, checked and
reported by the app.

The pair's rows are written by hand: on one multiple-choice benchmark the base is right on ten
questions, the post model wrong on five of them (four with an option it chose, one with no option
in its answer) and right on the other five; two questions the base got wrong and a generative
benchmark are no business of a probe. Each outcome the app stores is held to the option a
transformers engine of our own ranks first on the same context: the post model's prompt, its
own answer, "Therefore, the answer is (".
"""

from __future__ import annotations

import csv
import json
import subprocess

import pytest
from forgetmap.analysis.probe import ProbeItem
from forgetmap.services.probe import order_key

from tests.support.worker_env import FORGETMAP, Deployment, require_redis

pytestmark = [pytest.mark.integration, pytest.mark.slow]
BENCH = "mmlu:anatomy"
LETTERS = "ABCD"


def _rows() -> list[dict]:
    rows = []
    for i in range(12):
        gold = LETTERS[i % 4]
        choices = json.dumps([f"organ {i}-{c}" for c in LETTERS])
        question = f"Which organ is number {i}?"
        base_right = i < 10
        post_right = 5 <= i < 10
        for model, right in (("tiny-base", base_right), ("tiny-post", post_right)):
            said = gold if right else LETTERS[(i + 1) % 4]
            response = f"Let me think about organ {i}. The answer is ({said})."
            prediction, status = said, "answered"
            if model == "tiny-post" and i == 4:  # a flip with no option in its answer
                response, prediction, status = f"Organs are complicated, {i}.", "", "no_answer"
            prompt = (
                f"Question: {question}\nAnswer:"
                if model == "tiny-base"
                else f"<|user|>{question}<|assistant|>"
            )
            rows.append(
                {
                    "model": model,
                    "benchmark": BENCH,
                    "seed": 0,
                    "sample_id": f"s{i}",
                    "correct": int(right),
                    "num_choices": 4,
                    "prompt": prompt,
                    "response": response,
                    "prediction": prediction,
                    "gold": gold,
                    "choices": choices,
                    "answer_status": status,
                }
            )
    for model in ("tiny-base", "tiny-post"):  # generative: never probed
        rows.append(
            {
                "model": model,
                "benchmark": "gsm8k",
                "seed": 0,
                "sample_id": "g0",
                "correct": int(model == "tiny-base"),
                "num_choices": "",
                "prompt": "2+2?",
                "response": "4",
                "prediction": "4",
                "gold": "4",
                "choices": "",
                "answer_status": "answered",
            }
        )
    return rows


def load_pair(
    dep: Deployment, rows: list[dict], folder, pair: tuple[str, str] = ("tiny-base", "tiny-post")
) -> None:
    """``rows`` imported into the deployment's database as a CSV, through its app, and the pair
    (tiny-base -> tiny-post unless named) added."""
    table = folder / "rows.csv"
    with table.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for args in (["import", "table", str(table)], ["pair", "add", *pair]):
        done = subprocess.run(
            [FORGETMAP, "--db", str(dep.db), *args], capture_output=True, text=True, env=dep.env
        )
        assert done.returncode == 0, done.stderr


def _expected_choice(engine, row: dict) -> int | None:
    """What the worker's probe makes of a stored row on ``engine``: the option it ranks first,
    or for a generative row 0 when the answer it generates again is right."""
    from forgetmap.worker.probe import run_probe

    if row["num_choices"]:
        item = ProbeItem("x", row["prompt"], row["response"], 4, LETTERS.index(row["gold"]))
    else:
        item = ProbeItem("x", row["prompt"], row["response"], 0, 0, row["gold"])
    (outcome,) = run_probe(engine, [item])
    return outcome.chosen


def test_a_probe_job_end_to_end(tmp_path):
    require_redis()
    from tests.support.services import require_modules

    require_modules("torch", "transformers", why="the probe's engine")
    from forgetmap.demo.tiny_model import build_tiny_model
    from forgetmap.worker.engines import make_engine

    dep = Deployment(tmp_path)
    build_tiny_model(dep.models / "tiny-base", seed=0)
    build_tiny_model(dep.models / "tiny-post", seed=1)
    rows = _rows()
    load_pair(dep, rows, tmp_path)
    body = {
        "kind": "probe",
        "base": {"name": "tiny-base", "path": str(dep.models / "tiny-base")},
        "post": {"name": "tiny-post", "path": str(dep.models / "tiny-post")},
        "options": {"engine": "transformers", "kept": 3, "seed": 5},
    }
    try:
        dep.start_worker()
        dep.wait_ready()
        job = dep.wait(dep.submit(body), timeout=600)
        assert job["status"] == "done", dep.logs()
        (shard,) = job["shards"]
        # flips (5 multiple-choice, 1 generative), shuffled (the generative one has no other),
        # kept, base
        assert shard["done"] == shard["total"] == 6 + 5 + 3 + 6
        pair_id = dep.http.get("/api/pairs").json()[0]["id"]
        (probe,) = dep.http.get(f"/api/pairs/{pair_id}/probes").json()
        arms = probe["summary"]["arms"]
        assert {arm: s["n"] for arm, s in arms.items()} == {
            "flips": 6,
            "shuffled": 5,
            "kept": 3,
            "base": 6,
        }
        assert arms["flips"]["chance"] == arms["base"]["chance"] == 1.25 / 6  # 0 for generative
        assert arms["kept"]["chance"] == arms["shuffled"]["chance"] == 0.25
        by_benchmark = probe["summary"]["by_benchmark"]
        assert sum(b["recovered"] for b in by_benchmark.values()) == arms["flips"]["recovered"]
        assert {name: b["n"] for name, b in by_benchmark.items()} == {BENCH: 5, "gsm8k": 1}
        outcomes = dep.http.get(f"/api/probes/{probe['id']}/outcomes").json()
        by_arm: dict[str, dict[str, dict]] = {}
        for o in outcomes:
            by_arm.setdefault(o["arm"], {})[o["sample_id"]] = o
        assert sorted(by_arm["flips"]) == ["g0", "s0", "s1", "s2", "s3", "s4"]
        # the kept control: the first 3 of the post model's right rows in the seed's order
        kept_rows = [{"benchmark": BENCH, "seed": 0, "sample_id": f"s{i}"} for i in range(5, 10)]
        kept_rows.sort(key=lambda r: order_key(5, "kept", r))
        assert sorted(by_arm["kept"]) == sorted(r["sample_id"] for r in kept_rows[:3])
        # each stored choice is the one our own engine ranks first on the same context
        by_id = {(r["model"], r["sample_id"]): r for r in rows}
        engine = make_engine("transformers", dep.models / "tiny-post", num_threads=1)
        try:
            for arm in ("flips", "kept"):
                for sid, o in by_arm[arm].items():
                    row = by_id[("tiny-post", sid)]
                    gold = LETTERS.index(row["gold"]) if row["num_choices"] else 0
                    assert o["gold"] == gold
                    assert o["chosen"] == _expected_choice(engine, row), (arm, sid)
        finally:
            engine.close()
        engine = make_engine("transformers", dep.models / "tiny-base", num_threads=1)
        try:
            for sid, o in by_arm["base"].items():
                assert o["chosen"] == _expected_choice(engine, by_id[("tiny-base", sid)]), sid
        finally:
            engine.close()
        # one cause: only the flip without an option; the same job again is reused
        only = {**body, "options": {**body["options"], "cause": "no_answer"}}
        job = dep.wait(dep.submit(only), timeout=600)
        assert job["status"] == "done", dep.logs()
        newest = dep.http.get(f"/api/pairs/{pair_id}/probes").json()[0]
        assert newest["summary"]["arms"]["flips"]["n"] == 1
        assert newest["summary"]["arms"]["shuffled"]["n"] == 0  # one flip: nothing to swap with
        again = dep.http.post("/api/jobs", json=body).json()
        assert again["shards_to_run"] == 0
        # a probe of a pair that was never stored is refused before anything is written
        stranger = {**body, "post": {"name": "nobody", "path": str(dep.models / "tiny-post")}}
        refused = dep.http.post("/api/jobs", json=stranger)
        assert refused.status_code == 422 and "no pair tiny-base -> nobody" in refused.text
    finally:
        dep.close()
