"""The dashboard in a real browser: map -> heatmap click -> drill-down -> sample; output is
inert."""

from __future__ import annotations

import csv

import pytest

from tests.support.accessibility import serious_violations
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


def _import_tables(db, patterns: dict[str, dict]) -> None:
    """Each model's rows (``_rows``) as a CSV beside ``db``, imported with
    `forgetmap import table`."""
    from click.testing import CliRunner
    from forgetmap.cli import main

    for name, pattern in patterns.items():
        path = db.parent / f"{name}.csv"
        rows = _rows(name, pattern)
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        result = CliRunner().invoke(main, ["--db", str(db), "import", "table", str(path)])
        assert result.exit_code == 0, result.output


BASE = {("mmlu_anatomy", "", 4): [1, 1, 1, 1, 0, 0], ("piqa", "", 2): [1, 1, 0, 0]}
POST = {("mmlu_anatomy", "", 4): [0, 1, 1, 0, 0, 1], ("piqa", "", 2): [1, 0, 0, 1]}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from click.testing import CliRunner
    from forgetmap.cli import main

    tmp = tmp_path_factory.mktemp("browser")
    db = tmp / "fm.duckdb"
    _import_tables(db, {"base": BASE, "post": POST, "other": POST})
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
    assert columns == ["piqa", "mmlu:anatomy", "Total"]  # Commonsense before Science/Tech
    _click_cell(page, 0, columns.index("mmlu:anatomy"))  # first row: pair "base → post"
    page.wait_for_url("**/pairs/1/samples?transition=10&benchmark=mmlu%3Aanatomy")
    # mmlu_anatomy 1->0 flips: samples 0 and 3 (both seeds)
    assert (
        page.locator("#sample-count")
        .inner_text()
        .startswith("2 questions 1→0 forgotten on mmlu:anatomy")
    )
    assert page.locator("tr.sample-row").count() == 2
    # the count beside what chance and seed noise would give (per seed)
    assert page.inner_text("#flips-expected").startswith("Per seed, 1→0 flips on mmlu:anatomy: ")
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
        for link, path in (("#empty-import", "/import"), ("#empty-submit", "/submit")):
            assert page.get_attribute(link, "href") == path  # the browser's way, no CLI
        page.goto(srv.url + "/series")
        assert "No series yet" in page.inner_text("#no-series")
        page.close()
    finally:
        srv.stop()


def test_theory_lab_renders_four_plots(server, page):
    page.goto(server.url + "/theory?separation=5&steps=150")
    for plot in ("plot-weights", "plot-drift", "plot-replay", "plot-starvation"):
        page.wait_for_selector(f"#{plot} .main-svg")
    assert page.locator("input[name=separation]").input_value() == "5.0"
    assert page.dialogs == []


def _plot(page, element_id: str) -> dict:
    return page.evaluate(
        """id => { const el = document.getElementById(id);
                   return { data: el.data.map(t => ({ name: t.name, x: Array.from(t.x), \
y: Array.from(t.y) })),
                            range: el._fullLayout.xaxis.range,
                            shapes: (el.layout.shapes || []).map(s => s.x0) }; }""",
        element_id,
    )


@pytest.mark.parametrize("replay", [0.1, 0.8])
def test_the_chosen_replay_is_drawn_on_the_plots_it_concerns(server, page, replay):
    """The replay fraction typed in the theory lab's form is drawn in every plot it concerns, on
    each plot's axis (it changed one panel of four and fell off another's axis)."""
    page.goto(f"{server.url}/theory?replay={replay}&steps=200")
    page.wait_for_function(
        "['plot-weights', 'plot-replay', 'plot-starvation']"
        ".every(id => document.getElementById(id).data)"
    )
    weights = _plot(page, "plot-weights")
    with_replay = next(t for t in weights["data"] if "replay" in t["name"])
    assert f"λ = {replay}" in with_replay["name"]
    assert abs(with_replay["y"][-1] - replay) < 0.05  # SFT with replay settles at lambda
    curve = _plot(page, "plot-replay")
    low, high = curve["range"]
    assert low <= replay <= high  # on the axis, also beyond the default grid's 0.5
    assert curve["shapes"] == [replay]  # and marked
    assert all(replay in t["x"] for t in curve["data"])
    starvation = _plot(page, "plot-starvation")
    assert any(f"λ = {replay}" in t["name"] for t in starvation["data"])


def percent_tick_labels(page, element_id: str, axis: str, low: float, high: float) -> list[str]:
    """The tick labels Plotly draws on a percentage axis of a chart zoomed to [low, high]."""
    page.evaluate(
        "([id, axis, low, high]) => Plotly.relayout(id, {[axis + '.range']: [low, high]})",
        [element_id, axis, low, high],
    )
    return page.evaluate(
        "sel => [...document.querySelectorAll(sel)].map(t => t.textContent)",
        f"#{element_id} .{axis[0]}tick text",
    )


@pytest.mark.parametrize("high", [0.03, 0.004, 0.6])
def test_percentage_ticks_are_distinct_at_any_zoom(server, page, high):
    """A percentage axis over a small range labels each tick apart ("3%, 3%, 2%, 2%" before)."""
    page.goto(server.url + "/pairs/1")
    page.wait_for_selector("#pair-chart .main-svg")
    labels = percent_tick_labels(page, "pair-chart", "xaxis", 0, high)
    assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
    assert all(label.endswith("%") for label in labels)


def test_swagger_can_authorise_and_sends_the_token(server, page):
    """/docs has an Authorize button; a token given there goes with the calls it tries."""
    page.goto(server.url + "/docs")
    page.click("button.authorize")
    page.fill(".auth-container input", "a-token-for-docs")
    page.click(".auth-btn-wrapper button.authorize")
    page.click("button.btn-done")
    sent = []
    page.on(
        "request",
        lambda r: sent.append(r.headers.get("authorization")) if "/api/map" in r.url else None,
    )
    page.click("#operations-api-api_map_api_map_get .opblock-summary")
    page.click("#operations-api-api_map_api_map_get .try-out__btn")
    page.click("#operations-api-api_map_api_map_get .execute")
    page.wait_for_selector("#operations-api-api_map_api_map_get .live-responses-table")
    assert sent == ["Bearer a-token-for-docs"]


def test_the_map_has_a_heading_and_named_size_inputs(server, page):
    page.goto(server.url + "/")
    assert page.locator("h1").all_inner_texts() == ["Forgetting map"]
    for name in ("smallest size, billions of parameters", "largest size, billions of parameters"):
        assert page.get_by_label(name).count() == 1, name


def test_enter_opens_a_focused_row_of_the_drill_down(server, page):
    page.goto(server.url + "/pairs/1/samples")
    page.locator("tr.sample-row").first.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#sample-view")
    assert page.locator("#atlas-question-link").count() == 1


PHONE_PAGES = (
    "/",
    "/?level=benchmark",
    "/pairs/1",
    "/pairs/1/samples",
    "/pairs/1/versus/2",
    "/atlas",
    "/atlas/question?benchmark=piqa&sample_id=piqa-0",
    "/theory",
    "/jobs",
    "/series",
    "/login",
)


def test_every_page_fits_a_phone_and_the_heatmap_keeps_readable_cells(server, browser):
    """At 390 px nothing is wider than the screen (a wide table or the heatmap scrolls in its own
    box), and heatmap cells keep a readable width instead of shrinking to slivers."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        for path in PHONE_PAGES:
            page.goto(server.url + path)
            page.wait_for_load_state("networkidle")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, (path, width)
        for level, least in (("category", 50), ("benchmark", 24)):
            page.goto(f"{server.url}/?level={level}")
            page.wait_for_function("document.getElementById('heatmap')._fullLayout !== undefined")
            cell = page.evaluate(
                "(() => { const x = document.getElementById('heatmap')._fullLayout.xaxis;"
                " return x._length / x._categories.length; })()"
            )
            assert cell >= least, (level, cell)
    finally:
        context.close()


READ_PAGES = (
    "/",
    "/?level=benchmark",
    "/pairs/1",
    "/pairs/1/samples",
    "/pairs/1/versus/2",
    "/atlas",
    "/atlas/question?benchmark=piqa&sample_id=piqa-0",
    "/theory",
    "/jobs",
    "/series",
    "/login",
)


def test_axe_finds_no_serious_or_critical_violation_on_the_read_pages(server, page):
    """axe-core, the engine browsers' own audits use, on every page a reader sees."""
    found = {}
    for path in READ_PAGES:
        page.goto(server.url + path)
        page.wait_for_load_state("networkidle")
        found[path] = serious_violations(page)
    assert found == {path: [] for path in READ_PAGES}


def test_a_missing_cell_is_drawn_as_missing_not_as_a_pale_zero(browser, tmp_path):
    """A pair with no results on a benchmark: a grey cell that says so, apart from a zero."""
    from click.testing import CliRunner
    from forgetmap.cli import main

    db = tmp_path / "fm.duckdb"
    only_piqa = {key: values for key, values in POST.items() if key[0] == "piqa"}
    _import_tables(db, {"base": BASE, "post": POST, "short": only_piqa})
    for post in ("post", "short"):
        assert (
            CliRunner().invoke(main, ["--db", str(db), "pair", "add", "base", post]).exit_code == 0
        )
    srv = Server(db)
    page = browser.new_page()
    try:
        page.goto(srv.url + "/?level=benchmark")
        page.wait_for_function("document.getElementById('heatmap')._fullLayout !== undefined")
        drawn = page.evaluate(
            """() => { const data = document.getElementById('heatmap').data;
                       const m = data.find(t => t.name === 'missing');
                       return { x: m.x, y: m.y, z: m.z, cells: data[0].z }; }"""
        )
        anatomy = next(j for j, column in enumerate(drawn["x"]) if "anatomy" in column)
        short = next(i for i, name in enumerate(drawn["y"]) if "short" in name)
        assert drawn["z"][short][anatomy] == 1 and drawn["cells"][short][anatomy] is None
        assert all(
            v is None
            for i, row in enumerate(drawn["z"])
            for j, v in enumerate(row)
            if (i, j) != (short, anatomy)
        )
    finally:
        page.close()
        srv.stop()


def test_rows_sort_by_total_or_name_and_the_order_is_in_the_url(server, page):
    """Net (BT_true - F_true): base -> post forgets, other -> post (the same answers) does not, so
    the largest Total first is the reverse of the order the pairs were added in."""
    page.goto(server.url + "/?metric=net")
    page.wait_for_function("document.getElementById('heatmap')._fullLayout !== undefined")
    totals = page.evaluate(
        """() => Object.fromEntries(JSON.parse(document.getElementById('map-data').textContent)
               .cells.filter(c => c.column === 'Total').map(c => [c.pair_id, c.net]))"""
    )
    labels = {1: "base → post", 2: "other → post"}
    assert totals["2"] > totals["1"]
    assert page.evaluate("document.getElementById('heatmap').data[0].y") == list(labels.values())
    page.select_option("#order", "total")
    page.wait_for_function("location.search.includes('order=total')")
    rows = page.evaluate("document.getElementById('heatmap').data[0].y")
    assert rows == ["other → post", "base → post"]
    page.select_option("#order", "name")
    page.wait_for_function("location.search.includes('order=name')")
    assert page.evaluate("document.getElementById('heatmap').data[0].y") == sorted(labels.values())
    page.goto(server.url + "/?order=total")  # the order from the URL, as the page opens
    assert page.locator("#order").input_value() == "total"


def test_the_benchmark_level_has_the_category_maps_total_and_groups_by_category(server, page):
    """The benchmarks stand under their categories, the category map's Total after them (the
    same numbers); a click on Total opens every flip of the pair."""
    totals = {
        c["pair_id"]: c["f_true"]
        for c in page.request.get(server.url + "/api/map/cells?level=category").json()
        if c["column"] == "Total"
    }
    page.goto(server.url + "/?level=benchmark")
    page.wait_for_function("document.getElementById('heatmap')._fullLayout !== undefined")
    drawn = page.evaluate(
        "(() => { const el = document.getElementById('heatmap'), t = el.data[0];"
        " return { x: t.x, y: t.y, z: t.z, groups: el.layout.annotations.map("
        "a => [a.x, a.text]), lines: el.layout.shapes.map(s => s.x0) }; })()"
    )
    assert drawn["x"] == ["piqa", "mmlu:anatomy", "Total"]
    # each category named over its columns, a line between two
    assert drawn["groups"] == [[0, "Commonsense"], [1, "Science/Tech"], [2, "Total"]]
    assert drawn["lines"] == [0.5, 1.5]
    pair_of = {"base → post": 1, "other → post": 2}
    for row, name in enumerate(drawn["y"]):
        assert drawn["z"][row][2] == pytest.approx(totals[pair_of[name]])
    _click_cell(page, 0, 2)
    page.wait_for_url("**/pairs/1/samples?transition=10")


def test_similar_rows_together(browser, tmp_path):
    """Three recipes from one base, added as: forgets anatomy, changes nothing, forgets anatomy
    alike: with similar rows together the two that forget stand side by side."""
    from click.testing import CliRunner
    from forgetmap.cli import main

    db = tmp_path / "fm.duckdb"
    _import_tables(db, {"base": BASE, "forgets": POST, "keeps": BASE, "forgets-too": POST})
    for post in ("forgets", "keeps", "forgets-too"):
        done = CliRunner().invoke(main, ["--db", str(db), "pair", "add", "base", post])
        assert done.exit_code == 0, done.output
    srv = Server(db)
    page = browser.new_page()
    try:
        page.goto(srv.url + "/?level=benchmark&order=similar")
        page.wait_for_function("document.getElementById('heatmap')._fullLayout !== undefined")
        rows = page.evaluate("document.getElementById('heatmap').data[0].y")
        assert rows == ["base → forgets", "base → forgets-too", "base → keeps"]
        page.select_option("#order", "added")
        page.wait_for_function("location.search.includes('order=added')")
        rows = page.evaluate("document.getElementById('heatmap').data[0].y")
        assert rows == ["base → forgets", "base → keeps", "base → forgets-too"]
    finally:
        page.close()
        srv.stop()


def test_the_heatmap_is_reachable_by_keyboard(server, page):
    """Tab to the map, arrows frame a cell and say it, Enter opens it as a click does."""
    page.goto(server.url + "/?level=benchmark")
    page.wait_for_function("document.getElementById('heatmap')._fullLayout !== undefined")
    page.focus("#heatmap")
    assert page.text_content("#heatmap-focus").startswith("base → post, piqa: F_true ")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowUp")
    said = page.text_content("#heatmap-focus")
    assert said == "base → post, mmlu:anatomy: F_true 27.8% (faded)"  # as its hover says
    frame = page.evaluate("document.getElementById('heatmap').layout.shapes.at(-1)")
    assert (frame["type"], frame["x0"], frame["y0"]) == ("rect", 0.5, -0.5)
    page.keyboard.press("Enter")
    page.wait_for_url("**/pairs/1/samples?transition=10&benchmark=mmlu%3Aanatomy")
