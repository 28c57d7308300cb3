"""The "Import results" page in Chromium: log in, choose a table file, then a lighteval output
folder (sent as a tar the page builds), and see each job finish; a missing model is refused on
the page with the command line's words."""

from __future__ import annotations

import pytest
from forgetmap.demo.layouts.paper import make_items, write_run

from tests.support.accessibility import serious_violations
from tests.support.cli import Cli
from tests.support.server import Server
from tests.support.tables import BASE, POST, rows_for, write_csv

TASK = "community|bbh_reasoning_letter:navigate|0"


@pytest.fixture
def served(tmp_path):
    db = tmp_path / "app.duckdb"
    token = Cli(db)("token", "create", "alice", "--role", "submit").stdout.strip()
    server = Server(db)
    yield server, token
    server.stop()


def test_upload_a_file_and_a_folder_and_watch_the_jobs_finish(served, page, tmp_path):
    server, token = served
    table = write_csv(tmp_path / "base.csv", rows_for("base", BASE))
    tree = tmp_path / "lighteval-out"
    write_run(
        tree,
        "org/le-base",
        "2025-07-01T10-00-00.000001",
        {TASK: (make_items("navigate", 6), [1, 1, 0, 0, 1, 0])},
        style="base",
        seed=0,
    )

    page.goto(server.url + "/import")
    assert "/login" in page.url  # the page needs a login
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_url("**/import")

    page.select_option("#import-kind", "lm-eval")
    page.set_input_files("#import-file", str(table))
    page.click("#import-submit")
    page.wait_for_selector("#import-error:not([hidden])")
    assert "import lm-eval needs --model NAME" in page.inner_text("#import-error")

    page.select_option("#import-kind", "table")
    page.click("#import-submit")
    page.wait_for_url("**/jobs/*")
    page.wait_for_selector("#job-status:text('done')", timeout=30_000)
    assert "imported 28 new rows (0 already stored) for base" in page.inner_text("#import-summary")
    assert "base.csv" in page.inner_text("#job-subject")

    page.goto(server.url + "/import")
    page.select_option("#import-kind", "lighteval")
    page.set_input_files("#import-folder", str(tree))  # the folder input: the page tars it
    page.click("#import-submit")
    page.wait_for_url("**/jobs/*")
    page.wait_for_selector("#job-status:text('done')", timeout=30_000)
    assert "imported 6 new rows (0 already stored) for org/le-base" in page.inner_text(
        "#import-summary"
    )
    assert page.inner_text("#import-file-name") == "lighteval-out.tar"


KIND_FIELDS = {  # what each kind shows of the fields that belong to some kinds only
    "table": set(),
    "lm-eval": {"metric", "filter", "seed"},
    "lighteval": {"metric", "seed", "latest"},
    "inspect": {"scorer"},
    "eee": {"evaluation_result_id"},
}


def test_each_kind_shows_only_its_own_fields(served, page):
    server, token = served
    page.goto(server.url + "/import")
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_url("**/import")
    for kind, shown in KIND_FIELDS.items():
        page.select_option("#import-kind", kind)
        visible = {
            name
            for name in ("metric", "filter", "scorer", "evaluation_result_id", "seed", "latest")
            if page.locator(f"#import-form [name={name}]").is_visible()
        }
        assert visible == shown, kind


def test_the_whole_path_in_the_browser_with_no_command_line(served, page, tmp_path):
    """Upload two models' results, pair them, see the map, open a cell, judge a flip and open its
    question in the atlas: every step on a page (the token is the only thing made outside)."""
    server, token = served
    page.goto(server.url + "/import")
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_url("**/import")
    for model, data in (("base", BASE), ("post", POST)):
        page.goto(server.url + "/import")
        page.select_option("#import-kind", "table")
        page.set_input_files(
            "#import-file", str(write_csv(tmp_path / f"{model}.csv", rows_for(model, data)))
        )
        page.click("#import-submit")
        page.wait_for_url("**/jobs/*")
        page.wait_for_selector("#job-status:text('done')", timeout=30_000)
        assert f"pair {model} with another model" in page.inner_text("#import-next")
    page.click("#import-next a.pair-it")  # the last import's model: post, preselected as base
    page.wait_for_url("**/pairs/new?base=post")
    page.select_option("#pair-base", "base")
    page.select_option("#pair-post", "post")
    page.fill("#pair-label", "base → post, by hand")
    page.click("#pair-submit")
    page.wait_for_url("**/pairs/1")
    assert page.inner_text("h1") == "base → post, by hand"

    page.goto(server.url + "/?level=benchmark")
    page.wait_for_function("document.getElementById('heatmap')._fullLayout !== undefined")
    columns = page.evaluate("JSON.parse(document.getElementById('map-data').textContent).columns")
    column = next(i for i, c in enumerate(columns) if "anatomy" in c)
    x, y = page.evaluate(
        """(col) => { const el = document.getElementById('heatmap');
                      const fl = el._fullLayout, box = el.getBoundingClientRect();
                      return [box.left + fl.xaxis._offset + fl.xaxis.l2p(col),
                              box.top + fl.yaxis._offset + fl.yaxis.l2p(0)]; }""",
        column,
    )
    page.mouse.click(x, y)
    page.wait_for_url("**/pairs/1/samples?transition=10**")
    page.locator("tr.sample-row").first.click()
    page.wait_for_selector("#sample-view")
    assert page.locator("#sample-view .seed").count() == 2  # both seeds judged side by side
    page.click("#atlas-question-link")
    page.wait_for_url("**/atlas/question?**")
    assert "base → post, by hand" in page.inner_text("main")


def test_a_pair_made_on_the_page_is_checked_like_pair_add(served, page, tmp_path):
    server, token = served
    page.goto(server.url + "/pairs/new")
    assert "/login" in page.url  # pairing needs a login with role submit
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_url("**/pairs/new")
    assert page.locator("#too-few-models").count() == 1  # nothing to pair yet
    page.goto(server.url + "/import")
    page.select_option("#import-kind", "table")
    page.set_input_files(
        "#import-file",
        str(write_csv(tmp_path / "both.csv", rows_for("a", BASE) + rows_for("b", POST))),
    )
    page.click("#import-submit")
    page.wait_for_selector("#job-status:text('done')", timeout=30_000)
    page.goto(server.url + "/pairs/new?base=a")
    page.select_option("#pair-post", "a")
    page.select_option("#pair-stage", "sft")
    page.click("#pair-submit")
    assert "a pair needs two different models" in page.inner_text("#pair-error")
    assert page.locator("#pair-stage").input_value() == "sft"  # what was chosen stays chosen


def test_axe_finds_no_serious_or_critical_violation_on_the_forms(served, page, tmp_path):
    """axe-core on the pages that need a login: the forms and a finished import's job page."""
    server, token = served
    page.goto(server.url + "/import")
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_url("**/import")
    page.select_option("#import-kind", "table")
    page.set_input_files("#import-file", str(write_csv(tmp_path / "a.csv", rows_for("a", BASE))))
    page.click("#import-submit")
    page.wait_for_selector("#job-status:text('done')", timeout=30_000)
    found = {"the job page": serious_violations(page)}
    for path in ("/import", "/submit", "/pairs/new", "/pairs/suggest"):
        page.goto(server.url + path)
        page.wait_for_load_state("networkidle")
        found[path] = serious_violations(page)
        page.set_viewport_size({"width": 390, "height": 844})  # and on a phone, nothing too wide
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, path
        page.set_viewport_size({"width": 1280, "height": 720})
    assert found == {path: [] for path in found}
