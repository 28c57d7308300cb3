"""What the app takes from a probe shard (forgetmap.services.probe): the items it hands out, and
an upload checked against them (each item once, its own gold and option count, every item
answered) before anything is kept; a repeated upload replaces the earlier one."""

from __future__ import annotations

import csv
import json

import pytest
from forgetmap.contract.probe import ProbeIn, ProbeJobIn, ProbeOptionsIn, ProbeOutcomeIn
from forgetmap.core.errors import InputError
from forgetmap.db import open_store
from forgetmap.db import probe as probe_db
from forgetmap.services import probe

from tests.integration.test_probe_job import _rows


@pytest.fixture
def shard(cli, tmp_path):
    rows = _rows()
    table = tmp_path / "rows.csv"
    with table.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    cli("import", "table", table)
    cli("pair", "add", "tiny-base", "tiny-post")
    store = open_store(cli.db)
    request = ProbeJobIn.model_validate(
        {
            "kind": "probe",
            "base": {"name": "tiny-base", "path": "/models/base"},
            "post": {"name": "tiny-post", "path": "/models/post"},
            "options": {"kept": 2},
        }
    )
    with store.transaction() as conn:
        job_id, (shard_id,) = probe.create_probe_job(conn, request)
        shard = conn.execute(
            "SELECT id, spec, config_hash FROM shards WHERE id = ?", [shard_id]
        ).fetchone()
    yield store, {"id": shard[0], "spec": json.loads(shard[1]), "config_hash": shard[2]}
    store.close()


def _answers(items, **change) -> list[ProbeOutcomeIn]:
    return [
        ProbeOutcomeIn(
            arm=i.arm,
            benchmark=i.benchmark,
            seed=i.seed,
            sample_id=i.sample_id,
            num_choices=i.num_choices,
            gold=i.gold,
            chosen=i.gold if i.arm != "shuffled" else None,
        ).model_copy(update=change)
        for i in items
    ]


def test_the_items_and_a_checked_upload(shard):
    store, s = shard
    with store.read() as conn:
        fetched = probe.shard_items(conn, s)
    arms = [i.arm for i in fetched.items]
    # 5 multiple-choice flips and the generative one (g0), which has no other to swap with
    assert arms.count("flips") == 6 and arms.count("shuffled") == 5
    assert arms.count("kept") == 2 and arms.count("base") == 6
    flips = {i.sample_id: i for i in fetched.items if i.arm == "flips"}
    assert flips["s0"].prompt == "<|user|>Which organ is number 0?<|assistant|>"
    assert flips["s0"].answer.startswith("Let me think about organ 0.") and flips["s0"].gold == 0
    shuffled = {i.sample_id: i.answer for i in fetched.items if i.arm == "shuffled"}
    assert sorted(shuffled) == [f"s{i}" for i in range(5)]  # g0: no other generative flip
    assert all(shuffled[k] != flips[k].answer for k in shuffled)  # none keeps its own answer
    assert (flips["g0"].num_choices, flips["g0"].gold, flips["g0"].gold_answer) == (0, 0, "4")
    assert "g0" not in shuffled
    base = {i.sample_id: i for i in fetched.items if i.arm == "base"}
    assert base["s1"].prompt == "Question: Which organ is number 1?\nAnswer:"
    with store.read() as conn:  # a benchmark filter: each benchmark's items, and only them
        pair = probe.stored_pair(conn, "tiny-base", "tiny-post", "probe")
        only = probe.probe_items(conn, pair, ProbeOptionsIn(benchmarks=["gsm8k"], kept=2))
        same = probe.probe_items(conn, pair, ProbeOptionsIn(benchmarks=["mmlu:anatomy"], kept=2))
    assert [(i.arm, i.sample_id) for i in only.items] == [("flips", "g0"), ("base", "g0")]
    assert same.items == [i for i in fetched.items if i.benchmark == "mmlu:anatomy"]
    good = _answers(fetched.items)
    with store.transaction() as conn:
        for broken, message in (
            (good[:-1], "holds 18 outcomes for the probe's 19 items"),
            ([*good, good[0]], "is sent twice"),
            ([good[0].model_copy(update={"gold": 3}), *good[1:]], "names other options"),
            ([good[0].model_copy(update={"sample_id": "s11"}), *good[1:]], "not an item"),
        ):
            with pytest.raises(InputError, match=message):
                probe.store_upload(conn, s, ProbeIn(outcomes=broken))
        first = probe.store_upload(conn, s, ProbeIn(outcomes=good))
        again = probe.store_upload(conn, s, ProbeIn(outcomes=good))  # replaces the first
    with store.read() as conn:
        (stored,) = probe_db.pair_probes(conn, 1)
        assert stored["id"] == again != first and not probe_db.probe_exists(conn, first)
        assert len(probe_db.probe_outcomes(conn, again)) == 19
        assert len(probe_db.probe_outcomes(conn, again, "kept")) == 2
    arms_report = stored["summary"]["arms"]
    # chance: 1/4 for each multiple-choice flip, 0 for the generative one
    assert arms_report["flips"] == {"n": 6, "recovered": 6, "rate": 1.0, "chance": 1.25 / 6}
    assert arms_report["shuffled"]["recovered"] == 0  # ties: no recovery
    beyond = stored["summary"]["recovered_beyond_shuffled"]
    assert beyond["difference"] == 1.0 and beyond["low"] == beyond["high"] == 1.0


def _csrf(html: str) -> str:
    import re

    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def test_the_form_the_drill_down_and_the_pair_page(shard, cli, tmp_path):
    """A logged-in submitter asks again from a cell's flips (the drill-down links the form for its
    benchmark), the form writes a probe job, and the pair page shows the newest probe with its
    controls; a model path outside the roots is refused on the form."""
    from fastapi.testclient import TestClient
    from forgetmap.runtime.config import WebSettings
    from forgetmap.web import create_app

    store, s = shard
    with store.read() as conn:
        fetched = probe.shard_items(conn, s)
    with store.transaction() as conn:
        probe.store_upload(conn, s, ProbeIn(outcomes=_answers(fetched.items)))
    store.close()
    # the map with what asking again found: every flip recovered, the control none (the
    # generative flip had no other to be shown)
    records = cli.json("map", "--level", "benchmark", "--format", "json", "--probes")
    asked = {
        r["benchmark"]: (r["n_10_probed"], r["n_10_recovered"], r["recovered_control"])
        for r in records
    }
    assert asked == {"mmlu:anatomy": (5, 5, 0), "gsm8k": (1, 1, 0)}
    categories = cli.json("map", "--format", "json", "--probes")
    anatomy = next(r["category"] for r in records if r["benchmark"] == "mmlu:anatomy")
    assert {r["category"]: r["n_10_recovered"] for r in categories} == {
        anatomy: 5,
        "Math": 1,
        "Total": 6,
    }
    assert "n_10_recovered" not in cli.json("map", "--format", "json")[0]
    token = cli("token", "create", "me").stdout.strip()
    (tmp_path / "models" / "post").mkdir(parents=True)
    (tmp_path / "models" / "base").mkdir(parents=True)
    settings = WebSettings(
        secret_key="k" * 40, reconcile_seconds=3600, model_roots=(tmp_path / "models",)
    )
    with TestClient(create_app(cli.db, settings=settings)) as client:
        flips = client.get("/pairs/1/samples?transition=10&benchmark=mmlu:anatomy").text
        assert "Ask the post model again about these flips</a> (the multiple-choice" in flips
        assert "/pairs/1/probe?benchmark=mmlu%3Aanatomy&amp;cause=all" in flips
        api = client.get("/api/map?level=benchmark&probes=true").json()
        assert [r["n_10_recovered"] for r in api] == [r["n_10_recovered"] for r in records]
        assert client.get("/api/map?page=1&probes=1").json() == categories
        heatmap = client.get("/?probes=1").text
        assert '"n_10_recovered":5,' in heatmap and 'name="probes" value="1" checked' in heatmap
        # the atlas: each flip asked again by its one recipe and recovered, the control none
        atlas = client.get("/api/atlas").json()["questions"]
        asked = {
            q["sample_id"]: (q["probed"], q["recovered"], q["recovered_control"]) for q in atlas
        }
        assert asked == {**{f"s{i}": (1, 1, 0) for i in range(5)}, "g0": (1, 1, 0)}
        most = client.get("/api/atlas?recovered_by_most=true").json()
        assert sorted(q["sample_id"] for q in most["questions"]) == [
            "g0",
            "s0",
            "s1",
            "s2",
            "s3",
            "s4",
        ]
        shown = client.get("/atlas?recovered_by_most=true").text
        assert "1 <small>of 1 (control 0)</small>" in shown
        assert 'name="recovered_by_most" value="true" checked' in shown
        page = client.get("/pairs/1").text
        assert 'id="asking-again"' in page and 'id="probe-table"' in page
        assert "Recovered beyond the shuffled control: <b>+100.0</b> points" in page
        assert "mmlu:anatomy 5/5" in page
        csrf = _csrf(client.get("/login").text)
        client.post("/login", data={"token": token, "csrf": csrf, "next": "/"})
        form = client.get("/pairs/1/probe?benchmark=mmlu:anatomy&cause=no_answer").text
        assert 'value="mmlu:anatomy"' in form and '<option value="no_answer" selected>' in form
        values = {
            "csrf": _csrf(form),
            "base_path": str(tmp_path / "models" / "base"),
            "post_path": "/etc",
            "benchmark": "mmlu:anatomy",
            "cause": "no_answer",
            "max_flips": "10",
            "kept": "0",
            "seed": "1",
            "engine": "transformers",
        }
        refused = client.post("/pairs/1/probe", data=values)
        assert refused.status_code == 200 and 'data-field="post_path"' in refused.text
        values["post_path"] = str(tmp_path / "models" / "post")
        done = client.post("/pairs/1/probe", data=values, follow_redirects=False)
        assert done.status_code == 303 and done.headers["location"].startswith("/jobs/")
        job = client.get("/api" + done.headers["location"].split("?")[0]).json()
        assert job["kind"] == "probe" and job["request"]["options"]["cause"] == "no_answer"
        assert len(job["shards"]) == 1 and job["shards"][0]["benchmark"] == "probe"


def test_a_judges_upload_is_checked_and_becomes_a_score_set(shard):
    """The judge's items are both sides' unread answers and an audit sample; its readings are
    checked against them, and the unread ones become the score set (a reading of "none" stays
    no_answer, a wrong option is wrong, the gold option right)."""
    from forgetmap.contract.judge import JudgeIn, JudgeJobIn, JudgeOutcomeIn
    from forgetmap.db import judge as judge_db
    from forgetmap.db import scores as scores_db
    from forgetmap.services import judge

    store, _ = shard
    request = JudgeJobIn.model_validate(
        {
            "kind": "judge",
            "base": "tiny-base",
            "post": "tiny-post",
            "judge": {"name": "a-judge", "path": "/models/judge"},
            "options": {"audit": 3},
        }
    )
    with store.transaction() as conn:
        _, (shard_id,) = judge.create_judge_job(conn, request)
        row = conn.execute(
            "SELECT id, spec, config_hash FROM shards WHERE id = ?", [shard_id]
        ).fetchone()
    s = {"id": row[0], "spec": json.loads(row[1]), "config_hash": row[2]}
    with store.read() as conn:
        items = judge.shard_items(conn, s).items
    assert [(i.purpose, i.model, i.sample_id) for i in items][:1] == [
        ("no_answer", "tiny-post", "s4")
    ]
    assert [i.purpose for i in items].count("audit") == 3
    readings = [
        JudgeOutcomeIn(
            purpose=i.purpose,
            model=i.model,
            benchmark=i.benchmark,
            seed=i.seed,
            sample_id=i.sample_id,
            num_choices=i.num_choices,
            chosen=i.gold if i.purpose == "no_answer" else i.harness,
        )
        for i in items
    ]
    with store.transaction() as conn:
        with pytest.raises(InputError, match="holds 3 readings for the judge's 4 items"):
            judge.store_upload(conn, s, JudgeIn(outcomes=readings[1:]))
        with pytest.raises(InputError, match="chose option 5 of 4 and none"):
            bad = readings[0].model_copy(update={"chosen": 5})
            judge.store_upload(conn, s, JudgeIn(outcomes=[bad, *readings[1:]]))
        judge.store_upload(conn, s, JudgeIn(outcomes=readings))
    with store.read() as conn:
        (run,) = judge_db.pair_judges(conn, 1)
        graded = scores_db.rescored_rows(conn, "judge:a-judge")
    assert run["audit"]["agreed"] == run["audit"]["audited"] == 3
    assert graded == [("tiny-post", "mmlu:anatomy", 0, "s4", "A", True, "answered", "judge")]
