"""A judge end to end (issue 53): stored results -> job -> Redis -> `forgetmap worker` -> the
judge model (transformers, a tiny local one) reads both models' unread answers and an audit
sample -> the score set `judge:<model>` and the run's audit, and a map drawn with the set.

Hand-checked: each grade the app keeps is the option our own engine ranks first after the same
judge context (a tiny random judge names options at random: what is checked is that its readings,
not ours, are what the set holds, on both sides and nowhere else)."""

from __future__ import annotations

import json
import subprocess

import pytest
from forgetmap.analysis.probe import judge_context, judge_labels
from forgetmap.core.recoverability_names import JUDGE_TEMPLATE
from forgetmap.services.probe import order_key

from tests.integration.test_probe_job import BENCH, LETTERS, _rows, load_pair
from tests.support.worker_env import FORGETMAP, Deployment, require_redis

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _judged_rows() -> list[dict]:
    """The probe test's rows, with the base's answer to s11 unread too (one per side)."""
    rows = _rows()
    for row in rows:
        if row["model"] == "tiny-base" and row["sample_id"] == "s11":
            row.update(response="Hard to say, organ 11.", prediction="", answer_status="no_answer")
    return rows


def _reading(engine, prompt: str, answer: str) -> int | None:
    (scores,) = engine.choice_logprobs(
        [judge_context(prompt, answer, JUDGE_TEMPLATE)], [judge_labels(4)]
    )
    best = max(scores)
    top = [n for n, v in enumerate(scores) if v == best]
    return top[0] if len(top) == 1 else None


def test_a_judge_job_end_to_end(tmp_path):
    require_redis()
    from tests.support.services import require_modules

    require_modules("torch", "transformers", why="the judge's engine")
    from forgetmap.demo.tiny_model import build_tiny_model
    from forgetmap.worker.engines import make_engine

    dep = Deployment(tmp_path)
    build_tiny_model(dep.models / "tiny-judge", seed=3)
    rows = _judged_rows()
    load_pair(dep, rows, tmp_path)
    body = {
        "kind": "judge",
        "base": "tiny-base",
        "post": "tiny-post",
        "judge": {"name": "tiny-judge", "path": str(dep.models / "tiny-judge")},
        "options": {"engine": "transformers", "audit": 6, "seed": 2},
    }
    try:
        dep.start_worker()
        dep.wait_ready()
        job = dep.wait(dep.submit(body), timeout=600)
        assert job["status"] == "done", dep.logs()
        (shard,) = job["shards"]
        assert shard["done"] == shard["total"] == 2 + 6  # one unread answer a side, the audit
        pair_id = dep.http.get("/api/pairs").json()[0]["id"]
        (run,) = dep.http.get(f"/api/pairs/{pair_id}/judges").json()
        assert run["score_set"] == "judge:tiny-judge"
        assert run["config"]["options"]["template"] == JUDGE_TEMPLATE  # its prompt, recorded
        audit = run["audit"]
        assert audit["rows_graded"] == 2 and audit["audited"] == 6
        assert sum(audit["readings"].values()) == 2
        assert {k.split(":")[0] for k in audit["readings"]} == {"tiny-base", "tiny-post"}
        listed = subprocess.run(
            [FORGETMAP, "--db", str(dep.db), "scores"], capture_output=True, text=True, env=dep.env
        )
        assert listed.returncode == 0 and "judge:tiny-judge" in listed.stdout, listed.stderr
        kept = {}
        for sample in ("s4", "s11", "s0"):
            detail = dep.http.get(
                f"/api/pairs/{pair_id}/sample", params={"benchmark": BENCH, "sample_id": sample}
            ).json()
            for seed_row in detail["seeds"]:
                for graded in seed_row["rescored"]:
                    assert graded["scores"] == "judge:tiny-judge"
                    model = "tiny-base" if graded["side"] == "base" else "tiny-post"
                    kept[(model, sample)] = graded
        assert set(kept) == {("tiny-base", "s11"), ("tiny-post", "s4")}  # s0 was read: not graded
        by_id = {(r["model"], r["sample_id"]): r for r in rows}
        engine = make_engine("transformers", dep.models / "tiny-judge", num_threads=1)
        try:
            for key, stored in kept.items():
                row = by_id[key]
                named = _reading(engine, row["prompt"], row["response"])
                letter = LETTERS[named] if named is not None and named < 4 else None
                assert stored["prediction"] == letter, key
                assert stored["correct"] == (letter == row["gold"]), key
                assert stored["status"] == ("answered" if letter else "no_answer"), key
            # the audit: the judge's readings of the first 6 read rows, in the seed's order
            read = [
                {**r, "seed": 0}
                for r in rows
                if r["benchmark"] == BENCH and r["answer_status"] == "answered"
            ]
            read.sort(key=lambda r: order_key(2, f"audit\x1f{r['model']}", r))
            agreed = sum(
                _reading(engine, r["prompt"], r["response"]) == LETTERS.index(r["prediction"])
                for r in read[:6]
            )
            assert audit["agreed"] == agreed and audit["agreement"] == agreed / 6
        finally:
            engine.close()
        # the map drawn with the judge's grades: the harness's elsewhere
        mapped = subprocess.run(
            [
                FORGETMAP,
                "--db",
                str(dep.db),
                "map",
                "--scores",
                "judge:tiny-judge",
                "--level",
                "benchmark",
                "--format",
                "json",
            ],
            capture_output=True,
            text=True,
            env=dep.env,
        )
        assert mapped.returncode == 0, mapped.stderr
        (record,) = [r for r in json.loads(mapped.stdout) if r["benchmark"] == BENCH]
        assert record["n"] == 12
    finally:
        dep.close()
