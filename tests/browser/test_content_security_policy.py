"""The pages under the app's Content-Security-Policy (forgetmap.web.headers), in a real browser that
enforces it: a login, the charts, an htmx search and Swagger UI work, and the browser reports no
violation. (The other browser tests bypass the policy: Playwright's polling waits use eval.)"""

from __future__ import annotations

import csv

import pytest
from click.testing import CliRunner
from forgetmap.cli import main

from tests.support.server import Server

BASE = {"piqa": [1, 1, 1, 0, 0, 1], "mmlu_anatomy": [1, 0, 1, 1]}
POST = {"piqa": [0, 1, 1, 1, 0, 0], "mmlu_anatomy": [1, 1, 0, 1]}
PAGES = (
    "/",
    "/?level=benchmark",
    "/pairs/1",
    "/pairs/1/samples",
    "/theory?steps=40",
    "/atlas",
    "/jobs",
    "/submit",
    "/import",
    "/pairs/suggest",
    "/docs",
)
DRAWN = {
    "/": "svg.main-svg",
    "/pairs/1": "svg.main-svg",
    "/theory?steps=40": "svg.main-svg",
    "/docs": "#swagger-ui .opblock",
}  # what each page's scripts draw


def _write(path, model: str, pattern: dict) -> None:
    rows = [
        {
            "model": model,
            "benchmark": bench,
            "sample_id": f"q{i}",
            "seed": 0,
            "correct": c,
            "num_choices": 4,
            "prompt": f"Q{i} of {bench}",
        }
        for bench, values in pattern.items()
        for i, c in enumerate(values)
    ]
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("csp")
    db = tmp / "fm.duckdb"
    runner = CliRunner()
    for model, pattern in (("base", BASE), ("post", POST)):
        table = tmp / f"{model}.csv"
        _write(table, model, pattern)
        assert runner.invoke(main, ["--db", str(db), "import", "table", str(table)]).exit_code == 0
    assert runner.invoke(main, ["--db", str(db), "pair", "add", "base", "post"]).exit_code == 0
    token = runner.invoke(main, ["--db", str(db), "token", "create", "alice", "--role", "admin"])
    srv = Server(db)
    yield srv, token.output.strip()
    srv.stop()


def test_the_pages_work_under_the_policy_without_a_violation(served, browser):
    server, token = served
    context = browser.new_context(bypass_csp=False, viewport={"width": 1300, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda m: (
            problems.append(f"{page.url}: {m.text}")
            if m.type == "error" and "Content Security Policy" in m.text
            else None
        ),
    )
    page.on("pageerror", lambda e: problems.append(f"{page.url}: {e}"))
    try:
        page.goto(server.url + "/login")
        page.fill("input[name=token]", token)
        page.click("button[type=submit]")
        page.wait_for_url(server.url + "/")
        assert "alice" in page.locator(".who").inner_text()
        for path in PAGES:
            response = page.goto(server.url + path)
            assert response.status == 200, path
            assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
            if path in DRAWN:
                page.locator(DRAWN[path]).first.wait_for(timeout=15_000)
        page.goto(server.url + "/pairs/1/samples")
        page.fill("input[name=q]", "Q3 of piqa")  # htmx swaps the rows in
        page.locator("#sample-count", has_text="matching").wait_for(timeout=10_000)
    finally:
        context.close()
    assert problems == []
