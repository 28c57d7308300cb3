"""What a read page shows is cached until a write can change it: a shard's bookkeeping and the
results of a model no pair holds leave the read caches as they are (under load, every such write
emptied them and the map was computed again ~10 times a second); results of a paired model, or of
a benchmark the store did not know, move them."""

from __future__ import annotations

import pytest

from tests.support.app_client import admin_client


@pytest.fixture
def client(cli, tmp_path):
    rows = ["model,benchmark,sample_id,correct,num_choices"]
    rows += [f"{m},toy,q{i},{(i + n) % 2},4" for n, m in enumerate(("a", "b")) for i in range(6)]
    (tmp_path / "rows.csv").write_text("\n".join(rows) + "\n")
    cli("import", "table", tmp_path / "rows.csv")
    cli("pair", "add", "a", "b")
    with admin_client(cli) as c:
        c.store = c.app.state.store
        yield c


def shard_of(client, model: str, benchmark: str) -> int:
    body = {
        "models": [{"name": model, "path": f"org/{model}"}],
        "benchmarks": [benchmark],
        "seeds": [0],
        "config": {"engine": "transformers", "max_tokens": 4},
    }
    job = client.post("/api/jobs", json=body)
    assert job.status_code in (200, 201, 202), job.text
    return client.get(f"/api/jobs/{job.json()['id']}").json()["shards"][0]["id"]


def post(client, path: str, body: dict) -> None:
    answer = client.post(path, json=body, headers=client.worker)
    assert answer.status_code == 200, answer.text


def results(shard: int, ids, correct=True) -> dict:
    return {"shard_id": shard, "rows": [{"sample_id": i, "correct": correct} for i in ids]}


def test_bookkeeping_and_unpaired_results_keep_the_pages_cached(client):
    unpaired = shard_of(client, "c", "toy")
    base, post_model = shard_of(client, "a", "toy"), shard_of(client, "b", "toy")
    new_benchmark = shard_of(client, "c", "other")
    client.get("/api/map")
    before = client.store.page_version

    post(client, f"/api/shards/{unpaired}/start", {"worker": "w1", "delivery": "d1"})
    post(client, f"/api/shards/{unpaired}/progress", {"done": 1, "total": 6})
    post(client, "/api/results", results(unpaired, ["q0", "q1"]))
    assert client.store.page_version == before  # nothing a page shows has changed
    assert client.store.version >= before + 3  # (every write still counts)

    post(client, "/api/results", results(new_benchmark, ["x0"]))  # a benchmark new to the store
    assert client.store.page_version == before + 1
    names = [b["name"] for b in client.get("/api/benchmarks").json()]
    assert "other" in names

    map_before = client.get("/api/map").json()
    # a and b are a pair: their new rows move the counts, and the map with them
    post(client, "/api/results", results(base, ["q6", "q7"]))
    post(client, "/api/results", results(post_model, ["q6", "q7"], correct=False))
    assert client.store.page_version == before + 3
    map_after = client.get("/api/map").json()
    assert [r["n"] for r in map_before] == [6] and [r["n"] for r in map_after] == [8]
