"""The whole loop in a browser: `forgetmap up`, log in, submit two tiny local models through the
form, watch the job run on the local worker (embedded queue, no Redis), find the pair on the map,
click through to a flipped sample. Also: no token ever appears in the logs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.server import free_port
from tests.support.services import service_missing
from tests.support.worker_env import write_toy_benchmark

pytestmark = [pytest.mark.slow]
FORGETMAP = str(Path(sys.executable).parent / "forgetmap")


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    try:
        from forgetmap.demo.tiny_model import build_tiny_model
    except ImportError as exc:
        service_missing(f"torch/transformers not installed: {exc}")
    root = tmp_path_factory.mktemp("up")
    data = root / "data"
    build_tiny_model(data / "models" / "tiny-base", seed=11)
    build_tiny_model(data / "models" / "tiny-post", seed=12)
    write_toy_benchmark(data / "benchmarks" / "toy.jsonl", 16)
    db = data / "forgetmap.duckdb"
    token = subprocess.run(
        [FORGETMAP, "--db", str(db), "token", "create", "alice"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGETMAP_")}
    env.update(FORGETMAP_RECONCILE_SECONDS="1", OMP_NUM_THREADS="1", FORGETMAP_UPLOAD_BATCH="4")
    log = (root / "up.log").open("w")
    proc = subprocess.Popen(
        [FORGETMAP, "--db", str(db), "up", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/healthz", timeout=1)
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError((root / "up.log").read_text()) from None
            time.sleep(0.2)
    yield {"url": url, "token": token, "data": data, "log": root / "up.log", "proc": proc}
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError("forgetmap up did not stop on Ctrl-C") from None


def _fill_form(page, data: Path, *, base_path: str | None = None) -> None:
    page.fill("input[name=base_path]", base_path or str(data / "models" / "tiny-base"))
    page.select_option("select[name=base_prompting]", "base")
    page.fill("input[name=post_path]", str(data / "models" / "tiny-post"))
    page.select_option("select[name=post_prompting]", "chat")
    page.check("input[name=suite][value=local]")
    page.check("input[name=local][value='toy.jsonl']")
    page.fill("input[name=seeds]", "2")
    page.select_option("select[name=engine]", "transformers")
    page.select_option("select[name=mode]", "loglik")
    page.fill("input[name=label]", "tiny base → tiny post")
    page.select_option("select[name=stage]", "sft")


def test_login_submit_watch_progress_and_browse_the_result(up, browser):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(up["url"] + "/submit")
    assert "/login" in page.url  # the form needs a login
    page.fill("input[name=token]", "fm_not-a-real-token")
    page.click("button[type=submit]")
    assert "not valid" in page.inner_text("#login-error")
    page.fill("input[name=token]", up["token"])
    page.click("button[type=submit]")
    page.wait_for_url("**/submit")

    # inline validation: a path outside the model roots is refused, nothing is submitted
    _fill_form(page, up["data"], base_path="/etc/../tmp")
    page.click("button.primary")
    page.wait_for_selector("[data-field=base_path]")
    assert "outside the configured roots" in page.inner_text("[data-field=base_path]")
    assert "/submit" in page.url

    _fill_form(page, up["data"])
    page.click("button.primary")
    page.wait_for_url("**/jobs/*")
    seen = set()
    deadline = time.time() + 300
    while time.time() < deadline:
        status = page.inner_text("#job-status")
        seen.add(status)
        if status in ("done", "failed", "cancelled"):
            break
        time.sleep(1)
    assert status == "done", page.inner_text("#job-progress")
    assert seen & {"queued", "running"}, seen  # progress was visible before the end
    page.click("#pair-link")
    page.wait_for_url("**/pairs/*")
    assert "tiny base → tiny post" in page.inner_text("h1")

    page.goto(up["url"] + "/?level=benchmark")
    page.wait_for_function("document.getElementById('heatmap')._fullLayout !== undefined")
    x, y = page.evaluate(
        """() => {const el = document.getElementById('heatmap'), fl = el._fullLayout, \
b = el.getBoundingClientRect();
                  return [b.left + fl.xaxis._offset + fl.xaxis.l2p(0), \
b.top + fl.yaxis._offset + fl.yaxis.l2p(0)];}"""
    )
    page.mouse.click(x, y)
    page.wait_for_url("**/samples?**")
    count = page.inner_text("#sample-count")
    if count.startswith("0 "):  # no 1->0 flip between these two random models: look at 0->1
        page.locator("label.pill.t01").click()
        page.wait_for_function("document.getElementById('sample-count').innerText.includes('0→1')")
    assert page.locator("tr.sample-row").count() > 0
    page.locator("tr.sample-row").first.click()
    page.wait_for_selector("#sample-view")
    assert "Seed 0" in page.inner_text("#sample-view") and "Seed 1" in page.inner_text(
        "#sample-view"
    )
    assert dialogs == []
    page.close()


def test_no_token_appears_in_the_logs(up, browser):
    page = browser.new_page()
    page.goto(up["url"] + "/login")
    page.fill("input[name=token]", up["token"])
    page.click("button[type=submit]")
    page.close()
    deadline = time.monotonic() + 30
    while "POST /login" not in (text := up["log"].read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "POST /login" in text  # the log is the real one, and holds the login
    assert up["token"] not in text
    assert "fm_" not in text  # neither the user's token nor the local worker's
