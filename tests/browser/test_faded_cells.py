"""The map in Chromium fades the cells that do not survive (not significant after
Benjamini-Hochberg, or inside the noise floor) with the reason in the hover, keeps a real loss
strong, draws both on a fixed colour range (or the URL's zmax), and keeps a hostile pair label as
text in the hover."""

from __future__ import annotations

import numpy as np
import pytest

from tests.browser.test_chart_text import CHART_STATE, _assert_inert
from tests.integration.test_intervals import write_rows
from tests.integration.test_significance_map import BENCHES, N, _models
from tests.support.server import Server

SELF = "self<b>B</b>"  # the seed-noise pair's label: must stay text in the hover
SELF_ROW = "self&lt;b&gt;B&lt;/b&gt;"  # as the trace holds it (static/text.js escapes it)

TRACES = """() => document.getElementById("heatmap").data.map((t) => ({
  name: t.name, zmin: t.zmin, zmax: t.zmax, y: t.y, x: t.x, z: t.z, hoverinfo: t.hoverinfo,
  colours: t.colorscale, why: t.customdata && t.customdata.map((r) => r.map((c) => c && c[12])),
}))"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from click.testing import CliRunner
    from forgetmap.cli import main

    tmp = tmp_path_factory.mktemp("faded")
    db = tmp / "fm.duckdb"
    run = CliRunner().invoke
    k = {b: [4] * N for b in BENCHES}
    for name, rows in _models(np.random.default_rng(2026)).items():
        path = write_rows(tmp / f"{name}.csv", name, rows, k)
        assert run(main, ["--db", str(db), "import", "table", str(path)]).exit_code == 0
    for post, label in (("copy", SELF), ("sft", "forgot")):
        added = run(main, ["--db", str(db), "pair", "add", "base", post, "--label", label])
        assert added.exit_code == 0, added.output
    srv = Server(db)
    yield srv
    srv.stop()


def _cells(traces: list[dict], veiled: bool) -> list[tuple[str, str, str]]:
    """(row, column, hover line) of every cell under the veil (``veiled``) or not."""
    cells, veil = traces
    return [
        (cells["y"][i], cells["x"][j], cells["why"][i][j])
        for i, row in enumerate(cells["z"])
        for j, v in enumerate(row)
        if v is not None and (veil["z"][i][j] is not None) == veiled
    ]


def _hover_cell(page, row: str, column: str) -> str:
    x, y = page.evaluate(
        """([row, column]) => {
            const el = document.getElementById("heatmap");
            el.scrollIntoView({block: "center"});
            const fl = el._fullLayout, box = el.getBoundingClientRect();
            const px = fl.xaxis._offset + fl.xaxis.l2p(fl.xaxis.d2l(column));
            const py = fl.yaxis._offset + fl.yaxis.l2p(fl.yaxis.d2l(row));
            return [box.left + px, box.top + py];
        }""",
        [row, column],
    )
    page.mouse.move(x, y)
    page.wait_for_selector("#heatmap .hoverlayer .hovertext")
    return page.text_content("#heatmap .hoverlayer")


@pytest.mark.parametrize("level", ["benchmark", "category"])
def test_noise_is_faded_with_its_reason_and_forgetting_is_strong(server, page, level):
    page.goto(f"{server.url}/?level={level}")
    page.wait_for_selector("#heatmap .main-svg")
    traces = page.evaluate(TRACES)
    assert [t["name"] for t in traces] == ["cells", "faded"]
    assert (traces[0]["zmin"], traces[0]["zmax"]) == (0, 0.25)  # the documented default
    # the veil: a translucent white over the faded cells, leaving hover and click to the cell
    assert traces[1]["hoverinfo"] == "skip" and "rgba(255,255,255,0.7)" in str(traces[1]["colours"])
    faded, strong = _cells(traces, True), _cells(traces, False)
    assert faded and strong
    assert {row for row, _, _ in faded} == {SELF_ROW}
    assert {row for row, _, _ in strong} == {"forgot"}
    noise = "F_true's interval does not clear the noise floor"
    for _, _, why in faded:
        assert why.startswith("faded: ") and noise in why
        assert "not significant (BH-adjusted p" in why  # a McNemar test at both levels
    assert all(why.startswith("survives: ") for _, _, why in strong)
    # a faded cell's number is written on the veil (dark on its light colour), not under it
    written = page.evaluate(
        "(() => { const [c, v] = document.getElementById('heatmap').data;"
        " return c.z.map((r, i) => r.map((z, j) => [z !== null, v.z[i][j] !== null,"
        " c.text[i][j], v.text[i][j]])).flat(); })()"
    )
    for present, veiled, under, over in written:
        if present:
            assert (bool(under), bool(over)) == ((False, True) if veiled else (True, False))
    assert page.evaluate("document.getElementById('heatmap').data[1].textfont.color") == "#4a5263"
    row, column, why = faded[0]
    hover = _hover_cell(page, row, column)
    assert why in hover, hover
    _assert_inert(page.evaluate(CHART_STATE), SELF)  # the label is text: no bold markup
    page.mouse.move(0, 0)
    row, column, why = strong[0]
    assert "clears the noise floor" in why and why in _hover_cell(page, row, column)


def test_zmax_in_the_url_sets_the_colour_range(server, page):
    page.goto(f"{server.url}/?metric=net&zmax=0.1")
    page.wait_for_selector("#heatmap .main-svg")
    cells = page.evaluate(TRACES)[0]
    assert (cells["zmin"], cells["zmax"]) == (-0.1, 0.1)
    assert page.input_value("input[name=zmax]") == "0.1"
