"""Truncated thinking is not forgetting: a chain of thought cut off before its answer is recorded
per sample, counted per map cell among the 1->0 flips, and can be left out of the map and the
drill-down.

Files in the real layouts: lighteval 0.10 flat details (app/demo/layouts/paper.py) where some of the
chat model's answers stop before "Answer:" (lighteval's extractive metric then extracts nothing
and scores 0) and one row's prompt was cut to fit the context (``truncated``); lm-eval samples
whose filter found no answer (``[invalid]``); a table with a ``truncated`` column.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
from fastapi.testclient import TestClient
from forgetmap.demo.layouts.lm_eval import write_lm_eval_samples
from forgetmap.demo.layouts.paper import make_items, write_run

BASE_MODEL, POST_MODEL = "org/base", "org/chat"
TASK = "community|t0_reasoning_letter:main|0"
ITEMS = make_items(TASK, 10)
BASE = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
POST = [0, 0, 0, 1, 1, 1, 1, 0, 0, 0]
CUT_OFF = {0, 1, 7}  # the chat model's answers that stop before "Answer:" (all scored 0)
PROMPT_CUT = 3  # a row whose prompt lighteval truncated to fit the context (scored 1)


def _flags(db) -> list[tuple[tuple[str, str], bool | None]]:
    from forgetmap.db import open_store

    store = open_store(db)
    try:
        with store.read() as conn:
            rows = conn.execute(
                "SELECT m.name, r.sample_id, r.truncated FROM results r "
                "JOIN models m ON m.id = r.model_id"
            ).fetchall()
    finally:
        store.close()
    return [((model, sample), cut) for model, sample, cut in rows]


def _tree(out):
    write_run(out, BASE_MODEL, "2025-07-01T10-00-00.000001", {TASK: (ITEMS, BASE)},
              style="base", seed=0)  # fmt: skip
    folder = write_run(out, POST_MODEL, "2025-07-02T10-00-00.000001", {TASK: (ITEMS, POST)},
                       style="chat", seed=0, answer_tokens=300)  # fmt: skip
    [file] = folder.glob("details_*.parquet")
    table = pq.read_table(file)
    rows = table.to_pylist()
    by_question = {item.question: i for i, item in enumerate(ITEMS)}
    for row in rows:
        i = next(n for q, n in by_question.items() if q in row["example"])
        if i in CUT_OFF:
            text = row["predictions"][0]
            row["predictions"] = [text[: text.rindex("Answer:")]]  # the limit came first
            row["specifics"] = {"extracted_predictions": [], "extracted_golds": ["A"]}
        if i == PROMPT_CUT:
            row["truncated"] = [120]
    pq.write_table(type(table).from_pylist(rows, schema=table.schema), file)


def test_cut_off_answers_are_recorded_counted_and_can_be_left_out(cli, tmp_path):
    out = tmp_path / "out"
    _tree(out)
    cli("import", "lighteval", out / "details" / BASE_MODEL, "--model", "base")
    cli("import", "lighteval", out / "details" / POST_MODEL, "--model", "post")
    cli("pair", "add", "base", "post")
    flags = _flags(cli.db)
    assert sum(1 for (model, _), cut in flags if model == "post" and cut) == 4
    assert all(cut is False for (model, _), cut in flags if model == "base")

    [record] = cli.json("map", "--level", "benchmark", "--format", "json")
    # 1->0 flips: items 0, 1, 2; items 0 and 1 are cut off; item 7 (0->0) is cut off; item 3
    # (1->1) had its prompt cut
    assert (record["n"], record["n_10"], record["n_00"]) == (10, 3, 3)
    assert record["n_10_truncated"] == 2
    assert record["n_truncated"] == 4
    [kept] = cli.json("map", "--level", "benchmark", "--format", "json", "--exclude-truncated")
    assert (kept["n"], kept["n_10"], kept["n_00"], kept["n_11"]) == (6, 1, 2, 2)
    assert kept["n_10_truncated"] == 0
    assert abs(kept["f"] - 1 / 6) < 1e-12
    table = cli("map", "--level", "benchmark").stdout
    assert "1->0 cut" in table.splitlines()[1] or "1->0 cut" in table
    [category] = [r for r in cli.json("map", "--format", "json") if r["category"] != "Total"]
    assert category["n_10_truncated"] == 2

    from forgetmap.web import create_app

    with TestClient(create_app(db_path=cli.db)) as client:
        [api] = client.get("/api/map", params={"level": "benchmark"}).json()
        assert (api["n_10_truncated"], api["n_truncated"]) == (2, 4)
        [api_kept] = client.get(
            "/api/map", params={"level": "benchmark", "truncated": "exclude"}
        ).json()
        assert api_kept["n"] == 6
        pair_id = api["pair_id"]
        flips = client.get(f"/api/pairs/{pair_id}/samples", params={"transition": "10"}).json()
        assert flips["total"] == 3
        assert sorted(s["truncated"] for s in flips["samples"]) == [False, True, True]
        left = client.get(
            f"/api/pairs/{pair_id}/samples", params={"transition": "10", "truncated": "exclude"}
        ).json()
        assert left["total"] == 1 and not left["samples"][0]["truncated"]
        page = client.get(f"/pairs/{pair_id}").text
        assert "1->0 cut" in page
        drill = client.get(
            f"/pairs/{pair_id}/samples", params={"transition": "10", "benchmark": TASK}
        ).text
        assert drill.count("cut off") >= 2
        assert "truncated=exclude" in drill  # the way to leave them out


def test_lm_eval_answers_without_an_answer_and_a_table_column_are_truncations(cli, tmp_path):
    samples = write_lm_eval_samples(tmp_path / "lm", "gsm8k", [1, 0, 0, 1], kind="generate_until")
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    lines[1]["filtered_resps"] = ["[invalid]"]  # the filter found no answer: cut off
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    cli("import", "lm-eval", samples.parent, "--model", "lm")
    table = tmp_path / "t.csv"
    table.write_text(
        "model,benchmark,sample_id,correct,truncated\n"
        "tab,bench,a,1,0\ntab,bench,b,0,1\ntab,bench,c,0,\n"
    )
    cli("import", "table", table)
    flags = dict(_flags(cli.db))
    assert flags[("lm", "1")] is True and flags[("lm", "0")] is False
    assert flags[("tab", "b")] is True and flags[("tab", "a")] is False
    assert flags[("tab", "c")] is None  # not said: unknown
    bad = tmp_path / "bad.csv"
    bad.write_text("model,benchmark,sample_id,correct,truncated\ntab,bench,d,0,maybe\n")
    result = cli("import", "table", bad, ok=False)
    assert "truncated" in result.stderr and "row 1" in result.stderr


def test_nested_details_say_cut_off_by_truncated_tokens_or_no_extracted_answer(cli, tmp_path):
    """lighteval 0.11+: ``model_response.truncated_tokens_count`` above 0, or an extractive
    metric that took no answer out of the text (``doc.specific.extracted_predictions`` empty);
    the kernels and the row reader (a stringified file) say the same."""
    from forgetmap.demo.layouts.lighteval import write_lighteval_details

    flags = {}
    for stringify in (False, True):
        path = write_lighteval_details(
            tmp_path / f"n{stringify}", "lighteval|gsm8k|0", [1, 0, 1, 0],
            schema="nested", kind="generative",
        )  # fmt: skip
        table = pq.read_table(path)
        rows = table.to_pylist()
        rows[1]["doc"]["specific"]["extracted_predictions"] = []
        rows[2]["model_response"]["truncated_tokens_count"] = 37
        fixed = type(table).from_pylist(rows, schema=table.schema)
        if stringify:
            fixed = fixed.from_pydict(
                {c: [str(v) for v in fixed[c].to_pylist()] for c in fixed.column_names}
            )
        pq.write_table(fixed, path)
        name = f"nested-{stringify}"
        cli("import", "lighteval", path, "--model", name)
        flags[stringify] = sorted(
            (sample, cut) for (model, sample), cut in _flags(cli.db) if model == name
        )
    assert [cut for _, cut in flags[False]].count(True) == 2
    assert [cut for _, cut in flags[False]].count(False) == 2
    assert [cut for _, cut in flags[True]] == [cut for _, cut in flags[False]]
