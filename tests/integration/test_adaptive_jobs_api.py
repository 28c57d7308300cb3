"""Adaptive jobs through the real app (DuckDB file, the API's routes), with this test acting as
the worker over HTTP: rounds follow the shared evaluation order, stop on the interval, continue
without re-evaluating, share a base between pairs, stop when cancelled, and refuse bad settings.
tests/integration/test_adaptive_jobs_worker.py runs the same with a real worker process."""

from __future__ import annotations

import re

import pytest
from forgetmap.analysis.adaptive import evaluation_order

from tests.support.app_client import admin_client

N = 200
IDS = [f"g{i:03d}" for i in range(N)]
ORDER = evaluation_order("toy", IDS)


@pytest.fixture
def client(cli, tmp_path):
    with admin_client(cli) as c:
        yield c


def _as_worker(client, path, body):
    return client.post(path, json=body, headers=client.worker)


def _job(adaptive, models=("a", "b"), pairs=(("a", "b"),), seeds=(0,)):
    # a hub id per model (org/model-N: a name such as <b>a</b> is no valid hub id)
    return {
        "models": [{"name": m, "path": f"org/model-{i}"} for i, m in enumerate(models)],
        "benchmarks": ["local:toy.jsonl"],
        "seeds": list(seeds),
        "config": {"engine": "transformers", "max_tokens": 4},
        "pairs": [{"base": b, "post": p} for b, p in pairs],
        "adaptive": adaptive,
    }


def _queued(client, job_id):
    job = client.get(f"/api/jobs/{job_id}").json()
    return [s for s in job["shards"] if s["status"] == "queued"]


def _run_queued(client, job_id, correct=lambda model, sample_id: False) -> list[tuple]:
    """Play the worker for every queued shard of the job until none is left; returns (model,
    seed, slice start, slice end) of each shard run."""
    ran = []
    while queued := _queued(client, job_id):
        for s in queued:
            shard = _as_worker(client, f"/api/shards/{s['id']}/start", {"worker": "t"}).json()
            assert shard["run"], shard
            part = shard["shard"]["spec"]["slice"]
            assert part["order"] == "toy"
            todo = ORDER[part["start"] : part["end"]]
            rows = [
                {
                    "sample_id": i,
                    "correct": correct(s["model"], i),
                    "prompt_tokens": 5,
                    "completion_tokens": 3,
                }
                for i in todo
            ]
            r = _as_worker(client, "/api/results", {"shard_id": s["id"], "rows": rows})
            assert r.status_code == 200, r.text
            r = _as_worker(client, f"/api/shards/{s['id']}/finish", {"full_size": N})
            assert r.status_code == 200, r.text
            ran.append((s["model"], s["seed"], part["start"], part["end"]))
    return ran


def test_rounds_stop_on_target_and_continue_without_reevaluating(client):
    loose = {"target_points": 1.0, "min_samples": 20, "chunk_size": 20, "max_samples": 180}
    created = client.post("/api/jobs", json=_job(loose))
    assert created.status_code == 201, created.text
    job_id = created.json()["id"]
    assert created.json()["shards_to_run"] == 2  # round 0: both models, one seed
    ran = _run_queued(client, job_id)
    # identical answers: no flips; the 1-point half-width is first reached at 80 samples, in the
    # fourth round (each round reaches 1.5 times the prefix), which runs to its end at 100
    assert sorted({(start, end) for _, _, start, end in ran}) == [
        (0, 20),
        (20, 40),
        (40, 60),
        (60, 100),
    ]
    job = client.get(f"/api/jobs/{job_id}").json()
    assert job["status"] == "done"
    bench = job["adaptive"]["benchmarks"][0]
    assert (bench["benchmark"], bench["full_size"], bench["done"]) == ("toy", N, True)
    assert bench["pairs"][0]["n"] == 100 and bench["pairs"][0]["stopped"] == "target met"
    assert bench["pairs"][0]["f_half_points"] <= 1.0
    totals = job["adaptive"]
    assert (totals["samples_used"], totals["samples_full"]) == (2 * 100, 2 * N)
    assert (totals["tokens_used"], totals["tokens_full_estimated"]) == (2 * 100 * 3, 2 * N * 3)

    tight = {**loose, "target_points": 0.6}
    again = client.post("/api/jobs", json=_job(tight)).json()
    ran = _run_queued(client, again["id"])
    # continues after the stored 100: nothing before it is evaluated again; one round to 160
    # (0.6 points are first met at 120, the round that holds it goes to its end)
    assert sorted({(start, end) for _, _, start, end in ran}) == [(100, 160)]
    detail = client.get(f"/api/jobs/{again['id']}").json()
    assert detail["adaptive"]["benchmarks"][0]["pairs"][0]["n"] == 160
    assert detail["adaptive"]["benchmarks"][0]["pairs"][0]["stopped"] == "target met"
    # an adaptive shard's finish must say how many samples the benchmark has
    refused = _as_worker(client, f"/api/shards/{detail['shards'][0]['id']}/finish", {})
    assert refused.status_code == 422 and "full_size" in refused.text
    # a repeated finish of a finished round's shard schedules nothing more
    first = detail["shards"][0]["id"]
    assert _as_worker(client, f"/api/shards/{first}/finish", {"full_size": N}).status_code == 200
    assert _queued(client, again["id"]) == []
    # the same job once more: every sample is there, the look stops at once, no shard
    third = client.post("/api/jobs", json=_job(tight)).json()
    assert third["shards_to_run"] == 0
    assert client.get(f"/api/jobs/{third['id']}").json()["status"] == "done"
    page = client.get(f"/jobs/{again['id']}").text
    assert "estimated" in page and "target met" in page
    # an ordinary job wants every sample: 160 of 200 is not "evaluated before"
    plain = client.post("/api/jobs", json={**_job(None), "adaptive": None}).json()
    shards = client.get(f"/api/jobs/{plain['id']}").json()["shards"]
    assert plain["shards_to_run"] == 2 and {s["status"] for s in shards} == {"queued"}


def test_max_samples_and_the_end_of_the_benchmark_stop_a_pair(client):
    # flips on every third sample: the interval stays wide, max_samples stops it
    flips = lambda model, sample_id: model == "a" and int(sample_id[1:]) % 3 == 0  # noqa: E731
    capped = {"target_points": 0.5, "min_samples": 40, "chunk_size": 40, "max_samples": 80}
    job_id = client.post("/api/jobs", json=_job(capped)).json()["id"]
    ran = _run_queued(client, job_id, flips)
    assert max(end for *_, end in ran) == 80
    pair = client.get(f"/api/jobs/{job_id}").json()["adaptive"]["benchmarks"][0]["pairs"][0]
    assert (pair["n"], pair["stopped"]) == (80, "max samples")
    whole = {"target_points": 0.5, "min_samples": 40, "chunk_size": 100}
    job_id = client.post(
        "/api/jobs", json=_job(whole, models=("a", "c"), pairs=(("a", "c"),))
    ).json()["id"]
    ran = _run_queued(client, job_id, flips)
    pair = client.get(f"/api/jobs/{job_id}").json()["adaptive"]["benchmarks"][0]["pairs"][0]
    assert (pair["n"], pair["stopped"]) == (N, "end of benchmark")
    # rounds that reached the end leave nothing out: an ordinary job reuses them
    plain = {**_job(None, models=("a", "c"), pairs=(("a", "c"),)), "adaptive": None}
    shards = client.get(f"/api/jobs/{client.post('/api/jobs', json=plain).json()['id']}").json()
    assert {s["status"] for s in shards["shards"]} == {"reused"}
    # the base "a" had 80 samples stored: only "c" starts at 0
    assert {(m, start) for m, _, start, _ in ran if start == 0} == {("c", 0)}


def test_a_shared_base_goes_as_far_as_its_furthest_pair_and_cancel_stops_rounds(client):
    # pair (a, b) has no flips and stops early; (a, c) flips often and goes on: "a" follows (a, c)
    flips = lambda model, sample_id: model == "c" and int(sample_id[1:]) % 2 == 0  # noqa: E731
    body = _job(
        {"target_points": 1.0, "min_samples": 20, "chunk_size": 20},
        models=("a", "b", "c"),
        pairs=(("a", "b"), ("a", "c")),
    )
    job_id = client.post("/api/jobs", json=body).json()["id"]
    for _ in range(4):  # four rounds by hand (to 20, 40, 60, 100), then cancel
        queued = _queued(client, job_id)
        for s in queued:
            start = _as_worker(client, f"/api/shards/{s['id']}/start", {"worker": "t"}).json()
            part = start["shard"]["spec"]["slice"]
            rows = [
                {"sample_id": i, "correct": flips(s["model"], i)}
                for i in ORDER[part["start"] : part["end"]]
            ]
            _as_worker(client, "/api/results", {"shard_id": s["id"], "rows": rows})
            _as_worker(client, f"/api/shards/{s['id']}/finish", {"full_size": N})
    job = client.get(f"/api/jobs/{job_id}").json()
    looks = {p["post"]: p for p in job["adaptive"]["benchmarks"][0]["pairs"]}
    assert looks["b"]["stopped"] == "target met" and looks["c"]["stopped"] is None
    runs = {}
    for s in job["shards"]:
        runs.setdefault(s["model"], 0)
        runs[s["model"]] += 1
    assert runs["a"] == runs["c"] > runs["b"]
    assert client.post(f"/api/jobs/{job_id}/cancel").status_code == 200
    for s in job["shards"]:
        _as_worker(client, f"/api/shards/{s['id']}/finish", {"full_size": N})
    after = client.get(f"/api/jobs/{job_id}").json()
    assert after["status"] == "cancelled" and len(after["shards"]) == len(job["shards"])


@pytest.mark.parametrize(
    "adaptive, where",
    [
        ({"target_points": 0}, "target_points"),
        ({"target_points": "x"}, "target_points"),
        ({"target_points": 80}, "target_points"),
        ({"min_samples": 0}, "min_samples"),
        ({"min_samples": 50, "max_samples": 10}, "max_samples"),
        ({"chunk_size": 10**6}, "chunk_size"),
        ({"target": 1.5}, "target"),
    ],
)
def test_bad_adaptive_settings_are_refused_with_the_field_named(client, adaptive, where):
    r = client.post("/api/jobs", json=_job(adaptive))
    assert 400 <= r.status_code < 500, r.text
    assert where in r.text and "adaptive" in r.text


def test_an_adaptive_job_needs_every_model_in_a_pair(client):
    r = client.post("/api/jobs", json=_job({}, models=("a", "b", "c")))
    assert r.status_code == 422 and "c has none" in r.text


FORM = {
    "base_path": "org/base-model",
    "post_path": "org/post-model",
    "suite": "benchmarks",
    "benchmarks": "piqa",
    "seeds": "1",
    "engine": "vllm",
    "mode": "generate",
    "temperature": "0.6",
    "top_p": "0.95",
    "max_tokens": "64",
    "stage": "sft",
    "base_prompting": "base",
    "post_prompting": "chat",
    "adaptive": "on",
}


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def test_the_form_submits_an_adaptive_job_and_shows_a_bad_target_beside_its_field(client):
    token = client.headers.pop("Authorization").removeprefix("Bearer ")
    r = client.post(
        "/login",
        data={"token": token, "csrf": _csrf(client.get("/login").text), "next": "/submit"},
        follow_redirects=False,
    )
    assert r.status_code == 303
    form = client.get("/submit").text
    assert 'name="adaptive"' in form and 'name="adaptive_target" value="1.5"' in form
    csrf = _csrf(form)
    for bad, message in (("0.01", "greater than or equal to 0.1"), ("many", "valid number")):
        page = client.post("/submit", data={**FORM, "adaptive_target": bad, "csrf": csrf}).text
        assert re.search(rf'data-field="adaptive_target">[^<]*{message}', page), page[-3000:]
    r = client.post(
        "/submit", data={**FORM, "adaptive_target": "2", "csrf": csrf}, follow_redirects=False
    )
    assert r.status_code == 303, r.text
    job = client.get(r.headers["location"].split("?")[0].replace("/jobs/", "/api/jobs/")).json()
    assert job["request"]["adaptive"] == {
        "target_points": 2.0,
        "min_samples": 100,
        "max_samples": None,
        "chunk_size": 50,
        "round_growth": 1.5,
    }
    assert [s["benchmark"] for s in job["shards"]] == ["piqa", "piqa"]
    assert job["shards"][0]["total"] is None  # the first round: samples 0..100 of the order
    # without the checkbox: an ordinary job
    r = client.post(
        "/submit",
        data={
            **{k: v for k, v in FORM.items() if k != "adaptive"},
            "adaptive_target": "2",
            "csrf": csrf,
        },
        follow_redirects=False,
    )
    job = client.get(r.headers["location"].split("?")[0].replace("/jobs/", "/api/jobs/")).json()
    assert "adaptive" not in job["request"] and job["adaptive"] is None


def test_names_on_the_adaptive_section_are_escaped(client):
    body = _job(
        {"target_points": 1.0, "min_samples": 20, "chunk_size": 20},
        models=("<b>a</b>", "b"),
        pairs=(("<b>a</b>", "b"),),
    )
    job_id = client.post("/api/jobs", json=body).json()["id"]
    _run_queued(client, job_id)
    page = client.get(f"/jobs/{job_id}").text
    assert "&lt;b&gt;a&lt;/b&gt; → b" in page and "<b>a</b>" not in page


def _evaluated(ran) -> dict[str, list[str]]:
    """Per model, the samples its shards evaluated (a sample twice appears twice)."""
    out: dict[str, list[str]] = {}
    for model, _, start, end in ran:
        out.setdefault(model, []).extend(ORDER[start:end])
    return out


def test_a_job_waits_for_the_shards_another_job_is_running_on_its_models(client):
    loose = {"target_points": 1.0, "min_samples": 20, "chunk_size": 20, "max_samples": 180}
    first = client.post("/api/jobs", json=_job(loose)).json()
    twin = client.post("/api/jobs", json=_job(loose)).json()
    # the same pair at the same time: every shard of its first round is the first job's
    assert (first["shards_to_run"], twin["shards_to_run"]) == (2, 0)
    waiting = client.get(f"/api/jobs/{twin['id']}").json()
    assert waiting["status"] == "queued"  # not done: its round waits
    assert waiting["adaptive"]["benchmarks"][0]["waiting_for_shards"] == sorted(
        s["id"] for s in client.get(f"/api/jobs/{first['id']}").json()["shards"]
    )
    # (a, c) on the same base: "c" starts, "a" waits for the first job's shard
    flips = lambda model, sample_id: model == "c" and int(sample_id[1:]) % 2 == 0  # noqa: E731
    other = client.post("/api/jobs", json=_job(loose, models=("a", "c"), pairs=(("a", "c"),)))
    other = other.json()
    assert [s["model"] for s in _queued(client, other["id"])] == ["c"]

    ran = _run_queued(client, first["id"], flips)
    assert sorted({(start, end) for _, _, start, end in ran}) == [
        (0, 20),
        (20, 40),
        (40, 60),
        (60, 100),
    ]
    done = client.get(f"/api/jobs/{twin['id']}").json()
    # the twin rode along round by round and evaluated nothing itself
    assert (done["status"], done["shards"]) == ("done", [])
    pair = done["adaptive"]["benchmarks"][0]["pairs"][0]
    assert (pair["n"], pair["stopped"]) == (100, "target met")

    ran += _run_queued(client, other["id"], flips)
    detail = client.get(f"/api/jobs/{other['id']}").json()
    pair = detail["adaptive"]["benchmarks"][0]["pairs"][0]
    assert detail["status"] == "done" and pair["stopped"] is not None and pair["n"] > 100
    # "a" went past the first job's 100 with the (a, c) job's own shards
    assert min(s for m, _, s, _ in ran if m == "a" and s >= 100) == 100
    evaluated = _evaluated(ran)
    for model in ("a", "b", "c"):  # no sample evaluated twice, by either job
        assert len(evaluated[model]) == len(set(evaluated[model])), model
    assert set(evaluated["a"]) == set(ORDER[: pair["n"]])


def test_a_waiting_job_evaluates_the_slice_itself_when_the_other_shard_fails_or_is_cancelled(
    client,
):
    setting = {"target_points": 1.0, "min_samples": 20, "chunk_size": 20}
    first = client.post("/api/jobs", json=_job(setting)).json()
    second = client.post("/api/jobs", json=_job(setting, models=("a", "c"), pairs=(("a", "c"),)))
    second = second.json()
    base_shard = next(s for s in _queued(client, first["id"]) if s["model"] == "a")
    assert [s["model"] for s in _queued(client, second["id"])] == ["c"]
    # the first job's shard of "a" runs, then fails: the second job writes its own at once
    _as_worker(client, f"/api/shards/{base_shard['id']}/start", {"worker": "t"})
    r = _as_worker(client, f"/api/shards/{base_shard['id']}/fail", {"error": "out of memory"})
    assert r.status_code == 200, r.text
    mine = [s for s in _queued(client, second["id"]) if s["model"] == "a"]
    assert len(mine) == 1
    spec = _as_worker(client, f"/api/shards/{mine[0]['id']}/start", {"worker": "t"}).json()
    assert spec["run"] and (
        spec["shard"]["spec"]["slice"]["start"],
        spec["shard"]["spec"]["slice"]["end"],
    ) == (0, 20)

    # a third job waits for that (running) shard; cancelling the second job hands it the slice
    third = client.post("/api/jobs", json=_job(setting, models=("a", "d"), pairs=(("a", "d"),)))
    third = third.json()
    assert [s["model"] for s in _queued(client, third["id"])] == ["d"]
    assert client.post(f"/api/jobs/{second['id']}/cancel").status_code == 200
    assert sorted(s["model"] for s in _queued(client, third["id"])) == ["a", "d"]
    ran = _run_queued(client, third["id"])
    detail = client.get(f"/api/jobs/{third['id']}").json()
    pair = detail["adaptive"]["benchmarks"][0]["pairs"][0]
    assert (detail["status"], pair["n"], pair["stopped"]) == ("done", 100, "target met")
    assert sorted((m, s, e) for m, _, s, e in ran if m == "a") == [
        ("a", 0, 20),
        ("a", 20, 40),
        ("a", 40, 60),
        ("a", 60, 100),
    ]


def _two_jobs_on_a_whose_first_shard_failed(client) -> tuple[dict, dict, dict]:
    """Jobs a -> b and a -> c; the first job's shard of "a" fails (the second, which waited for
    it, writes its own for the slice). Returns (first job, second job, the failed shard)."""
    setting = {"target_points": 1.0, "min_samples": 20, "chunk_size": 20}
    first = client.post("/api/jobs", json=_job(setting)).json()
    second = client.post("/api/jobs", json=_job(setting, models=("a", "c"), pairs=(("a", "c"),)))
    second = second.json()
    failed = next(s for s in _queued(client, first["id"]) if s["model"] == "a")
    _as_worker(client, f"/api/shards/{failed['id']}/start", {"worker": "t"})
    r = _as_worker(client, f"/api/shards/{failed['id']}/fail", {"error": "oom"})
    assert r.status_code == 200, r.text
    return first, second, failed


@pytest.mark.parametrize("other_shard", ["running", "finished"])
def test_a_retried_shard_does_not_run_again_when_a_waiting_job_took_its_slice_over(
    client, other_shard
):
    """The first job's shard of "a" fails; the second job, which waited for it, writes its own
    for the slice. Retrying the first job then must not evaluate that slice again: its shard
    becomes "reused" and the job waits for the second job's shard (or reads its stored rows)."""
    first, second, failed = _two_jobs_on_a_whose_first_shard_failed(client)
    [taken_over] = [s for s in _queued(client, second["id"]) if s["model"] == "a"]
    ran = []
    if other_shard == "finished":  # both jobs' first rounds run (all but the failed shard)
        for s in _queued(client, second["id"]) + _queued(client, first["id"]):
            _as_worker(client, f"/api/shards/{s['id']}/start", {"worker": "t"})
            rows = [
                {"sample_id": i, "correct": False, "prompt_tokens": 5, "completion_tokens": 3}
                for i in ORDER[:20]
            ]
            _as_worker(client, "/api/results", {"shard_id": s["id"], "rows": rows})
            _as_worker(client, f"/api/shards/{s['id']}/finish", {"full_size": N})
            ran.append((s["model"], 0, 0, 20))

    r = client.post(f"/api/jobs/{first['id']}/retry")
    assert r.status_code == 200, r.text
    detail = client.get(f"/api/jobs/{first['id']}").json()
    shard = next(s for s in detail["shards"] if s["id"] == failed["id"])
    assert shard["status"] == "reused"  # not queued: its slice is the other job's
    waits = detail["adaptive"]["benchmarks"][0]["waiting_for_shards"]
    if other_shard == "running":
        assert r.json()["retried"] == 0 and waits == [taken_over["id"]]
    else:  # the slice's rows are stored: the look is taken at once and the next round written,
        # whose "a" slice the second job's next round evaluates already
        assert detail["adaptive"]["benchmarks"][0]["round"] == 1
        [waited] = [s["id"] for s in _queued(client, second["id"]) if s["model"] == "a"]
        assert waits == [waited]
        assert [s["model"] for s in _queued(client, first["id"])] == ["b"]
        assert r.json()["retried"] == 1

    while _queued(client, first["id"]) or _queued(client, second["id"]):
        ran += _run_queued(client, second["id"]) + _run_queued(client, first["id"])
    for job in (first, second):
        detail = client.get(f"/api/jobs/{job['id']}").json()
        pair = detail["adaptive"]["benchmarks"][0]["pairs"][0]
        assert (detail["status"], pair["n"], pair["stopped"]) == ("done", 100, "target met")
    evaluated = _evaluated(ran)
    assert sorted(evaluated["a"]) == sorted(ORDER[:100])  # every sample of "a" once


def test_a_retried_shard_is_reused_when_the_benchmark_ends_inside_its_slice(client):
    """A first round's slice may end past the benchmark (its size is known once a worker has
    loaded it): here [0, 20) of 15 samples. The second job's shard stored all 15; retrying the
    first job must read them, not evaluate them again (the slice is stored up to the end)."""
    small = 15
    first, second, failed = _two_jobs_on_a_whose_first_shard_failed(client)
    evaluated = []
    for s in _queued(client, second["id"]) + _queued(client, first["id"]):
        shard = _as_worker(client, f"/api/shards/{s['id']}/start", {"worker": "t"}).json()
        assert (
            shard["shard"]["spec"]["slice"]["start"],
            shard["shard"]["spec"]["slice"]["end"],
        ) == (0, 20)
        rows = [
            {"sample_id": i, "correct": False, "prompt_tokens": 5, "completion_tokens": 3}
            for i in ORDER[:small]
        ]
        _as_worker(client, "/api/results", {"shard_id": s["id"], "rows": rows})
        _as_worker(client, f"/api/shards/{s['id']}/finish", {"full_size": small})
        evaluated.append(s["model"])
    assert sorted(evaluated) == ["a", "b", "c"]

    r = client.post(f"/api/jobs/{first['id']}/retry")
    assert r.status_code == 200, r.text
    detail = client.get(f"/api/jobs/{first['id']}").json()
    shard = next(s for s in detail["shards"] if s["id"] == failed["id"])
    assert (r.json()["retried"], shard["status"]) == (0, "reused")
    pair = detail["adaptive"]["benchmarks"][0]["pairs"][0]
    assert (detail["status"], pair["n"]) == ("done", small)  # the whole benchmark, read once


def test_a_finish_answers_cancelled_for_a_shard_cancelled_while_its_last_batch_ran(client):
    """The worker reports no progress after its last batch (the finish does), so the finish's
    answer is what tells it the shard was cancelled meanwhile; the shard stays cancelled."""
    job = client.post("/api/jobs", json={**_job(None), "adaptive": None}).json()
    shard = _queued(client, job["id"])[0]
    _as_worker(client, f"/api/shards/{shard['id']}/start", {"worker": "t"})
    assert client.post(f"/api/jobs/{job['id']}/cancel").status_code == 200
    r = _as_worker(client, f"/api/shards/{shard['id']}/finish", {})
    assert (r.status_code, r.json()) == (200, {"status": "cancelled"})
    detail = client.get(f"/api/jobs/{job['id']}").json()
    assert {s["id"]: s["status"] for s in detail["shards"]}[shard["id"]] == "cancelled"
    other = _queued(client, job["id"])
    assert other == []  # the cancel took the queued ones too
