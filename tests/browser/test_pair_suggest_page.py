"""Suggested pairs in Chromium: from the empty map to ``/pairs/suggest``, a login with role
submit, one suggestion ticked and added, and the pair on the map."""

from __future__ import annotations

import os

import pytest

from tests.support.cli import Cli
from tests.support.model_cache import write_card
from tests.support.server import Server

MODELS = ["org/Base-7B", "org/Base-7B-Instruct", "org/Base-7B-DPO"]


@pytest.fixture
def served(tmp_path):
    cache = tmp_path / "hub"
    write_card(cache, "org/Base-7B-Instruct", "org/Base-7B")
    lines = ["model,benchmark,sample_id,correct"]
    lines += [
        f"{m},mmlu:anatomy,q{i},{(i + n) % 2}" for n, m in enumerate(MODELS) for i in range(4)
    ]
    (tmp_path / "rows.csv").write_text("\n".join(lines) + "\n")
    cli = Cli(tmp_path / "app.duckdb")
    cli("import", "table", tmp_path / "rows.csv")
    token = cli("token", "create", "alice", "--role", "submit").stdout.strip()
    # the app reads the cards: its own process, its own HF_HUB_CACHE
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    server = Server(cli.db, env=env)
    yield server, token
    server.stop()


def test_tick_a_suggestion_and_see_the_pair_on_the_map(served, page):
    server, token = served
    page.goto(server.url + "/")
    page.click("#suggest-link")  # the empty map points there
    page.wait_for_url("**/login**")  # the page needs a login with role submit
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_url("**/pairs/suggest")

    rows = page.locator("#suggestions tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).inner_text().split("\t")[1:5] == [
        "org/Base-7B",
        "org/Base-7B-Instruct",
        "model card, name",
        "instruct",
    ]
    page.check("#suggestions tr:has-text('org/Base-7B-DPO') input[type=checkbox]")
    page.click("#suggest-submit")
    page.wait_for_url("**/pairs/suggest?added=1")
    assert "Added 1 pair: Base-7B -> Base-7B-DPO." in page.inner_text("#added-pairs")
    assert page.locator("#suggestions tbody tr").count() == 1  # the instruct pair is left

    page.click("#added-pairs a[href='/']")
    page.wait_for_url(server.url + "/")
    listed = page.inner_text("#pair-list")
    assert "Base-7B -> Base-7B-DPO" in listed and "org/Base-7B → org/Base-7B-DPO" in listed
