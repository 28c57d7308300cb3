"""The map's hover and the pair table show n, the 95% interval and partial benchmarks, with a
hostile model name and benchmark name shown as text (Plotly renders <a>, <b>, <br>)."""

from __future__ import annotations

import csv

import duckdb
import pytest

from tests.browser.conftest import Server
from tests.browser.test_chart_text import CHART_STATE, _assert_inert, _hover

BASE, POST = 'base<a href="https://evil.example/m">M</a>', "post<b>B</b><br>x"
BENCH = "<b>BENCH</b>"
N, FULL = 40, 90


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from click.testing import CliRunner

    from app.cli import main

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
