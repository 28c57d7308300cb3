"""A merge sweep as its series shows it (issue 54, point 3 and 4), against hand-computed values.

The hand-built run of tests/support/series_fixtures.py is stored a second time as a sweep: its
checkpoints at steps 1-4 become the merges at mixes 0.25, 0.5, 0.75 and the post model at 1
(steps 250, 500, 750, 1000 of a series whose axis is the mix). Its F_true and BT_true are those
test_series.py computes by hand (Total, macro):

    mix     F_true   (std)            BT_true
    0.25    0        0                0
    0.5     19/72    sqrt(399)/144    0
    0.75    3/8      0                1/8
    1       1/8      0                1/8

Fates along the mix (known = right in at least half of the three seeds): s1 is forgotten by the
post model and undone at 0.75 (the largest mix still knowing it); s0 and g1 are known at both
ends and lost at 0.5 (and 0.75): newly forgotten by the merges; s3 learned; s2, g0 kept.
"""

from __future__ import annotations

import math

import pytest
from fastapi.testclient import TestClient
from forgetmap.web import create_app

from tests.support.series_fixtures import store_as_sweep, write_results

SWEEP = "run merged back"


@pytest.fixture
def client(cli, tmp_path):
    cli("import", "table", write_results(tmp_path / "run.parquet"))
    store_as_sweep(cli.db, SWEEP)
    with TestClient(create_app(cli.db)) as client:
        yield client


def test_the_curve_along_the_mix(client):
    (listed,) = client.get("/api/series").json()
    assert (listed["name"], listed["axis"], listed["steps"]) == (
        SWEEP,
        "mix",
        [250, 500, 750, 1000],
    )
    view = client.get(f"/api/series/{listed['id']}").json()
    total = {r["step"]: r for r in view["records"] if r["category"] == "Total"}
    assert total[250]["f_true"] == total[250]["bt_true"] == 0
    assert total[500]["f_true"] == pytest.approx(19 / 72, abs=1e-12)
    assert total[500]["f_true_std"] == pytest.approx(math.sqrt(399) / 144, abs=1e-12)
    assert total[500]["bt_true"] == 0
    assert (total[750]["f_true"], total[750]["bt_true"]) == pytest.approx((3 / 8, 1 / 8))
    assert (total[1000]["f_true"], total[1000]["bt_true"]) == pytest.approx((1 / 8, 1 / 8))
    pairs = {p["post"]: p["label"] for p in client.get("/api/pairs").json()}
    assert pairs["run-step2"] == f"{SWEEP} @ mix 0.5"


def test_the_choice(client):
    url = "/api/series/1/merge-choice"
    # keeping 80% of the gains (BT_true >= 0.1): 0.75 and 1 qualify, the post model forgets less
    kept = client.get(url, params={"keep_gains": 0.8}).json()
    assert (kept["mix"], kept["beats_post"]) == (1.0, False)
    assert "the post model itself" in kept["reason"]
    # no gains asked: the base, 0.25 tie at F_true 0, the larger mix wins; its interval [0, 0]
    # lies below the post model's [1/8, 1/8] (one value across seeds: a zero-width interval)
    anything = client.get(url, params={"keep_gains": 0}).json()
    assert (anything["mix"], anything["beats_post"]) == (0.25, True)
    assert [m["mix"] for m in anything["mixes"]] == [0, 0.25, 0.5, 0.75, 1]
    half = next(m for m in anything["mixes"] if m["mix"] == 0.5)
    margin = half["f_high"] - half["f_true"]
    assert margin > 0 and half["f_low"] == pytest.approx(max(19 / 72 - margin, 0))
    # net: BT_true - F_true is 0 at 0, 0.25 and 1, below elsewhere; the larger mix wins
    assert client.get(url, params={"objective": "net"}).json()["mix"] == 1.0
    assert client.get(url, params={"keep_gains": 1.5}).status_code == 422
    missing = client.get(url, params={"category": "Nope"})
    assert missing.status_code == 422 and "no score at mix 1" in missing.text


def test_the_choice_is_a_sweeps_only(cli, tmp_path, client):
    cli("series", "add", "a run", "--base", "base", "--checkpoint", "run-step1@7")
    refused = client.get("/api/series/2/merge-choice")
    assert refused.status_code == 422 and "not a merge sweep" in refused.text


def test_the_questions_along_the_mix(client):
    out = client.get("/api/series/1/questions").json()
    assert out["counts"] == {"relearned": 2, "forgotten": 1, "learned": 1, "kept": 2}
    by_id = {q["sample_id"]: q for q in out["questions"]}
    assert (by_id["s1"]["fate"], by_id["s1"]["last_known"]) == ("forgotten", 750)
    assert by_id["s0"]["fate"] == by_id["g1"]["fate"] == "relearned"
    page = client.get("/series/1", params={"category": "all"}).text
    assert "Questions along the mix" in page and '<th class="num">mix 0.25</th>' in page
    assert "newly forgotten by a merge (2)" in page and "forgotten by the post model (1)" in page
    row = page[page.index('data-fate="forgotten"') :]
    assert '<td class="num">mix 0.75</td>' in row[: row.index("</tr>")]
    assert 'id="choice-answer"' in page and "mix 1</b>" in page
    chosen = client.get("/series/1", params={"keep_gains": 0}).text
    assert "mix 0.25</b>" in chosen and "beats the post model beyond noise" in chosen
