"""The "Import results" page in Chromium: log in, choose a table file, then a lighteval output
folder (sent as a tar the page builds), and see each job finish; a missing model is refused on
the page with the command line's words."""

from __future__ import annotations

import pytest
from forgetmap.demo.layouts.paper import make_items, write_run

from tests.support.cli import Cli
from tests.support.server import Server
from tests.support.tables import BASE, rows_for, write_csv

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
    write_run(tree, "org/le-base", "2025-07-01T10-00-00.000001",
              {TASK: (make_items("navigate", 6), [1, 1, 0, 0, 1, 0])}, style="base", seed=0)  # fmt: skip

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
        visible = {name for name in ("metric", "filter", "scorer", "evaluation_result_id", "seed",
                                     "latest")
                   if page.locator(f"#import-form [name={name}]").is_visible()}  # fmt: skip
        assert visible == shown, kind
