"""Does a cell depend on the extractor? A pair whose chat answers the harness could not read ("The
correct option is B." with an empty prediction: scored wrong) is graded again by `lenient`
(`forgetmap rescore`), and the map on that score set (`--scores`, `scores=`) counts those answers
right: F_true falls by hand-computed amounts, and the cell is marked as depending on the extractor;
a benchmark both extractors read alike does not move. The harness's map is unchanged."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tests.support.tables import write_csv

CHOICES = ["London", "Paris", "Berlin", "Madrid"]
N = 100  # per benchmark and seed: a quarter of the questions each way


def _row(model: str, bench: str, i: int, seed: int, response: str, prediction: str, correct: int):
    return {
        "model": model,
        "benchmark": bench,
        "sample_id": f"q{i}",
        "seed": seed,
        "correct": correct,
        "num_choices": 4,
        "category": "Knowledge",
        "response": response,
        "prediction": prediction,
        "gold": "Paris",
        "choices": json.dumps(CHOICES),
    }


def _rows() -> list[dict]:
    right, wrong, unread = (
        ("Answer: B", "B", 1),
        ("Answer: A", "A", 0),
        ("The correct option is B.", "", 0),
    )
    rows = []
    for seed in (0, 1):
        for i in range(N):
            quarter = 4 * i // N  # 0..3
            base = right if quarter < 3 else wrong
            # "read": the post model forgets quarter 2 and writes quarter 1 so the harness misses it
            post = {"read": [right, right, wrong, wrong], "unread": [right, unread, wrong, wrong]}
            rows.append(_row("base", "read", i, seed, *base))
            rows.append(_row("base", "unread", i, seed, *base))
            rows.append(_row("post", "read", i, seed, *post["read"][quarter]))
            rows.append(_row("post", "unread", i, seed, *post["unread"][quarter]))
    return rows


def _f_true(acc_pre: float, acc_post: float, f: float) -> float:
    return max(f - (1 - acc_pre) * (1 - acc_post) / 3, 0.0)


def test_a_score_set_moves_f_true_and_marks_the_cells_that_depend_on_it(cli, tmp_path):
    write_csv(tmp_path / "rows.csv", _rows())
    cli("import", "table", tmp_path / "rows.csv")
    cli("pair", "add", "base", "post")
    harness = {
        r["benchmark"]: r
        for r in cli.json("map", "--level", "benchmark", "--format", "json")
        if r["seed"] == 0
    }
    # the harness: "unread" loses quarters 1 and 2 (50 flips of 100), "read" only quarter 2
    assert (harness["unread"]["n_10"], harness["unread"]["n_10_no_answer"]) == (50, 25)
    assert harness["unread"]["f_true"] == pytest.approx(_f_true(0.75, 0.25, 0.5))
    assert harness["read"]["f_true"] == pytest.approx(_f_true(0.75, 0.5, 0.25))

    cli("rescore", "lenient", "--extractor", "lenient")
    scored = cli.json("map", "--level", "benchmark", "--format", "json", "--scores", "lenient")
    by = {(r["benchmark"], r["seed"]): r for r in scored}
    for seed in (0, 1):
        unread, read = by[("unread", seed)], by[("read", seed)]
        # lenient reads "The correct option is B.": quarter 1 is kept, as on "read"
        assert (unread["n_10"], unread["n_11"], unread["n_10_no_answer"]) == (25, 50, 0)
        assert unread["f_true"] == pytest.approx(_f_true(0.75, 0.5, 0.25))
        assert unread["f_true_harness"] == pytest.approx(harness["unread"]["f_true"])
        assert unread["f_true_shift"] == pytest.approx(
            _f_true(0.75, 0.5, 0.25) - _f_true(0.75, 0.25, 0.5)
        )
        assert unread["depends_on_extractor"] is True and unread["scores"] == "lenient"
        assert read["f_true_shift"] == pytest.approx(0.0) and read["depends_on_extractor"] is False
        assert read["f_true"] == pytest.approx(harness["read"]["f_true"])
    # the harness's map did not move
    again = {
        r["benchmark"]: r
        for r in cli.json("map", "--level", "benchmark", "--format", "json")
        if r["seed"] == 0
    }
    assert again["unread"]["f_true"] == harness["unread"]["f_true"]
    [category] = [
        r
        for r in cli.json("map", "--format", "json", "--scores", "lenient")
        if r["category"] == "Knowledge"
    ]
    assert category["f_true_shift"] < 0 and category["depends_on_extractor"] is True
    table = cli("map", "--scores", "lenient").stdout
    assert "graded by score set lenient: 2 of 2 records move F_true" in table
    bad = cli("map", "--scores", "nope", ok=False)
    assert "no score set 'nope'" in bad.stderr and "forgetmap scores" in bad.stderr

    from forgetmap.web import create_app

    with TestClient(create_app(db_path=cli.db)) as client:
        api = client.get("/api/map", params={"level": "benchmark", "scores": "lenient"}).json()
        assert {(r["benchmark"], r["depends_on_extractor"]) for r in api} == {
            ("unread", True),
            ("read", False),
        }
        cells = client.get(
            "/api/map/cells", params={"level": "benchmark", "scores": "lenient"}
        ).json()
        assert {c["column"]: c["depends_on_extractor"] for c in cells} == {
            "unread": True,
            "read": False,
        }
        assert client.get("/api/map", params={"scores": "nope"}).status_code == 404
        # the drill-down shows both extractors' answers: the harness's (none) and the set's (B)
        [pair] = client.get("/api/pairs").json()
        ref = {"benchmark": "unread", "sample_id": "q25"}
        seeds = client.get(f"/api/pairs/{pair['id']}/sample", params=ref).json()["seeds"]
        for seed in seeds:
            assert (seed["post_prediction"], seed["post_status"]) == ("", "no_answer")
            post = [r for r in seed["rescored"] if r["side"] == "post"]
            assert post == [
                {
                    "scores": "lenient",
                    "side": "post",
                    "prediction": "B",
                    "correct": True,
                    "status": "answered",
                    "rule": "statement",
                }
            ]
        html = client.get(f"/pairs/{pair['id']}/sample", params=ref).text
        assert "score set <b>lenient</b>: <b>B</b> · correct" in html and "cause-no_answer" in html
        page = client.get("/", params={"scores": "lenient"}).text
        assert '<option value="lenient" selected>' in page and "depends on the extractor" in page
