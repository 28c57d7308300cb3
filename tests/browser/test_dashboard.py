"""The dashboard in a real browser: map -> heatmap click -> drill-down -> sample; output is inert."""

from __future__ import annotations

import csv

import pytest

from tests.support.server import Server

XSS = '<script>alert("xss")</script><img src=x onerror=alert("img")> Answer: B'


def _rows(model: str, pattern: dict) -> list[dict]:
    rows = []
    for (bench, category, k), values in pattern.items():
        for i, c in enumerate(values):
            for seed in (0, 1):
                rows.append(
                    {
                        "model": model,
                        "benchmark": bench,
                        "sample_id": f"{bench}-{i}",
                        "seed": seed,
                        "correct": c,
                        "num_choices": k,
                        "category": category,
                        "prompt": f"Q{i} of {bench}: pick one",
                        "gold": "A",
                        "prediction": "A" if c else "B",
                        "response": (
                            XSS
                            if (model == "post" and bench == "mmlu_anatomy" and i == 0)
                            else f"Reasoning about {bench} {i}. Answer: {'A' if c else 'B'}"
                        ),
                    }
                )
    return rows


BASE = {("mmlu_anatomy", "", 4): [1, 1, 1, 1, 0, 0], ("piqa", "", 2): [1, 1, 0, 0]}
POST = {("mmlu_anatomy", "", 4): [0, 1, 1, 0, 0, 1], ("piqa", "", 2): [1, 0, 0, 1]}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from click.testing import CliRunner
    from forgetmap.cli import main

    tmp = tmp_path_factory.mktemp("browser")
    db = tmp / "fm.duckdb"
    for name, pattern in (("base", BASE), ("post", POST), ("other", POST)):
        path = tmp / f"{name}.csv"
        rows = _rows(name, pattern)
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        assert (
            CliRunner().invoke(main, ["--db", str(db), "import", "table", str(path)]).exit_code == 0
        )
    runner = CliRunner()
    assert (
        runner.invoke(
            main,
            [
                "--db",
                str(db),
                "pair",
                "add",
                "base",
                "post",
                "--label",
                "base → post",
                "--stage",
                "instruct",
            ],
        ).exit_code
        == 0
    )
    assert (
        runner.invoke(
            main, ["--db", str(db), "pair", "add", "other", "post", "--label", "other → post"]
        ).exit_code
        == 0
    )
    srv = Server(db)
    yield srv
    srv.stop()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.dialogs = dialogs
    yield page
    context.close()


def _click_cell(page, row: int, col: int) -> None:
    """Click the heatmap cell at (row, col) through Plotly's own axis mapping."""
    page.wait_for_function("document.getElementById('heatmap')._fullLayout !== undefined")
    x, y = page.evaluate(
        """([row, col]) => {
            const el = document.getElementById('heatmap');
            const fl = el._fullLayout, box = el.getBoundingClientRect();
            return [box.left + fl.xaxis._offset + fl.xaxis.l2p(col),
                    box.top + fl.yaxis._offset + fl.yaxis.l2p(row)];
        }""",
        [row, col],
    )
    page.mouse.click(x, y)


def test_map_cell_click_leads_to_flipped_samples_and_a_sample(server, page):
    page.goto(server.url + "/?level=benchmark")
    assert page.locator("#heatmap .main-svg").first.is_visible()
    columns = page.evaluate("JSON.parse(document.getElementById('map-data').textContent).columns")
    assert columns == ["piqa", "mmlu:anatomy"]  # Commonsense before Science/Tech
    _click_cell(page, 0, columns.index("mmlu:anatomy"))  # first row: pair "base → post"
    page.wait_for_url("**/pairs/1/samples?transition=10&benchmark=mmlu%3Aanatomy")
    # mmlu_anatomy 1->0 flips: samples 0 and 3 (both seeds)
    assert (
        page.locator("#sample-count")
        .inner_text()
        .startswith("2 questions 1→0 forgotten on mmlu:anatomy")
    )
    assert page.locator("tr.sample-row").count() == 2
    page.locator("tr.sample-row").first.click()
    page.wait_for_selector("#sample-view")
    view = page.locator("#sample-view")
    assert "mmlu:anatomy · mmlu_anatomy-0" in view.locator("h2").inner_text()
    assert view.locator(".seed").count() == 2
    # the post model's answer is untrusted text: shown literally, never run
    assert '<script>alert("xss")</script>' in view.inner_text()
    assert '<img src=x onerror=alert("img")>' in view.inner_text()
    assert page.locator("#sample-view img").count() == 0
    assert page.locator("#sample-view script").count() == 0
    page.wait_for_timeout(300)
    assert page.dialogs == []


def test_transition_filter_search_and_url_state(server, page):
    page.goto(server.url + "/pairs/1/samples")
    assert page.locator("#sample-count").inner_text().startswith("3 questions 1→0")
    page.locator("label.pill.t01").click()
    page.wait_for_function("document.getElementById('sample-count').innerText.includes('0→1')")
    assert "transition=01" in page.url
    # 0->1: mmlu_anatomy sample 5 and piqa sample 3
    assert page.locator("#sample-count").inner_text().startswith("2 questions 0→1")
    page.fill("input[name=q]", "Q3 of piqa")
    page.wait_for_function(
        "document.getElementById('sample-count').innerText.startsWith('1 question ')"
    )
    assert "q=Q3%20of%20piqa" in page.url
    page.reload()  # state lives in the URL
    assert page.locator("#sample-count").inner_text().startswith("1 question 0→1")


def test_map_metric_switch_keeps_state_in_url_and_pair_page_sorts(server, page):
    page.goto(server.url + "/")
    page.select_option("#metric", "net")
    assert "metric=net" in page.url
    # the page draws the values the app computed (app/core/metrics.py), it computes none itself
    for metric in ("net", "f_rel"):
        page.goto(server.url + f"/?level=benchmark&metric={metric}")
        page.wait_for_function("document.getElementById('heatmap').data !== undefined")
        drawn, served = page.evaluate(
            """(metric) => {
                const data = JSON.parse(document.getElementById('map-data').textContent);
                const z = document.getElementById('heatmap').data[0].z.flat();
                const cells = data.cells.map((c) => c[metric]);
                const key = (v) => (v === null ? "null" : v.toFixed(12));
                return [z.map(key).sort(), cells.map(key).sort()];
            }""",
            metric,
        )
        assert drawn == served and any(v not in ("null", "0.000000000000") for v in served)
    page.goto(server.url + "/pairs/1")
    assert page.locator("#benchmarks tbody tr").count() == 2
    page.locator("#benchmarks th", has_text="benchmark").click()
    first = page.locator("#benchmarks tbody tr").first.locator("td").first.inner_text()
    page.locator("#benchmarks th", has_text="benchmark").click()
    assert page.locator("#benchmarks tbody tr").first.locator("td").first.inner_text() != first


def test_empty_map_explains_what_to_do(browser, tmp_path):
    from forgetmap.db import open_store

    open_store(tmp_path / "empty.duckdb").close()
    srv = Server(tmp_path / "empty.duckdb")
    try:
        page = browser.new_page()
        page.goto(srv.url + "/")
        text = page.inner_text("main")
        assert "No model pairs yet" in text and "forgetmap import table" in text
        page.close()
    finally:
        srv.stop()


def test_theory_lab_renders_four_plots(server, page):
    page.goto(server.url + "/theory?separation=5&steps=150")
    for plot in ("plot-weights", "plot-drift", "plot-replay", "plot-starvation"):
        page.wait_for_selector(f"#{plot} .main-svg")
    assert page.locator("input[name=separation]").input_value() == "5.0"
    assert page.dialogs == []
