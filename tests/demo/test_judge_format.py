"""A judge that can read, end to end, hand-checked (issue 53): demo-format, which learned to read
a numbered reply ("Answer: 3") as its option's letter, judges answers written here by hand in that
form for questions of the zoo, on both sides of a pair, through a real worker (transformers).

Every answer below names its option by number, so what the judge should name is known without
any model: the third option's letter for "Answer: 3". The judge's prompt is the job's template
option (the reading demo-format was taught: prompt, answer, "Therefore, the answer is ("), and
the answers the harness read (letters) make its audit."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.integration.test_probe_job import load_pair
from tests.support.services import require_modules
from tests.support.worker_env import FORGETMAP, Deployment, require_redis

pytestmark = pytest.mark.slow

LETTERS = "ABCDEFGH"
BENCH = "demo_world_cities"
READING = "{prompt}{answer}\nTherefore, the answer is ("


def _rows(zoo) -> tuple[list[dict], dict[tuple[str, str], str]]:
    """A pair's rows on 12 of the zoo's questions, and the letter each hand-written answer names.

    Post: every question answered by number, the number chosen here (right on 0-5, wrong on
    6-11), unread by the harness. Base: right letters the harness read (the audit), but for
    questions 10 and 11, answered by number (its side of the judged rows)."""
    from forgetmap.demo.evaluate import load_benchmarks
    from forgetmap.worker.benchmarks.prompts import build_prompt
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(zoo.model("demo-format").path))
    items = load_benchmarks(zoo)[BENCH][:12]
    rows, named = [], {}
    for i, item in enumerate(items):
        assert item.choices is not None and item.gold_index is not None
        k = len(item.choices)
        prompt = build_prompt(item, mode="chat").render(
            lambda messages: tokenizer.apply_chat_template(
                list(messages), tokenize=False, add_generation_prompt=True
            )
        )
        post_pick = item.gold_index if i < 6 else (item.gold_index + 1 + i % (k - 1)) % k
        sides = {"demo-base": ("letter", item.gold_index), "demo-post": ("number", post_pick)}
        if i >= 10:
            sides["demo-base"] = ("number", (item.gold_index + 1) % k)
        for model, (form, pick) in sides.items():
            letter = LETTERS[pick]
            if form == "number":
                response, prediction, status = f"Answer: {pick + 1}", "", "no_answer"
                named[(model, item.sample_id)] = letter
            else:
                response, prediction, status = f"Answer: {letter}", letter, "answered"
            rows.append(
                {
                    "model": model,
                    "benchmark": BENCH,
                    "seed": 0,
                    "sample_id": item.sample_id,
                    "correct": int(status == "answered" and pick == item.gold_index),
                    "num_choices": k,
                    "prompt": prompt,
                    "response": response,
                    "prediction": prediction,
                    "gold": item.gold,
                    "choices": json.dumps(list(item.choices)),
                    "answer_status": status,
                }
            )
    return rows, named


def test_a_reading_judge_hand_checked(zoo, tmp_path):
    require_redis()
    require_modules("torch", "transformers", why="the judge's engine")
    import shutil

    dep = Deployment(tmp_path)
    shutil.copytree(zoo.model("demo-format").path, dep.models / "demo-reader")
    rows, named = _rows(zoo)
    load_pair(dep, rows, tmp_path, ("demo-base", "demo-post"))
    body = {
        "kind": "judge",
        "base": "demo-base",
        "post": "demo-post",
        "judge": {"name": "demo-reader", "path": str(dep.models / "demo-reader")},
        "options": {"engine": "transformers", "audit": 10, "seed": 0, "template": READING},
    }
    try:
        dep.start_worker()
        dep.wait_ready()
        job = dep.wait(dep.submit(body), timeout=600)
        assert job["status"] == "done", dep.logs()
        pair_id = dep.http.get("/api/pairs").json()[0]["id"]
        (run,) = dep.http.get(f"/api/pairs/{pair_id}/judges").json()
        assert run["config"]["options"]["template"] == READING  # its prompt, recorded
        assert run["audit"]["rows_graded"] == 14  # 12 post answers and 2 base answers
        graded = {}
        for row in rows:
            if (row["model"], row["sample_id"]) not in named or row["model"] != "demo-post":
                continue
            detail = dep.http.get(
                f"/api/pairs/{pair_id}/sample",
                params={"benchmark": BENCH, "sample_id": row["sample_id"]},
            ).json()
            for seed_row in detail["seeds"]:
                for grade in seed_row["rescored"]:
                    model = "demo-base" if grade["side"] == "base" else "demo-post"
                    graded[(model, row["sample_id"])] = grade
        print(f"\njudge audit: {run['audit']}")
        # every hand-written answer read as the option it names, on both sides
        assert set(graded) == set(named)
        wrong = {key: (g["prediction"], named[key]) for key, g in graded.items()}
        wrong = {key: pair for key, pair in wrong.items() if pair[0] != pair[1]}
        assert not wrong, wrong
        gold = {(r["model"], r["sample_id"]): r["gold"] for r in rows}
        for key, grade in graded.items():
            assert grade["correct"] == (named[key] == gold[key]), key
            assert grade["status"] == "answered", key
        # the audit: on the letters the harness read, this reader (taught numbers only) agrees
        # no better than chance, which is what an audit is for (do not trust it there)
        assert run["audit"]["audited"] == 10 and run["audit"]["agreement"] < 0.5
        # the map drawn with the judge: the post model's six right numbered answers count now
        mapped = subprocess.run(
            [FORGETMAP, "--db", str(dep.db), "map", "--scores", "judge:demo-reader"]
            + ["--level", "benchmark", "--format", "json"],
            capture_output=True,
            text=True,
            env=dep.env,
        )
        assert mapped.returncode == 0, mapped.stderr
        (record,) = json.loads(mapped.stdout)
        assert record["acc_post"] == pytest.approx(6 / 12)
    finally:
        dep.close()
