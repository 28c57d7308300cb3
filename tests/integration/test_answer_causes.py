"""Forgotten, or not found? Each stored answer's status reaches the map's counts
(``n_10_no_answer``, ``n_01_no_answer``, ``n_10_truncated``), and ``exclude=`` leaves a cause's
samples out of every count, the paired intervals and the noise floors included: the map with a cause
left out equals the map of the same files with those samples never written.

Files in the real layouts: lighteval 0.10 flat details (app/demo/layouts/paper.py) where some of
the chat model's answers name no option (lighteval's extractive metric extracts nothing and scores
0: a finished answer, not a cut one) and one row's prompt was cut to fit the context
(``truncated``); tables with an ``answer_status`` column.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from forgetmap.demo.layouts.paper import make_items, write_run

BASE_MODEL, POST_MODEL = "org/base", "org/chat"
TASK = "community|t0_reasoning_letter:main|0"
ITEMS = make_items(TASK, 10)
BASE = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
POST = [0, 0, 0, 1, 1, 1, 1, 0, 0, 0]
NO_OPTION = {0, 1, 7}  # the chat model's answers that end without naming an option (scored 0)
PROMPT_CUT = 3  # a row whose prompt lighteval truncated to fit the context (scored 1)


def _statuses(db) -> dict[tuple[str, str], str | None]:
    from forgetmap.db import open_store

    store = open_store(db)
    try:
        with store.read() as conn:
            rows = conn.execute(
                "SELECT m.name, r.sample_id, r.answer_status FROM results r "
                "JOIN models m ON m.id = r.model_id"
            ).fetchall()
    finally:
        store.close()
    return {(model, sample): status for model, sample, status in rows}


def _tree(out):
    write_run(
        out, BASE_MODEL, "2025-07-01T10-00-00.000001", {TASK: (ITEMS, BASE)}, style="base", seed=0
    )
    folder = write_run(
        out,
        POST_MODEL,
        "2025-07-02T10-00-00.000001",
        {TASK: (ITEMS, POST)},
        style="chat",
        seed=0,
        answer_tokens=300,
    )
    [file] = folder.glob("details_*.parquet")
    table = pq.read_table(file)
    rows = table.to_pylist()
    by_question = {item.question: i for i, item in enumerate(ITEMS)}
    for row in rows:
        i = next(n for q, n in by_question.items() if q in row["example"])
        if i in NO_OPTION:
            text = row["predictions"][0]
            row["predictions"] = [text[: text.rindex("Answer:")] + "It depends on the numbers."]
            row["specifics"] = {"extracted_predictions": [], "extracted_golds": ["A"]}
        if i == PROMPT_CUT:
            row["truncated"] = [120]
    pq.write_table(type(table).from_pylist(rows, schema=table.schema), file)


def test_each_cause_is_counted_shown_and_can_be_left_out(cli, tmp_path):
    out = tmp_path / "out"
    _tree(out)
    cli("import", "lighteval", out / "details" / BASE_MODEL, "--model", "base")
    cli("import", "lighteval", out / "details" / POST_MODEL, "--model", "post")
    cli("pair", "add", "base", "post")
    statuses = _statuses(cli.db)
    post = {s: v for (m, s), v in statuses.items() if m == "post"}
    assert sorted(v for v in post.values() if v not in ("answered", None)) == [
        "no_answer",
        "no_answer",
        "no_answer",
        "truncated",
    ]

    [record] = cli.json("map", "--level", "benchmark", "--format", "json")
    # 1->0 flips: items 0, 1, 2, of which 0 and 1 gave no option; item 7 (0->0) gave none either;
    # item 3 (1->1) had its prompt cut
    assert (record["n"], record["n_10"], record["n_00"]) == (10, 3, 3)
    assert (record["n_10_no_answer"], record["n_01_no_answer"]) == (2, 0)
    assert (record["n_10_truncated"], record["n_truncated"]) == (0, 1)
    [kept] = cli.json("map", "--level", "benchmark", "--format", "json", "--exclude", "no_answer")
    assert (kept["n"], kept["n_10"], kept["n_00"], kept["n_11"], kept["n_01"]) == (7, 1, 2, 3, 1)
    assert kept["n_10_no_answer"] == 0 and kept["n_truncated"] == 1
    assert kept["f"] == pytest.approx(1 / 7)
    [both] = cli.json(
        "map", "--level", "benchmark", "--format", "json", "--exclude", "no_answer,truncated"
    )
    assert (both["n"], both["n_10"], both["n_truncated"]) == (6, 1, 0)
    [legacy] = cli.json("map", "--level", "benchmark", "--format", "json", "--exclude-truncated")
    assert (legacy["n"], legacy["n_10"], legacy["n_10_no_answer"]) == (9, 3, 2)
    bad = cli("map", "--exclude", "lazy", ok=False)
    assert "exclude names unknown causes lazy" in bad.stderr and "no_answer" in bad.stderr
    table = cli("map", "--level", "benchmark").stdout
    assert "1->0 no answer" in table and "2 of 3" in table
    [category] = [r for r in cli.json("map", "--format", "json") if r["category"] != "Total"]
    assert (category["n_10_no_answer"], category["n_10_truncated"]) == (2, 0)

    from forgetmap.web import create_app

    with TestClient(create_app(db_path=cli.db)) as client:
        [api] = client.get("/api/map", params={"level": "benchmark"}).json()
        assert (api["n_10_no_answer"], api["n_truncated"]) == (2, 1)
        [api_kept] = client.get(
            "/api/map", params={"level": "benchmark", "exclude": "no_answer,truncated"}
        ).json()
        assert api_kept["n"] == 6
        assert client.get("/api/map", params={"exclude": "nope"}).status_code == 422
        pair_id = api["pair_id"]
        flips = client.get(f"/api/pairs/{pair_id}/samples", params={"transition": "10"}).json()
        assert flips["total"] == 3
        assert sorted(s["causes"] for s in flips["samples"]) == [[], ["no_answer"], ["no_answer"]]
        only = client.get(
            f"/api/pairs/{pair_id}/samples", params={"transition": "10", "cause": "no_answer"}
        ).json()
        assert only["total"] == 2
        left = client.get(
            f"/api/pairs/{pair_id}/samples", params={"transition": "10", "exclude": "no_answer"}
        ).json()
        assert left["total"] == 1 and left["samples"][0]["causes"] == []
        [row] = client.get(f"/api/pairs/{pair_id}").json()["benchmarks"]
        assert (row["n_10_no_answer"], row["n_10"]) == (2, 3)
        [row] = client.get(f"/api/pairs/{pair_id}", params={"exclude": "no_answer"}).json()[
            "benchmarks"
        ]
        assert (row["n_10_no_answer"], row["n_10"], row["n"]) == (0, 1, 7)
        page = client.get(f"/pairs/{pair_id}").text
        assert "1->0 no answer" in page and "2 no answer" in page
        drill = client.get(
            f"/pairs/{pair_id}/samples", params={"transition": "10", "benchmark": TASK}
        ).text
        assert drill.count('class="tag cause-no_answer"') == 2
        assert "exclude=no_answer,truncated,refused" in drill  # the way to leave them out
        detail = client.get(
            f"/api/pairs/{pair_id}/sample",
            params={"benchmark": TASK, "sample_id": flips["samples"][0]["sample_id"]},
        ).json()
        assert {s["post_status"] for s in detail["seeds"]} <= {"answered", "no_answer", None}


SEEDS = (0, 1)
N = 40


def _rows(model: str, seed: int, statuses: dict[int, str], correct: list[int]) -> list[str]:
    return [
        f"{model},bench,q{i},{seed},{correct[i]},{statuses.get(i, 'answered')},4" for i in range(N)
    ]


def _base(seed: int) -> list[int]:
    return [1 if i < 24 else 0 for i in range(N)]


def _post(seed: int) -> list[int]:
    wrong = set(range(0, 12)) | ({30} if seed == 1 else set())
    right = {24, 25, 26} | ({27} if seed == 0 else set())
    return [1 if (i < 24 and i not in wrong) or i in right else 0 for i in range(N)]


# the post model's answers that gave no option (all scored wrong): most of its 1->0 flips
POST_NO_ANSWER = {0: {3, 4, 5, 6, 7, 8, 9, 10, 11, 35}, 1: {4, 5, 6, 7, 8, 9, 10, 11, 36}}


def test_leaving_a_cause_out_equals_never_having_its_samples(cli, tmp_path):
    """The map of pair (base, post) with ``no_answer`` left out equals the map of a copy of both
    models whose (sample, seed) rows with a no-answer on either side were never written: counts,
    F_true, the paired interval over seeds (cross-seed cells) and McNemar p alike. And the post
    model's noise floor (seed 0 against seed 1) leaves out its no-answers too."""
    header = "model,benchmark,sample_id,seed,correct,answer_status,num_choices"
    lines, copy = [header], [header]
    for seed in SEEDS:
        no_answer = {i: "no_answer" for i in POST_NO_ANSWER[seed]}
        lines += _rows("base", seed, {}, _base(seed))
        lines += _rows("post", seed, no_answer, _post(seed))
        kept = [i for i in range(N) if i not in POST_NO_ANSWER[seed]]
        copy += [
            r for r in _rows("base2", seed, {}, _base(seed)) if int(r.split(",")[2][1:]) in kept
        ]
        copy += [
            r for r in _rows("post2", seed, {}, _post(seed)) if int(r.split(",")[2][1:]) in kept
        ]
    (tmp_path / "all.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "copy.csv").write_text("\n".join(copy) + "\n")
    cli("import", "table", tmp_path / "all.csv")
    cli("import", "table", tmp_path / "copy.csv")
    cli("pair", "add", "base", "post")
    cli("pair", "add", "base2", "post2")

    def by_pair(*args):
        records = cli.json("map", "--format", "json", *args)
        return (
            {r["post"]: r for r in records if r.get("category", "") != "Total"}
            if ("--level" not in args)
            else {(r["post"], r["seed"]): r for r in records}
        )

    left_out = by_pair("--level", "benchmark", "--exclude", "no_answer")
    never = by_pair("--level", "benchmark")
    fields = (
        "n",
        "n_00",
        "n_01",
        "n_10",
        "n_11",
        "f_true",
        "bt_true",
        "f_true_low",
        "f_true_high",
        "bt_true_low",
        "bt_true_high",
        "mcnemar_p",
    )
    for seed in SEEDS:
        a, b = left_out[("post", seed)], never[("post2", seed)]
        assert {f: a[f] for f in fields} == pytest.approx({f: b[f] for f in fields})
        assert never[("post", seed)]["n_10_no_answer"] == len(
            {i for i in POST_NO_ANSWER[seed] if i < 24}
        )
    # all samples: the intervals differ (the exclusion reached them)
    assert never[("post", 0)]["f_true_low"] != left_out[("post", 0)]["f_true_low"]
    cat_left = by_pair("--exclude", "no_answer")
    cat_never = by_pair()
    for name in ("n", "f_true", "f_true_low", "f_true_high", "bt_true_low", "bt_true_high"):
        assert cat_left["post"][name] == pytest.approx(cat_never["post2"][name])

    # the noise floor: the base never flips across seeds (0); the post model flips only on q27
    # (right under seed 0, wrong under seed 1): (F + BT) / 2 = (1/n) / 2 over the n samples its
    # seed-vs-seed counts keep, all 40, or the 29 with an answer under both seeds; the map shows
    # the mean of the two models' floors
    assert never[("post", 0)]["noise_floor"] == pytest.approx((1 / 40) / 2 / 2)
    assert left_out[("post", 0)]["noise_floor"] == pytest.approx((1 / 29) / 2 / 2)
    kept = [i for i in range(N) if i not in POST_NO_ANSWER[0] | POST_NO_ANSWER[1]]
    assert len(kept) == 29

    # the drill-down flags reliable changes: q0-q11 flip 1->0 under both seeds, far beyond seed
    # noise at that floor; q24-q26 gain 0->1 under both; q27 gains under seed 0 only (not a
    # majority)
    from forgetmap.web import create_app

    with TestClient(create_app(db_path=cli.db)) as client:
        [pair] = [p for p in client.get("/api/pairs").json() if p["post"] == "post"]
        url = f"/api/pairs/{pair['id']}/samples"
        lost = client.get(url, params={"transition": "10"}).json()["samples"]
        assert {s["sample_id"] for s in lost} == {f"q{i}" for i in range(12)}
        assert all(s["reliable"] and s["seeds_total"] == 2 for s in lost)
        gained = client.get(url, params={"transition": "01"}).json()["samples"]
        assert {s["sample_id"]: s["reliable"] for s in gained} == {
            "q24": True,
            "q25": True,
            "q26": True,
            "q27": False,
        }
