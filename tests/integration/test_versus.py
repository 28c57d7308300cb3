"""Two recipes of one base, question by question (/pairs/{a}/versus/{b} and its JSON), on a
store filled by `forgetmap import table`, against values counted by hand."""

from __future__ import annotations

from fastapi.testclient import TestClient
from forgetmap.web import create_app

from tests.support.tables import rows_for, write_csv

XSS = "<img src=x onerror=alert(1)> which is right?"
# per question, per seed 0-2: 1 right. The base knows q0-q3, not q4.
BASE = {("piqa", s): [1, 1, 1, 1, 0] for s in range(3)}
FIRST = {("piqa", 0): [0, 1, 0, 0, 1], ("piqa", 1): [0, 1, 0, 1, 1], ("piqa", 2): [0, 1, 0, 1, 1]}
SECOND = {("piqa", 0): [1, 0, 0, 1, 0], ("piqa", 1): [1, 0, 0, 1, 0], ("piqa", 2): [1, 1, 0, 1, 0]}
# q0: the first forgot (3 of 3 seeds), the second kept: "first"
# q1: the first kept, the second forgot in 2 of 3 seeds: "second"
# q2: both forgot: "both"
# q3: the first forgot in 1 of 3 seeds only (no majority), the second kept: neither
# q4: the base was wrong: nobody forgot it


def _store(cli, tmp_path) -> None:
    for model, data in (("base", BASE), ("first", FIRST), ("second", SECOND), ("other", FIRST)):
        rows = rows_for(model, data)
        for row in rows:
            row["category"] = "Commonsense"
            if row["sample_id"] == "q0":
                row["prompt"] = XSS
        cli("import", "table", str(write_csv(tmp_path / f"{model}.csv", rows)))
    cli("pair", "add", "base", "first", "--label", "recipe one")
    cli("pair", "add", "base", "second")
    cli("pair", "add", "other", "second")


def test_two_recipes_of_one_base_question_by_question(cli, tmp_path):
    _store(cli, tmp_path)
    with TestClient(create_app(cli.db)) as client:
        found = client.get("/api/pairs/1/versus/2").json()
        assert found["same_base"] is True
        assert found["benchmarks"] == [
            {"benchmark": "piqa", "category": "Commonsense", "first": 1, "second": 1, "both": 1}
        ]
        assert {
            fate: [q["sample_id"] for q in questions]
            for fate, questions in found["questions"].items()
        } == {"first": ["q0"], "second": ["q1"], "both": ["q2"]}
        swapped = client.get("/api/pairs/2/versus/1").json()
        assert swapped["benchmarks"][0] | {"first": 1, "second": 1} == swapped["benchmarks"][0]
        assert [q["sample_id"] for q in swapped["questions"]["first"]] == ["q1"]

        page = client.get("/pairs/1/versus/2")
        assert page.status_code == 200
        assert "recipe one" in page.text and "bases-differ" not in page.text
        assert "<img src=x onerror=alert(1)>" not in page.text  # the question is text
        assert "&lt;img src=x onerror=alert(1)&gt;" in page.text
        assert 'href="/pairs/1/sample?benchmark=piqa&amp;sample_id=q0"' in page.text

        pair_page = client.get("/pairs/1").text  # the other recipe of the base, linked
        assert 'href="/pairs/1/versus/2"' in pair_page and "/pairs/1/versus/3" not in pair_page

        other_base = client.get("/pairs/3/versus/1")
        assert 'id="bases-differ"' in other_base.text
        assert client.get("/api/pairs/1/versus/99").status_code == 404
