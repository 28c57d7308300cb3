"""A merge sweep's page in a real browser (issue 54): the curves drawn against the mix, the choice
answered and asked again, the questions along the mix. The sweep is the hand-built run of
tests/support/series_fixtures.py stored along the mix (tests/integration/test_merge_sweep_view.py
has its numbers)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from forgetmap.cli import main

from tests.support.series_fixtures import store_as_sweep, write_results
from tests.support.server import Server

NAME = "<b>sweep</b>"  # Plotly would render the tag: the page must show it as text


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    db = tmp / "fm.duckdb"
    result = CliRunner().invoke(
        main, ["--db", str(db), "import", "table", str(write_results(tmp / "run.parquet"))]
    )
    assert result.exit_code == 0, result.output
    store_as_sweep(db, NAME)
    srv = Server(db)
    yield srv
    srv.stop()


@pytest.fixture
def page(watched_page):
    return watched_page


def test_the_sweep_is_drawn_against_the_mix_and_a_mix_is_chosen(server, page):
    page.goto(server.url + "/series/1")
    charts = page.locator("#series-charts .series-chart")
    charts.first.locator(".main-svg").first.wait_for()
    drawn = page.evaluate(
        """() => [...document.querySelectorAll('#series-charts .series-chart')].map(el => [
               el.dataset.category, el.data[3].x, el._fullLayout.xaxis.title.text,
               el.data[3].hovertemplate])"""
    )
    assert [d[0] for d in drawn] == ["Knowledge/QA", "Math", "Total"]
    for _, xs, title, hover in drawn:
        assert xs == [0.25, 0.5, 0.75, 1]
        assert title == "mix (the post model's share; 0 is the base)"
        assert hover.startswith("mix %{x}")
    assert "<b>sweep</b>" in page.locator("h1").inner_text()
    # the choice: keeping 80% of the gains, the post model itself (hand-computed)
    assert "mix 1." in page.locator("#choice-answer").inner_text()
    assert page.locator("#choice-mixes tbody tr").count() == 5
    page.fill("input[name=keep_gains]", "0")
    page.locator("#merge-choice button").click()
    page.wait_for_url(lambda url: "keep_gains=0" in url)
    answer = page.locator("#choice-answer").inner_text()
    assert "mix 0.25." in answer and "beats the post model beyond noise" in answer
    assert page.locator("#choice-mixes tr.chosen td").first.inner_text() == "0.25"
    # the questions along the mix: s1, forgotten by the post model, is undone at 0.75
    page.goto(server.url + "/series/1?category=all#questions")
    forgotten = page.locator('#question-histories tr[data-fate="forgotten"]')
    assert forgotten.count() == 1
    assert forgotten.locator("td").nth(-2).inner_text() == "mix 0.75"
    assert page.locator("#question-histories th", has_text="mix 0.25").count() == 1
    assert page.errors == []
