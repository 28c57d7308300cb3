"""`forgetmap pair suggest`: pairs proposed from model cards in the local hub cache (the real
huggingface_hub reading its own cache layout, offline) and from names; accepted by number or all;
both ways (on the file, and through a running app). The same suggestions as JSON
(``/api/pairs/suggestions``) and on the page ``/pairs/suggest``, which adds the ticked ones."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient
from forgetmap.web import create_app

from tests.support.cli import Cli, cli_both_ways
from tests.support.model_cache import use_cache, write_card

cli = cli_both_ways()

MODELS = [
    "org/Base-7B",
    "org/Base-7B-Instruct",
    "org/Base-7B-DPO",
    "org/Other-1B",
    "lab/tuned-model",
    "lab/unrelated",
]


def store_models(cli, tmp_path, monkeypatch) -> None:
    """The models above, imported, with two cards in the hub cache the commands read."""
    cache = tmp_path / "hub"
    write_card(cache, "lab/tuned-model", "org/Other-1B")
    write_card(cache, "org/Base-7B-Instruct", ["org/Base-7B"])
    use_cache(monkeypatch, cache)
    lines = ["model,benchmark,sample_id,correct"]
    lines += [
        f"{m},mmlu:anatomy,q{i},{(i + n) % 2}" for n, m in enumerate(MODELS) for i in range(4)
    ]
    (tmp_path / "rows.csv").write_text("\n".join(lines) + "\n")
    cli("import", "table", tmp_path / "rows.csv")


@pytest.fixture
def stored(cli, tmp_path, monkeypatch):
    store_models(cli, tmp_path, monkeypatch)
    return cli


def test_suggestions_name_their_evidence_and_are_accepted(stored):
    rows = stored.json("pair", "suggest", "--format", "json")
    assert [(r["base"], r["post"], r["evidence"], r["stage"]) for r in rows] == [
        ("org/Base-7B", "org/Base-7B-Instruct", ["model card", "name"], "instruct"),
        ("org/Other-1B", "lab/tuned-model", ["model card"], None),
        ("org/Base-7B", "org/Base-7B-DPO", ["name"], "rl"),
    ]
    table = stored("pair", "suggest").stdout
    assert "model card, name" in table and "--accept all" in table

    out = stored("pair", "suggest", "--accept", "2").stdout
    assert "added pair 1: org/Other-1B -> lab/tuned-model" in out
    # id, base id, post id, label, stage, created: the label says which; a card says no stage
    assert [p[3:5] for p in stored.contents()["pairs"]] == [("Other-1B -> tuned-model", None)]
    left = stored.json("pair", "suggest", "--format", "json")
    assert [r["post"] for r in left] == ["org/Base-7B-Instruct", "org/Base-7B-DPO"]

    out = stored("pair", "suggest", "--accept", "all").stdout
    assert "added pair 2: org/Base-7B -> org/Base-7B-Instruct" in out
    assert "added pair 3: org/Base-7B -> org/Base-7B-DPO" in out
    assert sorted(p[3:5] for p in stored.contents()["pairs"]) == [
        ("Base-7B -> Base-7B-DPO", "rl"),
        ("Base-7B -> Base-7B-Instruct", "instruct"),
        ("Other-1B -> tuned-model", None),
    ]
    assert "no pairs to suggest" in stored("pair", "suggest").stdout


@pytest.mark.parametrize(
    ("accept", "message"),
    [
        ("9", "--accept: no suggestion 9 (there are 3)"),
        ("one", "--accept takes 'all' or numbers like 1,3, got 'one'"),
    ],
)
def test_a_wrong_accept_is_one_line_and_adds_nothing(stored, accept, message):
    result = stored("pair", "suggest", "--accept", accept, ok=False)
    assert result.exit_code != 0 and message in result.stderr
    assert stored.contents()["pairs"] == []


SUGGESTED = [
    {
        "number": 1,
        "base": "org/Base-7B",
        "post": "org/Base-7B-Instruct",
        "evidence": ["model card", "name"],
        "stage": "instruct",
        "label": "Base-7B -> Base-7B-Instruct",
    },
    {
        "number": 2,
        "base": "org/Other-1B",
        "post": "lab/tuned-model",
        "evidence": ["model card"],
        "stage": None,
        "label": "Other-1B -> tuned-model",
    },
    {
        "number": 3,
        "base": "org/Base-7B",
        "post": "org/Base-7B-DPO",
        "evidence": ["name"],
        "stage": "rl",
        "label": "Base-7B -> Base-7B-DPO",
    },
]


@pytest.fixture
def app_cli(tmp_path, monkeypatch):
    on_file = Cli(tmp_path / "fm.duckdb")
    store_models(on_file, tmp_path, monkeypatch)
    return on_file


def _client(app_cli) -> TestClient:
    return TestClient(create_app(app_cli.db))


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def _log_in(client: TestClient, app_cli, role: str) -> None:
    token = app_cli("token", "create", f"someone-{role}", "--role", role).stdout.strip()
    answer = client.post(
        "/login",
        data={"token": token, "csrf": _csrf(client.get("/login").text), "next": "/pairs/suggest"},
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text


def test_the_api_lists_what_the_command_suggests(app_cli):
    with _client(app_cli) as client:  # a read: no token, no login
        assert client.get("/api/pairs/suggestions").json() == SUGGESTED
    command = app_cli.json("pair", "suggest", "--format", "json")
    assert [{k: r[k] for k in SUGGESTED[0]} for r in command] == SUGGESTED


def test_the_page_adds_the_ticked_suggestions(app_cli):
    with _client(app_cli) as client:
        answer = client.get("/pairs/suggest", follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"].startswith("/login")
        _log_in(client, app_cli, "submit")
        page = client.get("/pairs/suggest").text
        boxes = re.findall(r"name=\"pair\" id=\"suggestion-\d\" value='([^']+)'", page)
        assert [json.loads(b) for b in boxes] == [[s["base"], s["post"]] for s in SUGGESTED]
        assert "model card, name" in page and "Add the chosen pairs" in page

        sent = client.post(
            "/pairs/suggest", data={"csrf": _csrf(page), "pair": boxes[2]}, follow_redirects=False
        )
        assert (sent.status_code, sent.headers["location"]) == (303, "/pairs/suggest?added=1")
        after = client.get(sent.headers["location"]).text
        assert re.search(r'Added 1 pair:\s*<a href="/pairs/1">Base-7B -&gt; Base-7B-DPO</a>', after)
        assert [(p["id"], p["label"], p["stage"]) for p in client.get("/api/pairs").json()] == [
            (1, "Base-7B -> Base-7B-DPO", "rl")
        ]
        left = client.get("/api/pairs/suggestions").json()
        assert [s["post"] for s in left] == ["org/Base-7B-Instruct", "lab/tuned-model"]


def test_the_page_refuses_what_it_cannot_add(app_cli):
    with _client(app_cli) as client:
        _log_in(client, app_cli, "submit")
        csrf = _csrf(client.get("/pairs/suggest").text)
        for chosen, message in [
            ([], "tick at least one suggestion to add"),
            (
                ['["org/Other-1B", "org/Base-7B"]'],
                "org/Other-1B -&gt; org/Base-7B is not a suggested pair",
            ),
            (["not json"], "a chosen pair is not one of the suggestions: reload the page"),
        ]:
            page = client.post("/pairs/suggest", data={"csrf": csrf, "pair": chosen})
            assert page.status_code == 200 and message in page.text
        stale = client.post(
            "/pairs/suggest",
            data={"csrf": "stale", "pair": [json.dumps(["org/Base-7B", "org/Base-7B-DPO"])]},
        )
        assert stale.status_code == 403
        assert client.get("/api/pairs").json() == []


def test_the_page_needs_the_submit_role(app_cli):
    with _client(app_cli) as client:
        _log_in(client, app_cli, "read")
        assert client.get("/pairs/suggest").status_code == 403
