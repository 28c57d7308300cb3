"""The series page in a real browser: curves drawn per category, the noise-floor star, a click on
a point opens that checkpoint's pair; the map groups the series' pairs under one row."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from forgetmap.cli import main

from tests.support.series_fixtures import CHECKPOINTS, write_results
from tests.support.server import Server

NAME = "<b>run</b>"  # Plotly would render the tag: the page must show it as text


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("series")
    db = tmp / "fm.duckdb"
    runner = CliRunner()

    def cli(*args):
        result = runner.invoke(main, ["--db", str(db), *map(str, args)])
        assert result.exit_code == 0, result.output

    cli("import", "table", write_results(tmp / "run.parquet"))
    cli(
        "series",
        "add",
        NAME,
        "--base",
        "base",
        *[a for m, s in CHECKPOINTS for a in ("--checkpoint", f"{m}@{s}")],
    )
    srv = Server(db)
    yield srv
    srv.stop()


@pytest.fixture
def page(watched_page):
    return watched_page


def test_series_curves_are_drawn_and_a_point_opens_its_pair(server, page):
    page.goto(server.url + "/series/1")
    charts = page.locator("#series-charts .series-chart")
    charts.first.locator(".main-svg").first.wait_for()
    assert charts.count() == 3
    assert [charts.nth(i).get_attribute("data-category") for i in range(3)] == [
        "Knowledge/QA",
        "Math",
        "Total",
    ]
    # per chart: noise band, the two curves' 95% bands, F_true and BT_true lines over 4 steps,
    # and the star
    traces = page.evaluate(
        """() => [...document.querySelectorAll('#series-charts .series-chart')].map(el =>
               el.data.map(t => [t.name, t.x.length, t.marker && t.marker.symbol || null]))"""
    )
    for chart in traces:
        names = [t[0] for t in chart]
        assert names[:5] == ["noise floor", "F_true 95%", "BT_true 95%", "F_true", "BT_true"]
        assert [t[1] for t in chart[3:5]] == [4, 4]
        assert chart[5] == ["clears noise", 1, "star"]
    star_steps = page.evaluate(
        "() => [...document.querySelectorAll('#series-charts .series-chart')]"
        ".map(el => el.data[5].x[0])"
    )
    assert star_steps == [2, 3, 3]  # hand-computed in tests/integration/test_series.py
    # the bands are the star's own interval: at the star, the F_true band's lower edge is above
    # the noise floor; at every step before it, it is not (one statistic for both)
    edges = page.evaluate(
        """() => [...document.querySelectorAll('#series-charts .series-chart')].map(el => {
               const band = el.data[1], steps = el.data[3].x, n = steps.length;
               const lower = band.y.slice(n).reverse(), floor = el.data[0].y.slice(0, n);
               return steps.map((s, i) => [s, lower[i] > floor[i]]); })"""
    )
    for chart, star in zip(edges, star_steps, strict=True):
        assert [step for step, clear in chart if clear][0] == star
    # rendered lines: SVG paths with points for both curves
    assert charts.nth(0).locator("g.scatterlayer .trace .points path").count() >= 8
    # the title is the category; the series name, with its tag, shows as text
    assert "<b>run</b>" in page.locator("h1").inner_text()

    # click the F_true point at step 3 of the first chart: the pair (base, run-step3)
    x, y = page.evaluate(
        """() => {
            const el = document.querySelector('#series-charts .series-chart');
            const fl = el._fullLayout, box = el.getBoundingClientRect(), t = el.data[3];
            const i = t.x.indexOf(3);
            return [box.left + fl.xaxis._offset + fl.xaxis.l2p(3), \
box.top + fl.yaxis._offset + fl.yaxis.l2p(t.y[i])];
        }"""
    )
    page.mouse.click(x, y)
    page.wait_for_url("**/pairs/3")
    assert "run-step3" in page.locator("h1 + p.sub").inner_text()
    assert page.errors == []


def test_question_filter_in_the_browser(server, page):
    page.goto(server.url + "/series/1#questions")
    # the drill-down opens on the first category, and says so; pick all of them
    assert page.locator("select[name=category]").input_value() == "Knowledge/QA"
    assert "one category, Knowledge/QA" in page.inner_text("#opened-on")
    assert page.locator("#question-histories tbody tr").count() == 4  # mixbench's questions
    page.select_option("select[name=category]", "all")
    page.wait_for_url(lambda url: "category=all" in url)
    assert page.locator("#opened-on").count() == 0
    page.locator("label.pill", has_text="forgotten, then relearned").click()
    page.wait_for_url("**fate=relearned**")
    rows = page.locator("#question-histories tbody tr")
    assert rows.count() == 2
    # ordered by first forgotten step, then benchmark: genbench g1, then mixbench s0; at step 2
    # (seeds 0, 1, 2) g1 answered 010 and s0 001
    assert [rows.nth(i).locator("td").nth(4).inner_text() for i in range(2)] == ["✗✓✗", "✗✗✓"]


def test_the_map_shows_one_row_per_series_with_a_step_selector(server, page):
    page.goto(server.url + "/")
    page.locator("#heatmap .main-svg").first.wait_for()
    rows = page.evaluate("() => document.getElementById('heatmap').data[0].y")
    assert rows == ["&lt;b&gt;run&lt;/b&gt; @ step 4"]  # the newest step, name escaped
    page.select_option("select[data-series='1']", "2")
    page.wait_for_function("document.getElementById('heatmap').data[0].y[0].endsWith('@ step 2')")
    assert page.locator("#series-list details").count() == 1
    # the checkpoint is in the URL: a reload and the controls' own reloads keep it
    assert "step.1=2" in page.url
    page.reload()
    page.wait_for_function("document.getElementById('heatmap').data[0].y[0].endsWith('@ step 2')")
    assert page.locator("select[data-series='1']").input_value() == "2"
    page.select_option("select[name=level]", "benchmark")
    page.wait_for_url(lambda url: "level=benchmark" in url and "step.1=2" in url)
    page.wait_for_function("document.getElementById('heatmap').data[0].y[0].endsWith('@ step 2')")
    # back to the newest step: the URL forgets it
    page.select_option("select[data-series='1']", "4")
    page.wait_for_function("!window.location.search.includes('step.1')")


def test_the_series_index_lists_each_run_and_leads_to_its_page(server, page):
    page.goto(server.url + "/")
    page.click("nav >> text=Series")
    page.wait_for_url("**/series")
    rows = page.locator("#series-list tbody tr")
    assert rows.count() == 1
    assert rows.first.locator("td").nth(2).inner_text() == str(len(CHECKPOINTS))
    rows.first.locator("a").click()
    page.wait_for_url("**/series/1")
    page.goto(server.url + "/series/99")
    assert "/series (GET /api/series) lists them" in page.inner_text("main")


def test_the_series_page_fits_a_phone(server, browser):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        page.goto(server.url + "/series/1")
        page.locator("#series-charts .series-chart .main-svg").first.wait_for()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        context.close()
