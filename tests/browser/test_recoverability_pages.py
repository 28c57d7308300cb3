"""Recoverability in a real browser: the map's optional column and the pair page's section."""

from __future__ import annotations

import csv

import httpx
import pytest

from tests.support import recoverability_fixtures as fixtures
from tests.support.server import Server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from click.testing import CliRunner
    from forgetmap.cli import main

    tmp = tmp_path_factory.mktemp("browser-recovery")
    db = tmp / "fm.duckdb"
    run = CliRunner().invoke
    for model, correct in (("base", [1, 1, 1, 0]), ("post", [0, 1, 0, 0])):
        path = tmp / f"{model}.csv"
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["model", "benchmark", "sample_id", "correct", "num_choices"])
            writer.writerows([model, "piqa", f"s{i}", c, 2] for i, c in enumerate(correct))
        assert run(main, ["--db", str(db), "import", "table", str(path)]).exit_code == 0
    assert run(main, ["--db", str(db), "pair", "add", "base", "post"]).exit_code == 0
    token = run(
        main, ["--db", str(db), "token", "create", "worker", "--role", "admin"]
    ).stdout.strip()
    srv = Server(db)
    with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {token}"}) as http:
        job = http.post(
            "/api/jobs",
            json={
                "kind": "recover",
                "base": {"name": "base", "path": "org/base"},
                "post": {"name": "post", "path": "org/post"},
                "corpus": {"source": "local:web.jsonl"},
                "options": {"n_boot": 500},
            },
        ).json()
        shard = http.get(f"/api/jobs/{job['id']}").json()["shards"][0]["id"]
        http.post(f"/api/shards/{shard}/start", json={"worker": "test"}).raise_for_status()
        http.post(f"/api/shards/{shard}/recovery", json=fixtures.upload()).raise_for_status()
        http.post(f"/api/shards/{shard}/finish", json={}).raise_for_status()
    yield srv
    srv.stop()


def test_map_column_toggle_and_click_to_the_analysis(server, browser):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server.url + "/")
    assert page.locator("#recovery-data").count() == 0
    page.check("input[name=recovery]")
    page.wait_for_url("**recovery=1")
    page.wait_for_function("document.getElementById('heatmap')._fullLayout !== undefined")
    # the map, its veil over cells that do not survive, and the recovery column
    assert page.evaluate("document.getElementById('heatmap').data.length") == 3
    # the post model's symmetric share under bias + temperature: (3 - 0.85*3 - (2 - 0.85*2)) / 1
    assert page.evaluate("document.getElementById('heatmap').data[2].z[0][0]") == pytest.approx(
        0.15
    )
    assert "15.0%" in page.inner_text("#pair-list")
    x, y = page.evaluate(
        """() => {
            const el = document.getElementById('heatmap');
            const fl = el._fullLayout, box = el.getBoundingClientRect();
            return [box.left + fl.xaxis2._offset + fl.xaxis2.l2p(0),
                    box.top + fl.yaxis._offset + fl.yaxis.l2p(0)];
        }"""
    )
    page.mouse.click(x, y)
    page.wait_for_url("**/pairs/1#recoverability")
    assert page.locator("#recovery-table tbody tr").count() == 16  # 4 models x 4 corrections
    assert errors == []
    page.close()


def test_pair_page_section_reads_with_its_controls(server, browser):
    page = browser.new_page()
    page.goto(server.url + "/pairs/1")
    section = page.locator("#recoverability")
    text = section.inner_text()
    assert "How to read a share" in text and "noise control" in text
    first = section.locator("#recovery-table tbody tr").first.inner_text()
    assert "post-trained model" in first and "bias" in first and "40.0 [" in first
    assert section.locator("tr.yardstick").count() == 4
    href = section.locator("a", has_text="CSV").get_attribute("href")
    assert page.request.get(server.url + href).text().startswith('"doc_id","split","n_tokens"')
    page.close()
