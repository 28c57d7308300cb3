"""The map's hover and the pair table show n, the 95% interval and partial benchmarks, with a
hostile model name and benchmark name shown as text (Plotly renders <a>, <b>, <br>)."""

from __future__ import annotations

import csv

import duckdb
import pytest

from tests.browser.test_chart_text import CHART_STATE, _assert_inert, _hover
from tests.support.server import Server

BASE, POST = 'base<a href="https://evil.example/m">M</a>', "post<b>B</b><br>x"
BENCH = "<b>BENCH</b>"
N, FULL = 40, 90


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from click.testing import CliRunner
    from forgetmap.cli import main

    tmp = tmp_path_factory.mktemp("intervals")
    db = tmp / "fm.duckdb"
    run = CliRunner().invoke
    for model, flip in ((BASE, 0), (POST, 1)):
        path = tmp / "rows.csv"
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["model", "benchmark", "sample_id", "correct", "num_choices", "seed"])
            for seed in (0, 1):
                # the post model forgets every 4th question the base knew
                writer.writerows(
                    [model, BENCH, f"s{i}", int(i % 3 != 0 and not (flip and i % 4 == 0)), 4, seed]
                    for i in range(N)
                )
        assert run(main, ["--db", str(db), "import", "table", str(path)]).exit_code == 0
    assert run(main, ["--db", str(db), "pair", "add", BASE, POST]).exit_code == 0
    con = duckdb.connect(str(db))  # a job's loader saw FULL samples: the benchmark is partial
    con.execute("UPDATE benchmarks SET full_size = ?", [FULL])
    con.close()
    srv = Server(db)
    yield srv
    srv.stop()


@pytest.mark.parametrize("level", ["category", "benchmark"])
def test_map_hover_shows_n_interval_and_partial(server, page, level):
    page.goto(f"{server.url}/?level={level}")
    page.wait_for_selector("#heatmap .main-svg")
    _hover(page, "#heatmap")
    state = page.evaluate(CHART_STATE)
    _assert_inert(state, f"{BASE} → {POST}", f"partial: {N} of {FULL}", "95% CI: F_true [")
    hover = page.text_content("#heatmap .hoverlayer")  # SVG: no innerText
    assert f"n {N}" in hover and "BT_true [" in hover, hover
    assert "*" in state["text"]  # the partial cell's value is starred


def test_pair_table_shows_n_interval_and_partial(server, page):
    page.goto(server.url + "/pairs/1")
    row = page.locator("#benchmarks tbody tr").first
    text = row.inner_text()
    assert BENCH in text and f"partial: {N} of {FULL}" in text, text
    cells = row.locator("td.strong")
    assert cells.count() == 2
    for i in range(2):
        assert "[" in cells.nth(i).inner_text() and "]" in cells.nth(i).inner_text()
    assert page.locator("#benchmarks a[href*='evil']").count() == 0
    assert page.locator("h1").inner_text() == f"{BASE} → {POST}"


CHART_POINTS = """() => document.getElementById("pair-chart").data.map((t) => ({
  name: t.name, x: t.x, plus: t.error_x.array, minus: t.error_x.arrayminus,
}))"""


def test_pair_chart_draws_the_tables_interval(server, page):
    """The dot chart's whiskers are the table's bracketed 95% interval (f_true_low ...), not the
    bootstrap CI: the chart's numbers equal the API's and the table's, and the legend and hover
    name the interval; the benchmark's name stays text."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{server.url}/api/pairs/1") as resp:
        [row] = json.load(resp)["benchmarks"]
    page.goto(server.url + "/pairs/1")
    page.wait_for_selector("#pair-chart .main-svg")
    f_trace, bt_trace = page.evaluate(CHART_POINTS)
    cells = page.locator("#benchmarks tbody tr").first.locator("td.strong")
    for trace, field, label, cell in (
        (f_trace, "f_true", "F_true", cells.nth(0)),
        (bt_trace, "bt_true", "BT_true", cells.nth(1)),
    ):
        assert trace["name"] == f"{label} (95% interval)"
        [x], [plus], [minus] = trace["x"], trace["plus"], trace["minus"]
        low, high = x - minus, x + plus
        assert (x, low, high) == pytest.approx(
            (row[field], row[f"{field}_low"], row[f"{field}_high"]), abs=1e-12
        )
        # the table cell: "value [low, high]" in % with one decimal
        assert cell.inner_text().split() == [
            f"{100 * x:.1f}",
            f"[{100 * low:.1f},",
            f"{100 * high:.1f}]",
        ]
        # not the bootstrap's interval (what the chart drew before): the two differ on F_true
        # (on BT_true both are [0, 0]: the post model gains no question here)
        if field == "f_true":
            assert (low, high) != pytest.approx(tuple(row[f"{field}_ci"]), abs=1e-3)
        else:
            assert (low, high) == (0.0, 0.0)
    _hover(page, "#pair-chart")
    state = page.evaluate(CHART_STATE)
    hover = page.text_content("#pair-chart .hoverlayer")
    low, high = row["f_true_low"], row["f_true_high"]
    assert f"95% interval [{100 * low:.1f}%, {100 * high:.1f}%]" in hover, hover
    assert f"partial: n {N} of {FULL}" in hover, hover
    _assert_inert(state, BENCH, "F_true (95% interval)", "BT_true (95% interval)")
