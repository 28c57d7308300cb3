"""Forgotten, or not found, in Chromium: the pair page splits its 1->0 flips by cause and leaves a
cause out on request; the drill-down tags each flip with its cause and its filters keep or leave
out a cause (htmx swaps the rows in place). Files in lighteval's real layout
(tests/integration/test_answer_causes.py: two chat answers that name no option among 3 flips)."""

from __future__ import annotations

import pytest

from tests.integration.test_answer_causes import BASE_MODEL, POST_MODEL, TASK, _tree
from tests.support.server import Server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from click.testing import CliRunner
    from forgetmap.cli import main

    tmp = tmp_path_factory.mktemp("causes")
    db = tmp / "fm.duckdb"
    _tree(tmp / "out")
    run = CliRunner().invoke
    for model, name in ((BASE_MODEL, "base"), (POST_MODEL, "post")):
        path = tmp / "out" / "details" / model
        done = run(main, ["--db", str(db), "import", "lighteval", str(path), "--model", name])
        assert done.exit_code == 0, done.output
    assert run(main, ["--db", str(db), "pair", "add", "base", "post"]).exit_code == 0
    srv = Server(db)
    yield srv
    srv.stop()


def _pair_id(server) -> int:
    import httpx

    [pair] = httpx.get(f"{server.url}/api/pairs").json()
    return pair["id"]


def test_the_pair_page_splits_flips_by_cause_and_leaves_one_out(server, page):
    pair_id = _pair_id(server)
    page.goto(f"{server.url}/pairs/{pair_id}")
    split = page.text_content("#cause-split .count")
    assert "Of 3 1→0 flips" in split and "2 no answer" in split and "0 cut off" in split
    cells = page.eval_on_selector_all(
        "#benchmarks tbody tr td", "tds => tds.map(t => t.textContent.trim())"
    )
    assert cells[-2:] == ["2", "0"]  # 1->0 no answer, 1->0 cut
    page.select_option("#cause-split select[name=exclude]", "no_answer")
    page.click("#cause-split button[type=submit]")
    page.wait_for_url(f"**/pairs/{pair_id}?exclude=no_answer")
    assert "Of 1 1→0 flips (left out: no_answer)" in page.text_content("#cause-split .count")
    n = page.text_content("#benchmarks tbody tr td:nth-child(3)")
    assert n.strip() == "7"


def test_the_drill_down_tags_each_cause_and_filters_by_it(server, page):
    pair_id = _pair_id(server)
    page.goto(f"{server.url}/pairs/{pair_id}/samples?transition=10&benchmark={TASK}")
    assert page.locator("#rows .tag.cause-no_answer").count() == 2
    assert "3 questions" in page.text_content("#sample-count")
    page.select_option("#sample-filters select[name=cause]", "no_answer")
    page.wait_for_function(
        "() => document.getElementById('sample-count').textContent.startsWith('2 questions')"
    )
    assert "cause: no answer" in page.text_content("#sample-count")
    page.select_option("#sample-filters select[name=cause]", "")
    page.select_option("#sample-filters select[name=exclude]", "no_answer")
    page.wait_for_function(
        "() => document.getElementById('sample-count').textContent.startsWith('1 question ')"
    )
    assert page.locator("#rows .tag.cause-no_answer").count() == 0
    assert "left out: no_answer" in page.text_content("#sample-count")
