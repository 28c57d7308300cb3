"""GET /api/series, /api/series/{id}, question histories, and the /series/{id} page (HTML)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from forgetmap.web import create_app

from tests.support.series_fixtures import load_run


@pytest.fixture
def client(cli, tmp_path):
    load_run(cli, tmp_path)
    with TestClient(create_app(cli.db)) as client:
        yield client


def test_api_series_list_and_detail_match_the_cli(client, cli):
    assert client.get("/api/series").json() == [
        {"id": 1, "name": "run", "base": "base", "steps": [1, 2, 3, 4], "axis": "step"}
    ]
    view = client.get("/api/series/1").json()
    assert view["records"] == cli.json("series", "show", "run", "--format", "json")
    assert (view["name"], view["base"], view["steps"]) == ("run", "base", [1, 2, 3, 4])
    assert [c["post"] for c in view["checkpoints"]] == [f"run-step{i}" for i in (1, 2, 3, 4)]
    assert view["categories"] == ["Knowledge/QA", "Math", "Total"]
    # hand-computed in test_series.py: Knowledge/QA clears at step 2, Math and Total at 3
    assert view["first_clear"] == {"Knowledge/QA": 2, "Math": 3, "Total": 3}
    micro = client.get("/api/series/1", params={"aggregate": "micro"}).json()
    assert micro["records"] == cli.json(
        "series", "show", "run", "--format", "json", "--aggregate", "micro"
    )


def test_api_series_unknown_and_bad_parameters(client):
    assert client.get("/api/series/9").status_code == 404
    assert client.get("/api/series/1", params={"aggregate": "mean"}).status_code == 422
    bad = client.get("/api/series/1/questions", params={"fate": "lost"})
    assert bad.status_code == 422 and "fate must be one of" in bad.text
    assert client.get("/api/series/1/questions", params={"category": "Nope"}).status_code == 404


def marks(entry):
    return "".join(str(c) for c in entry["correct"])


def test_question_histories_match_the_hand_computed_ones(client):
    out = client.get("/api/series/1/questions").json()
    assert out["counts"] == {"relearned": 2, "forgotten": 1, "learned": 1, "kept": 2}
    assert out["total"] == 6
    by = {(q["benchmark"], q["sample_id"]): q for q in out["questions"]}
    s0 = by[("mixbench", "s0")]
    # s0: the base knows it (111); step 2 answers 001 (known in 1 of 3 seeds): forgotten at 2;
    # step 3 000; step 4 111: relearned
    assert s0["base_correct"] == [1, 1, 1]
    assert [(h["step"], marks(h), h["known"]) for h in s0["history"]] == [
        (1, "111", True),
        (2, "001", False),
        (3, "000", False),
        (4, "111", True),
    ]
    assert (s0["first_forgotten"], s0["fate"]) == (2, "relearned")
    g1 = by[("genbench", "g1")]  # 1 1 | 0 1 0 | 0 0 0 | 1 1 1
    assert [marks(h) for h in g1["history"]] == ["111", "010", "000", "111"]
    assert (g1["first_forgotten"], g1["fate"]) == (2, "relearned")
    s1 = by[("mixbench", "s1")]  # known until step 3, lost at step 4
    assert (s1["first_forgotten"], s1["fate"]) == (4, "forgotten")
    s3 = by[("mixbench", "s3")]  # the base never knew it; steps 3 and 4 do
    assert (s3["first_forgotten"], s3["fate"]) == (None, "learned")
    assert by[("mixbench", "s2")]["fate"] == by[("genbench", "g0")]["fate"] == "kept"
    assert s0["prompt"] == "question 0 of mixbench"
    # the order: first forgotten step first
    assert [q["first_forgotten"] for q in out["questions"]][:3] == [2, 2, 4]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"fate": "forgotten"}, {("mixbench", "s1")}),
        ({"fate": "relearned"}, {("mixbench", "s0"), ("genbench", "g1")}),
        ({"fate": "learned"}, {("mixbench", "s3")}),
        ({"fate": "relearned", "category": "Math"}, {("genbench", "g1")}),
        ({"benchmark": "genbench"}, {("genbench", "g0"), ("genbench", "g1")}),
    ],
)
def test_question_history_filters(client, params, expected):
    out = client.get("/api/series/1/questions", params=params).json()
    assert {(q["benchmark"], q["sample_id"]) for q in out["questions"]} == expected
    assert out["total"] == len(expected)


def test_question_histories_page(client):
    first = client.get("/api/series/1/questions", params={"page_size": 4}).json()
    second = client.get("/api/series/1/questions", params={"page_size": 4, "page": 2}).json()
    assert len(first["questions"]) == 4 and len(second["questions"]) == 2
    assert first["total"] == second["total"] == 6


def test_series_page_escapes_names_and_lists_questions(cli, tmp_path):
    load_run(cli, tmp_path, name="<b>bold</b> run")
    with TestClient(create_app(cli.db)) as client:
        [*_, created] = client.get("/api/series").json()
        page = client.get(f"/series/{created['id']}")
        assert page.status_code == 200
        assert "<b>bold</b>" not in page.text and "&lt;b&gt;bold&lt;/b&gt; run" in page.text
        assert 'id="series-charts"' in page.text and 'id="question-histories"' in page.text
        filtered = client.get(
            f"/series/{created['id']}", params={"fate": "relearned", "category": ""}
        )
        assert filtered.status_code == 200 and filtered.text.count('data-fate="relearned"') == 2
        assert client.get("/series/99").status_code == 404


def test_the_map_page_groups_a_series_under_one_row(client):
    page = client.get("/")
    assert page.status_code == 200
    # one step selector for the run, the newest step picked; its pairs listed inside a <details>
    assert page.text.count('data-series="1"') == 1
    assert '<option value="4" selected>4</option>' in page.text
    assert page.text.count('<details class="series-pairs">') == 1
    assert 'href="/series/1"' in page.text


def test_the_series_page_opens_the_drill_down_on_one_category(client):
    page = client.get("/series/1")
    # mixbench's four questions (Knowledge/QA), not genbench's
    assert page.text.count("<tr data-fate=") == 4
    assert '<option value="Knowledge/QA" selected>' in page.text
    assert client.get("/series/1", params={"category": ""}).text.count("<tr data-fate=") == 6


@pytest.mark.parametrize("level", ["benchmark", "category"])
def test_api_map_pages_by_pairs(client, level):
    everything = client.get("/api/map", params={"level": level}).json()
    pages = []
    for page in (1, 2, 3):
        response = client.get("/api/map", params={"level": level, "page": page, "page_size": 3})
        assert response.status_code == 200 and response.headers["X-Total-Pairs"] == "4"
        pages.append(response.json())
    assert {r["pair_id"] for r in pages[0]} == {1, 2, 3} and {r["pair_id"] for r in pages[1]} == {4}
    assert pages[0] + pages[1] == everything and pages[2] == []
    filtered = client.get("/api/map", params={"level": level, "q": "@ 3", "page": 1}).json()
    assert {r["pair_id"] for r in filtered} == {3}
    assert client.get("/api/map", params={"page": 0}).status_code == 422


def test_a_checkpoints_sample_links_to_its_history_along_the_run(client):
    """The drill-down of a run's checkpoint links each question to its history along the run:
    the series page narrowed to that one question (s0: forgotten at step 2, relearned at 4)."""
    pair_id = next(p["id"] for p in client.get("/api/pairs").json() if p["post"] == "run-step2")
    sample = client.get(
        f"/pairs/{pair_id}/sample", params={"benchmark": "mixbench", "sample_id": "s0"}
    ).text
    link = "/series/1?benchmark=mixbench&amp;sample_id=s0#questions"
    assert f'href="{link}" class="series-history-link">along the run run</a>' in sample
    page = client.get("/series/1", params={"benchmark": "mixbench", "sample_id": "s0"})
    assert page.status_code == 200 and 'id="one-question"' in page.text
    assert page.text.count("<tr data-fate=") == 1 and '<tr data-fate="relearned"' in page.text
    every = client.get("/series/1", params={"benchmark": "mixbench"}).text
    assert every.count("<tr data-fate=") == 4 and 'id="one-question"' not in every
