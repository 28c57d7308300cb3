"""Text stays text in every chart: a pair, models, a benchmark and a category named with Plotly's
pseudo-HTML (<a href>, <b>, <i>) render as the literal characters in ticks, hovers and legends,
and no Plotly SVG holds a link or bold text."""

from __future__ import annotations

import csv

import pytest

from tests.support.server import Server

LABEL = '<a href="https://evil.example/label">LABEL</a><b>bold label</b>'
BENCH = '<b>BENCH</b><a href="https://evil.example/bench">bench link</a>'
CATEGORY = '<i>CAT</i><a href="https://evil.example/cat">cat</a>'
BASE, POST = "base<b>B</b>", 'post<a href="https://evil.example/m">M</a>'
OTHER = "other<i>O</i>"  # paired with BASE without a label: the map names it by its models

CHART_STATE = """() => {
  const svgs = [...document.querySelectorAll(".js-plotly-plot svg")];
  return {
    charts: document.querySelectorAll(".js-plotly-plot").length,
    links: svgs.reduce((n, s) => n + s.querySelectorAll("a").length, 0),
    bold: svgs.reduce((n, s) => n + [...s.querySelectorAll("tspan, text")].filter(
      (t) => /bold/.test(t.getAttribute("style") || "") || \
t.style.fontWeight === "bold").length, 0),
    italic: svgs.reduce((n, s) => n + [...s.querySelectorAll("tspan")].filter(
      (t) => /italic/.test(t.getAttribute("style") || "")).length, 0),
    text: svgs.map((s) => s.textContent).join("\\n"),
  };
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from click.testing import CliRunner
    from forgetmap.cli import main

    tmp = tmp_path_factory.mktemp("chart-text")
    db = tmp / "fm.duckdb"
    run = CliRunner().invoke
    patterns = ((BASE, [1, 1, 1, 0, 0, 1]), (POST, [0, 1, 0, 0, 1, 1]), (OTHER, [1, 0, 0, 1, 1, 0]))
    for model, pattern in patterns:
        path = tmp / "rows.csv"
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(
                ["model", "benchmark", "sample_id", "correct", "num_choices", "category", "seed"]
            )
            for seed in (0, 1):
                writer.writerows(
                    [model, BENCH, f"s{i}", c, 4, CATEGORY, seed] for i, c in enumerate(pattern)
                )
        assert run(main, ["--db", str(db), "import", "table", str(path)]).exit_code == 0
        assert run(main, ["--db", str(db), "model", "set", model, "--size", "7e9"]).exit_code == 0
    result = run(
        main, ["--db", str(db), "pair", "add", BASE, POST, "--label", LABEL, "--stage", "sft"]
    )
    assert result.exit_code == 0, result.output
    assert run(main, ["--db", str(db), "pair", "add", BASE, OTHER]).exit_code == 0
    srv = Server(db)
    yield srv
    srv.stop()


def _charts(page, url: str, expected: int) -> dict:
    page.goto(url)
    page.wait_for_function(
        f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {expected}"
    )
    return page.evaluate(CHART_STATE)


def _hover(page, selector: str) -> None:
    """Move the mouse onto the first point of the chart's first trace, as a user would."""
    x, y = page.evaluate(
        """(selector) => {
            const el = document.querySelector(selector);
            el.scrollIntoView({block: "center"});  // a chart below the fold: scroll to it first
            const fl = el._fullLayout, box = el.getBoundingClientRect(), t = el._fullData[0];
            const px = fl.xaxis._offset + fl.xaxis.l2p(fl.xaxis.d2l(t.x[0]));
            const py = fl.yaxis._offset + fl.yaxis.l2p(fl.yaxis.d2l(t.y[0]));
            return [box.left + px, box.top + py];
        }""",
        selector,
    )
    page.mouse.move(x, y)
    page.wait_for_selector(f"{selector} .hoverlayer .hovertext")


def _assert_inert(state: dict, *literals: str) -> None:
    assert state["links"] == 0 and state["bold"] == 0 and state["italic"] == 0, state
    for literal in literals:
        assert literal in state["text"], (literal, state["text"][:2000])


def test_map_ticks_and_hovers_show_markup_as_text(server, page):
    state = _charts(page, server.url + "/", 1)
    _assert_inert(state, LABEL, CATEGORY, f"{BASE} → {OTHER}")
    _hover(page, "#heatmap")
    _assert_inert(page.evaluate(CHART_STATE), LABEL)
    state = _charts(page, server.url + "/?level=benchmark", 1)
    _assert_inert(state, LABEL, BENCH)
    _hover(page, "#heatmap")
    state = page.evaluate(CHART_STATE)
    _assert_inert(state, LABEL, BENCH)


def test_map_without_a_label_shows_model_names_as_text(server, page):
    # the second view of the same pair, by model names: the map falls back to "base → post"
    page.goto(server.url + "/")
    page.wait_for_selector("#heatmap .main-svg")
    _assert_inert(page.evaluate(CHART_STATE), LABEL)


def test_pair_chart_and_atlas_scatter_keep_text(server, page):
    state = _charts(page, server.url + "/pairs/1", 1)
    _assert_inert(state, BENCH, "F_true")
    _hover(page, "#pair-chart")
    _assert_inert(page.evaluate(CHART_STATE), BENCH)
    state = _charts(page, server.url + "/atlas", 1)
    _assert_inert(state)
    _hover(page, "#size-scatter")
    _assert_inert(page.evaluate(CHART_STATE), LABEL)


def test_theory_lab_charts_are_inert(server, page):
    _assert_inert(_charts(page, server.url + "/theory", 4), "replay λ = 0.3")
