"""A merge sweep end to end (issue 54): a stored pair -> `POST /api/jobs` with ``"kind": "merge"``
-> Redis -> `forgetmap worker` builds each mix with mergekit, evaluates it (transformers) and
removes it -> the sweep stored as a series along the mix.

Checked: the ends are the pair's own evaluations (reused, not run again); each mix strictly
between 0 and 1 is built once and evaluated on the post model's benchmarks and seeds; a merged
checkpoint is gone after its evaluation unless kept; the same merge asked again is reused; the
rows stored for a mix are those our own engine gives on a merge we build here; a sweep of a pair
that was never stored, or with a mix past thousandths, is refused before anything is written.
"""

from __future__ import annotations

import json
import re
import subprocess

import httpx
import pytest

from tests.support.services import require_modules
from tests.support.worker_env import (
    FORGETMAP,
    Deployment,
    require_redis,
    write_toy_benchmark,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]
N_ITEMS = 6
SEEDS = [0, 1]


def _models(dep: Deployment) -> dict:
    return {
        "base": {"name": "tiny-base", "path": str(dep.models / "tiny-base"), "prompting": "base"},
        "post": {"name": "tiny-post", "path": str(dep.models / "tiny-post"), "prompting": "chat"},
    }


def _stored_rows(dep: Deployment, model: str) -> dict:
    """(sample, seed) -> (response, correct) of a merged model's stored rows, from its pair's
    per-sample export."""
    import csv
    import io

    pairs = {p["post"]: p["id"] for p in dep.http.get("/api/pairs").json()}
    text = dep.http.get(f"/api/pairs/{pairs[model]}/samples.csv").text
    return {
        (r["sample_id"], int(r["seed"])): (r["post_response"], r["post_correct"] == "1")
        for r in csv.DictReader(io.StringIO(text))
    }


def tiny_pair(dep: Deployment, n_items: int, *, max_tokens: int) -> dict:
    """Two tiny models and a toy benchmark of ``n_items`` written into ``dep``; the body of the
    job that evaluates them (transformers) and adds their pair."""
    from forgetmap.demo.tiny_model import build_tiny_model

    build_tiny_model(dep.models / "tiny-base", seed=0)
    build_tiny_model(dep.models / "tiny-post", seed=1)
    write_toy_benchmark(dep.benchmarks / "toy.jsonl", n_items)
    models = _models(dep)
    return {
        "models": [models["base"], models["post"]],
        "benchmarks": ["local:toy.jsonl"],
        "seeds": SEEDS,
        "config": {"engine": "transformers", "max_tokens": max_tokens},
        "pairs": [{"base": "tiny-base", "post": "tiny-post", "label": "tiny", "stage": "sft"}],
    }


def test_a_sweep_end_to_end(tmp_path):
    require_redis()
    require_modules("mergekit", "torch", "transformers", why="the merge path's checkpoints")

    dep = Deployment(tmp_path)
    evaluation = tiny_pair(dep, N_ITEMS, max_tokens=8)
    models = _models(dep)
    sweep = {"kind": "merge", **models, "mixes": [0, 0.25, 0.5, 0.75, 1]}
    try:
        refused = dep.http.post("/api/jobs", json=sweep)  # no pair stored yet
        assert refused.status_code == 422 and "no pair tiny-base -> tiny-post" in refused.text
        dep.start_worker()
        dep.wait_ready()
        assert dep.wait(dep.submit(evaluation), timeout=600)["status"] == "done", dep.logs()
        finer = dep.http.post("/api/jobs", json={**sweep, "mixes": [0.0005]})
        assert finer.status_code == 422 and "thousandths" in finer.text

        job_id = _submit_from_the_pair_page(dep)
        job = dep.wait(job_id, timeout=900)
        assert job["status"] == "done", (job, dep.logs())
        # three merge shards ran their evaluations; the ends are stored
        (group,) = job["request"]["evaluations"]  # as the workers evaluated the post model
        assert (group["benchmarks"], group["seeds"]) == (["local:toy.jsonl"], SEEDS)
        by_model: dict[str, list[dict]] = {}
        for shard in job["shards"]:
            by_model.setdefault(shard["model"], []).append(shard)
        assert {s["status"] for m in ("tiny-base", "tiny-post") for s in by_model[m]} == {"reused"}
        merged = {f"tiny-base+tiny-post@linear-{mix}": mix for mix in ("0.25", "0.5", "0.75")}
        assert set(by_model) == {"tiny-base", "tiny-post", *merged}
        for name in merged:
            kinds = sorted((s["benchmark"], s["status"]) for s in by_model[name])
            assert kinds == [("local:toy.jsonl", "done")] * 2 + [("merge", "done")]
            evaluations = [s for s in by_model[name] if s["benchmark"] != "merge"]
            assert all(s["done"] == s["total"] == N_ITEMS for s in evaluations)
            assert len(_stored_rows(dep, name)) == N_ITEMS * len(SEEDS)
        # built under the first model root and removed after its evaluation
        assert list((dep.models / "forgetmap-merges").iterdir()) == []

        # the series along the mix: each merge and the post model, paired with the base
        (series,) = dep.http.get("/api/series").json()
        assert series["name"] == "tiny-post merged back (linear)"
        assert series["axis"] == "mix"
        view = dep.http.get(f"/api/series/{series['id']}").json()
        assert view["steps"] == [250, 500, 750, 1000]
        assert [c["post"] for c in view["checkpoints"]] == [*merged, "tiny-post"]
        pairs = {p["post"]: p for p in dep.http.get("/api/pairs").json()}
        assert pairs["tiny-base+tiny-post@linear-0.5"]["label"] == (
            "tiny-post merged back (linear) @ mix 0.5"
        )

        # the choice, through the CLI: the post model's F_true interval against each mix's
        best = _cli(dep, "merge", "best", series["name"], "--keep-gains", "0")
        assert best.returncode == 0, best.stderr
        choice = dep.http.get(
            f"/api/series/{series['id']}/merge-choice", params={"keep_gains": 0}
        ).json()
        assert f"Total: mix {choice['mix']:g}. {choice['reason']}." in best.stdout
        assert [m["mix"] for m in choice["mixes"]] == [0, 0.25, 0.5, 0.75, 1]
        pair_page = dep.http.get(f"/pairs/{pairs['tiny-post']['id']}").text
        assert f'<a href="/series/{series["id"]}">' in pair_page
        page = dep.http.get(f"/series/{series['id']}").text
        assert "Questions along the mix" in page and 'id="choice-answer"' in page

        # the same merge kept under another series, through the CLI: stored evaluations,
        # nothing built
        again = _cli(
            dep,
            "merge",
            "sweep",
            f"--base=tiny-base={dep.models / 'tiny-base'}",
            f"--post=tiny-post={dep.models / 'tiny-post'}",
            "--mix=0.5",
            "--keep",
            "--series=half",
        )
        assert again.returncode == 0, again.stderr
        answer = json.loads(again.stdout)
        assert answer["shards_to_run"] == 0
        assert {s["status"] for s in dep.job(answer["id"])["shards"]} == {"reused"}

        # a kept merge at a new mix stays on disk; its rows are our own engine's on our merge
        kept = {**sweep, "mixes": [0.6], "keep": True, "series": "kept"}
        job = dep.wait(dep.submit(kept), timeout=600)
        assert job["status"] == "done", (job, dep.logs())
        folder = dep.models / "forgetmap-merges" / "tiny-base-tiny-post-linear-0.6"
        assert (folder / "forgetmap-merge.json").is_file()
        _same_rows_as_our_merge(dep, folder)
    finally:
        dep.close()


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def _submit_from_the_pair_page(dep: Deployment) -> int:
    """Log in, open the pair page's merge form (its checkpoints prefilled from the stored
    models), send it with a bad mix first, then the five mixes; the job's id."""
    with httpx.Client(base_url=dep.url, timeout=60) as browser:
        login = browser.get("/login").text
        browser.post("/login", data={"token": dep.submit_token, "csrf": _csrf(login)})
        pair_id = dep.http.get("/api/pairs").json()[0]["id"]
        page = browser.get(f"/pairs/{pair_id}").text
        assert 'id="merging-back"' in page and f'href="/pairs/{pair_id}/merge"' in page
        form = browser.get(f"/pairs/{pair_id}/merge").text
        assert f'value="{dep.models / "tiny-post"}"' in form
        values = {
            "csrf": _csrf(form),
            "base_path": str(dep.models / "tiny-base"),
            "post_path": str(dep.models / "tiny-post"),
            "method": "linear",
            "mixes": "0, 0.25, half",
        }
        refused = browser.post(f"/pairs/{pair_id}/merge", data=values)
        assert refused.status_code == 200 and 'data-field="mixes"' in refused.text
        values["mixes"] = "0, 0.25, 0.5, 0.75, 1"
        sent = browser.post(f"/pairs/{pair_id}/merge", data=values, follow_redirects=False)
        assert sent.status_code == 303, sent.text
        return int(sent.headers["location"].split("?")[0].rsplit("/", 1)[1])


def _cli(dep: Deployment, *args: str) -> subprocess.CompletedProcess:
    env = {**dep.env, "FORGETMAP_APP_URL": dep.url, "FORGETMAP_API_TOKEN": dep.submit_token}
    return subprocess.run([FORGETMAP, *args], capture_output=True, text=True, env=env)


def _same_rows_as_our_merge(dep: Deployment, folder) -> None:
    """The rows stored for the kept merge at 0.6 are those our own transformers engine gives,
    with the worker's prompts and seeds, on a merge of the pair we build here."""
    from forgetmap.worker.merge import build_merge, pair_config

    ours = build_merge(
        pair_config("linear", str(dep.models / "tiny-base"), str(dep.models / "tiny-post"), 0.6),
        dep.root / "ours",
        tokenizer_from=dep.models / "tiny-post",
    )
    _same_rows(dep, ours, "tiny-base+tiny-post@linear-0.6")


def _same_rows(dep: Deployment, ours, model: str) -> None:
    """``model``'s stored rows against a transformers engine on ``ours`` (chat prompting, the
    worker's prompts and seeds)."""
    from forgetmap.contract.shards import ShardConfig
    from forgetmap.worker.benchmarks.registry import load_benchmark
    from forgetmap.worker.engines import make_engine
    from forgetmap.worker.evaluate import _evaluate

    config = ShardConfig(engine="transformers", max_tokens=8, prompting="chat")
    engine = make_engine("transformers", str(ours), num_threads=1)
    stored = _stored_rows(dep, model)
    assert len(stored) == N_ITEMS * len(SEEDS)
    try:
        for seed in SEEDS:
            items = load_benchmark(
                "local:toy.jsonl", local_dirs=[dep.benchmarks], limit=None, seed=seed
            ).items
            for row in _evaluate(engine, items, items, config, seed):
                assert stored[(row.sample_id, seed)] == (row.response, row.correct)
    finally:
        engine.close()


def test_soups_of_a_run(tmp_path):
    """A training run of three checkpoints evaluated by the workers, then its soups of the last
    2 and 3 through `forgetmap merge soup`: each built, evaluated on the run's benchmarks and
    seeds, removed; the series "run soups" along the size; the atlas counts the run once."""
    require_redis()
    require_modules("mergekit", "torch", "transformers", why="the merge path's checkpoints")
    from forgetmap.demo.tiny_model import build_tiny_model

    dep = Deployment(tmp_path)
    build_tiny_model(dep.models / "tiny-base", seed=0)
    for i, step in enumerate((10, 20, 30)):
        build_tiny_model(dep.models / "run" / f"checkpoint-{step}", seed=5 + i)
    write_toy_benchmark(dep.benchmarks / "toy.jsonl", N_ITEMS)
    run = {
        "kind": "series",
        "series": "run",
        "base": "tiny-base",
        "base_path": str(dep.models / "tiny-base"),
        "checkpoints": [str(dep.models / "run" / "checkpoint-*")],
        "benchmarks": ["local:toy.jsonl"],
        "seeds": SEEDS,
        "config": {"engine": "transformers", "max_tokens": 8},
    }
    try:
        dep.start_worker()
        dep.wait_ready()
        answer = dep.http.post("/api/jobs", json=run)
        assert answer.status_code == 201, answer.text
        for job_id in answer.json()["jobs"]:
            assert dep.wait(job_id, timeout=600)["status"] == "done", dep.logs()
        too_long = dep.http.post("/api/jobs", json={"kind": "soup", "series": "run", "sizes": [4]})
        assert too_long.status_code == 422 and "has 3 checkpoints" in too_long.text

        sent = _cli(dep, "merge", "soup", "run", "--size", "2", "--size", "3")
        assert sent.returncode == 0, sent.stderr
        job = dep.wait(json.loads(sent.stdout)["id"], timeout=900)
        assert job["status"] == "done", (job, dep.logs())
        kinds = sorted((s["model"], s["benchmark"], s["status"]) for s in job["shards"])
        last = "run/checkpoint-30"
        assert [k for k in kinds if k[0] == last] == [(last, "local:toy.jsonl", "reused")] * 2
        for soup in ("run@soup-2", "run@soup-3"):
            assert [k[1:] for k in kinds if k[0] == soup] == [
                ("local:toy.jsonl", "done"),
                ("local:toy.jsonl", "done"),
                ("merge", "done"),
            ]
        assert list((dep.models / "forgetmap-merges").iterdir()) == []
        listed = {s["name"]: s for s in dep.http.get("/api/series").json()}
        assert (listed["run soups"]["axis"], listed["run soups"]["steps"]) == ("soup", [1, 2, 3])
        assert listed["run"]["steps"] == [10, 20, 30]  # the run keeps its own checkpoints
        pairs = {p["post"]: p for p in dep.http.get("/api/pairs").json()}
        assert pairs["run@soup-3"]["label"] == "run soups @ soup of 3"
        assert pairs["run@soup-3"]["stage"] == "merge"
        # the soups are no recipes of their own: the run counts once, through its last step
        atlas = dep.http.get("/api/atlas").json()
        assert atlas["recipes"] == 1
        page = dep.http.get(f"/series/{listed['run soups']['id']}").text
        assert '<th class="num">soup of 3</th>' in page and "last checkpoint" in page
        _same_rows_as_our_soup(dep)
    finally:
        dep.close()


def _same_rows_as_our_soup(dep: Deployment) -> None:
    """The rows stored for the soup of the last 3 are those our own engine gives on the mean of
    the three checkpoints we build here."""
    from forgetmap.worker.merge import build_merge, soup_config

    paths = [str(dep.models / "run" / f"checkpoint-{step}") for step in (10, 20, 30)]
    ours = build_merge(soup_config(paths), dep.root / "our-soup", tokenizer_from=paths[-1])
    _same_rows(dep, ours, "run@soup-3")
