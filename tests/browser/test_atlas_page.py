"""The atlas in Chromium: ranked questions in pages of 50, filters, a question's page across every
pair, a series counted once, and model text that stays text."""

from __future__ import annotations

import pytest

from tests.support.cli import Cli
from tests.support.server import Server

EVIL = "<img src=x onerror=window.pwned=1>"


@pytest.fixture
def served(tmp_path):
    lines = ["model,benchmark,sample_id,correct,num_choices,prompt,response"]
    for i in range(80):
        q = f"q{i:03d}"
        text = f"Question {i} {EVIL}" if i == 0 else f"Question {i}?"
        rows = {
            "base-7b": 1,
            "base-7b-sft": int(i >= 70),
            "other-1b": 1,
            "other-1b-it": int(i >= 20),
            "run-1": 0 if i < 5 else 1,
            "run-2": 1,
        }
        for model, correct in rows.items():
            lines.append(f'{model},mmlu:anatomy,{q},{correct},4,"{text}","{EVIL} answer {correct}"')
    (tmp_path / "rows.csv").write_text("\n".join(lines) + "\n")
    cli = Cli(tmp_path / "app.duckdb")
    cli("import", "table", tmp_path / "rows.csv")
    cli("pair", "add", "base-7b", "base-7b-sft", "--stage", "sft")
    cli("pair", "add", "other-1b", "other-1b-it", "--stage", "instruct")
    cli(
        "series",
        "add",
        "run",
        "--base",
        "base-7b",
        "--checkpoint",
        "run-1@1",
        "--checkpoint",
        "run-2@2",
    )
    server = Server(cli.db)
    yield server
    server.stop()


def test_pages_filters_and_a_question_across_pairs(served, page):
    page.goto(served.url + "/atlas")
    assert "3 recipes" in page.inner_text(".sub") and "70 questions" in page.inner_text(".sub")
    rows = page.locator("#atlas-table tbody tr")
    assert rows.count() == 50
    # q000..q019 are forgotten by both recipes that forgot anything, then the sft pair's alone
    assert rows.nth(0).inner_text().split("\t")[1].startswith("mmlu:anatomy")
    assert "page 1 of 2" in page.inner_text(".pager")
    page.click("a[rel=next]")
    page.wait_for_url("**page=2")
    assert page.locator("#atlas-table tbody tr").count() == 20

    page.goto(served.url + "/atlas")
    page.select_option("select[name=stage]", "instruct")
    page.click("#atlas-filters button[type=submit]")
    page.wait_for_url("**stage=instruct**")
    assert "1 recipes" in page.inner_text(".sub")
    assert page.locator("#atlas-table tbody tr").count() == 20

    page.goto(served.url + "/atlas")
    page.click("#atlas-table tbody tr:first-child td.prompt a")
    page.wait_for_url("**/atlas/question**")
    assert page.inner_text("h1") == "mmlu:anatomy · q000"
    # the series' step 1 forgot q000 too, but the run counts once, through step 2, which kept it
    counts = page.inner_text("#recipe-counts")
    assert "forgot 2" in counts and "kept 1" in counts
    grid = page.inner_text("#question-grid")  # a row per pair, a cell per seed
    assert "1→0" in grid and "not counted" in grid
    page.click("#every-answer summary")  # every answer, folded under the grid
    table = page.inner_text("#question-pairs")
    assert "an earlier checkpoint: not counted" in table
    assert EVIL in page.inner_text(".prompt-text") and EVIL in table  # shown as text
    assert page.evaluate("window.pwned") is None
    assert page.locator("img").count() == 0


def test_the_size_scatter_has_one_dot_per_recipe(served, page):
    page.goto(served.url + "/atlas")
    page.wait_for_selector("#size-scatter .main-svg")
    # four pairs, three recipes: the series' two steps make one dot, through step 2
    assert page.locator("#size-scatter .scatterlayer path.point").count() == 3
    labels = page.evaluate("document.getElementById('size-scatter').data.flatMap(t => t.text)")
    assert sorted(labels) == [
        "base-7b → base-7b-sft",
        "other-1b → other-1b-it",
        "series run (step 2)",
    ]


def test_recipes_of_one_base_are_drawn_apart_and_keep_their_size(served, page):
    """The sft pair and the run share base-7b's size: drawn a little apart (else one hides the
    other), each still says 7B."""
    page.goto(served.url + "/atlas")
    page.wait_for_selector("#size-scatter .main-svg")
    dots = page.evaluate(
        "document.getElementById('size-scatter').data.flatMap(t => t.x.map((x, i) =>"
        " [t.text[i], x, t.customdata[i][1]]))"
    )
    seven = sorted((x, size) for label, x, size in dots if "base-7b" in label or "run" in label)
    assert len(seven) == 2 and seven[0][0] < 7e9 < seven[1][0]
    assert all(abs(x / 7e9 - 1) < 0.05 and size == 7e9 for x, size in seven)
    [(x, size)] = [(x, size) for label, x, size in dots if "other-1b" in label]
    assert x == size == 1e9  # alone at its size: drawn where it is


def test_without_sizes_the_scatter_says_how_to_set_them(tmp_path, page):
    (tmp_path / "rows.csv").write_text(
        "model,benchmark,sample_id,correct\nbase,mmlu:anatomy,q0,1\ntuned,mmlu:anatomy,q0,0\n"
    )
    cli = Cli(tmp_path / "app.duckdb")
    cli("import", "table", tmp_path / "rows.csv")
    cli("pair", "add", "base", "tuned")
    server = Server(cli.db)
    try:
        page.goto(server.url + "/atlas")
        hint = page.inner_text("#size-scatter-empty")
        assert "No recipe has a base model size yet" in hint
        assert "forgetmap model set NAME --size 7e9" in hint
        assert "forgetmap model sizes --from-hub" in hint
    finally:
        server.stop()
