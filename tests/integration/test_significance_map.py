"""Only what survives in red, end to end: `forgetmap import table` + `pair add` on a real DuckDB
file; a model against a seed-noise copy of itself has no significant cell, a pair with real
forgetting has some; p_adjusted is Benjamini-Hochberg over every record of the query (filters make
a smaller family); the CLI's JSON and CSV, /api/map, /api/map/cells and the page's zmax."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from fastapi.testclient import TestClient
from forgetmap.core.metrics import mcnemar_exact
from forgetmap.services.map import BENCHMARK_EXTRA, CATEGORY_EXTRA
from forgetmap.services.significance import SIGNIFICANCE_FIELDS
from forgetmap.web import create_app
from scipy.stats import false_discovery_control

from tests.integration.test_intervals import write_rows

N, SEEDS, BENCHES = 400, 3, ("alpha", "beta", "gamma")


def _models(rng: np.random.Generator) -> dict[str, dict]:
    """Per question a chance of being right (mostly sure, a fifth a coin flip), drawn again per
    seed: seed noise. "copy" is the base re-run (the same chances); "sft" forgot 40% of what the
    base was sure of (its chance there drops to 0.05)."""
    out: dict[str, dict] = {"base": {}, "copy": {}, "sft": {}}
    for bench in BENCHES:
        sure = rng.random(N) < 0.6
        chance = np.where(rng.random(N) < 0.2, 0.5, np.where(sure, 0.95, 0.05))
        forgot = np.where(sure & (rng.random(N) < 0.4), 0.05, chance)
        for name, c in (("base", chance), ("copy", chance), ("sft", forgot)):
            for seed in range(SEEDS):
                out[name][(bench, seed)] = (rng.random(N) < c).astype(int).tolist()
    return out


@pytest.fixture
def loaded(cli, tmp_path):
    data = _models(np.random.default_rng(2026))
    k = {b: [4] * N for b in BENCHES}
    for name, rows in data.items():
        cli("import", "table", write_rows(tmp_path / f"{name}.csv", name, rows, k))
    cli("pair", "add", "base", "copy", "--label", "self")
    cli("pair", "add", "base", "sft", "--label", "forgot")
    return cli


def _by_label(records: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in records:
        out.setdefault(r["label"], []).append(r)
    return out


def test_seed_noise_is_not_significant_and_real_forgetting_is(loaded):
    records = loaded.json("map", "--level", "benchmark", "--format", "json")
    assert len(records) == 2 * len(BENCHES) * SEEDS
    assert all(tuple(r)[-3:] == SIGNIFICANCE_FIELDS for r in records)
    by = _by_label(records)
    # the family is every record of the map: BH over all 18 McNemar p-values, as scipy computes it
    want = false_discovery_control([r["mcnemar_p"] for r in records], method="bh")
    assert [r["p_adjusted"] for r in records] == pytest.approx(want.tolist(), rel=1e-12)
    assert all(r["significant"] == (r["p_adjusted"] < 0.05) for r in records)
    assert not any(r["significant"] for r in by["self"])
    assert all(r["significant"] for r in by["forgot"])  # ~0.6 x 0.4 x 0.9 of N flipped 1->0
    # three seeds and a noise floor per model: decidable everywhere; the copy is inside it
    assert all(r["below_noise"] is True for r in by["self"])
    assert all(r["below_noise"] is False for r in by["forgot"])
    cells = loaded.json("map", "--level", "category", "--format", "json")
    # a category's McNemar: one seed's worth of discordant pairs, each benchmark's mean over its
    # seeds summed over the category's (here: Total's, which holds them all) benchmarks
    for r in cells:
        mine = [b for b in records if b["label"] == r["label"]]
        n_01 = round(sum(b["n_01"] for b in mine) / SEEDS)
        n_10 = round(sum(b["n_10"] for b in mine) / SEEDS)
        assert r["mcnemar_p"] == pytest.approx(mcnemar_exact(n_01, n_10), rel=1e-12)
    want = false_discovery_control([r["mcnemar_p"] for r in cells], method="bh")
    assert [r["p_adjusted"] for r in cells] == pytest.approx(want.tolist(), rel=1e-12)
    cat = _by_label(cells)
    assert not any(r["significant"] for r in cat["self"])
    assert all(r["significant"] for r in cat["forgot"])
    assert {r["below_noise"] for r in cat["self"]} == {True}
    assert {r["below_noise"] for r in cat["forgot"]} == {False}


def test_the_csv_lists_the_fields(loaded):
    assert BENCHMARK_EXTRA[-3:] == CATEGORY_EXTRA[-3:] == SIGNIFICANCE_FIELDS
    for level in ("benchmark", "category"):
        out = loaded("map", "--level", level, "--format", "csv").stdout
        rows = list(csv.DictReader(io.StringIO(out)))
        assert rows and all(name in rows[0] for name in SIGNIFICANCE_FIELDS)
        forgot = [r for r in rows if r["label"] == "forgot"]
        assert {r["below_noise"] for r in forgot} == {"False"}
        assert {r["significant"] for r in forgot} == {"True"}


@pytest.fixture
def client(loaded, tmp_path):
    from forgetmap.runtime.broker import BrokerSettings
    from forgetmap.runtime.config import WebSettings

    settings = WebSettings(secret_key="k" * 40, reconcile_seconds=3600)
    broker = BrokerSettings(url=None, data_dir=tmp_path)
    with TestClient(create_app(loaded.db, broker=broker, settings=settings)) as c:
        yield c


def test_api_cells_and_a_filtered_family(client, loaded):
    every = client.get("/api/map", params={"level": "benchmark"}).json()
    assert every == loaded.json("map", "--level", "benchmark", "--format", "json")
    # one pair on screen: a family of 9, so its adjusted p-values are smaller than in the 18
    alone = client.get("/api/map", params={"level": "benchmark", "q": "forgot"}).json()
    assert len(alone) == len(BENCHES) * SEEDS
    want = false_discovery_control([r["mcnemar_p"] for r in alone], method="bh")
    assert [r["p_adjusted"] for r in alone] == pytest.approx(want.tolist(), rel=1e-12)
    wide = {(r["benchmark"], r["seed"]): r["p_adjusted"] for r in every if r["label"] == "forgot"}
    assert all(r["p_adjusted"] <= wide[(r["benchmark"], r["seed"])] for r in alone)
    # the heatmap's cells: a benchmark cell is significant only when every seed is
    cells = client.get("/api/map/cells", params={"level": "benchmark"}).json()
    assert len(cells) == 2 * len(BENCHES)
    for c in cells:
        seeds = [r for r in every if r["pair_id"] == c["pair_id"] and r["benchmark"] == c["column"]]
        assert c["significant"] == all(r["significant"] for r in seeds)
        assert c["p_adjusted"] == max(r["p_adjusted"] for r in seeds)
        assert c["below_noise"] == seeds[0]["below_noise"]
    assert {c["significant"] for c in cells} == {True, False}


def test_zmax_is_validated_and_reaches_the_page(client):
    page = client.get("/", params={"zmax": "0.1"})
    assert page.status_code == 200 and 'data-zmax="0.1"' in page.text
    assert 'data-zmax=""' in client.get("/").text  # the default range: static/map.js
    for bad in ("0", "-0.2", "1.5", "nan", "inf", "x"):
        assert client.get("/", params={"zmax": bad}).status_code == 422, bad
