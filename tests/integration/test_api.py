"""The JSON API served by `forgetmap serve` (the dashboard issue adds pages on top)."""

from __future__ import annotations

import html

import pytest
from fastapi.testclient import TestClient
from forgetmap.web import create_app

from tests.support.tables import BASE, POST, rows_for, write_csv


@pytest.fixture
def client(cli, tmp_path):
    write_csv(tmp_path / "base.csv", rows_for("base-7b", BASE))
    write_csv(tmp_path / "post.csv", rows_for("post-7b", POST))
    cli("import", "table", tmp_path / "base.csv")
    cli("import", "table", tmp_path / "post.csv")
    cli("pair", "add", "base-7b", "post-7b", "--label", "7B")
    with TestClient(create_app(cli.db)) as client:
        yield client


def test_healthz(client):
    assert client.get("/healthz").json() == {"status": "ok"}


def test_api_map_returns_the_same_records_as_the_cli(client, cli):
    for params, args in (
        ({}, []),
        ({"level": "benchmark"}, ["--level", "benchmark"]),
        ({"aggregate": "micro"}, ["--aggregate", "micro"]),
    ):
        response = client.get("/api/map", params=params)
        assert response.status_code == 200
        assert response.json() == cli.json("map", "--format", "json", *args)


def test_api_map_rejects_bad_parameters_with_422(client):
    response = client.get("/api/map", params={"level": "planet"})
    assert response.status_code == 422
    assert "benchmark" in response.text and "category" in response.text


def test_api_pairs(client):
    [pair] = client.get("/api/pairs").json()
    assert (pair["id"], pair["base"], pair["post"], pair["label"]) == (
        1,
        "base-7b",
        "post-7b",
        "7B",
    )
    assert (pair["benchmarks"], pair["seeds"], pair["paired_samples"]) == (2, 2, 28)


def test_api_models_and_benchmarks(client):
    models = {m["name"]: m for m in client.get("/api/models").json()}
    assert set(models) == {"base-7b", "post-7b"}
    assert models["base-7b"]["size_params"] == 7_000_000_000
    benchmarks = {b["name"]: b for b in client.get("/api/benchmarks").json()}
    assert benchmarks["mmlu:anatomy"] == {
        "name": "mmlu:anatomy",
        "category": "Science/Tech",
        "num_choices": 4,
    }
    assert benchmarks["toy_arith"]["category"] == "Math"


def test_api_pair_detail_has_per_benchmark_rows_with_cis(client):
    pair = client.get("/api/pairs/1").json()
    assert (pair["base"], pair["post"], pair["label"]) == ("base-7b", "post-7b", "7B")
    rows = {r["benchmark"]: r for r in pair["benchmarks"]}
    anatomy = rows["mmlu:anatomy"]
    # counts summed over the two seeds (see test_import_and_map: (1,1,1,7) and (3,1,2,4))
    assert (anatomy["n_00"], anatomy["n_01"], anatomy["n_10"], anatomy["n_11"]) == (4, 2, 3, 11)
    assert anatomy["seeds"] == 2
    assert anatomy["f_true"] == pytest.approx(((0.1 - 0.04 / 3) + (0.2 - 0.2 / 3)) / 2)
    low, high = anatomy["f_true_ci"]
    assert 0.0 <= low <= anatomy["f_true"] <= high <= 1.0
    assert anatomy["mcnemar_p"] == pytest.approx(1.0)  # 2 vs 3 discordant: no evidence
    assert pair["quadrants"] == {"n_00": 6, "n_01": 3, "n_10": 4, "n_11": 15}


def test_api_flipped_samples_filters_and_paging(client):
    body = client.get("/api/pairs/1/samples", params={"benchmark": "mmlu:anatomy"}).json()
    # 1->0 on mmlu: q7 in seed 0; q4, q5 in seed 1
    assert body["total"] == 3
    assert {(s["sample_id"], tuple(s["seeds"])) for s in body["samples"]} == {
        ("q7", (0,)),
        ("q4", (1,)),
        ("q5", (1,)),
    }
    gained = client.get(
        "/api/pairs/1/samples", params={"transition": "01", "category": "Math"}
    ).json()
    assert [(s["benchmark"], s["sample_id"]) for s in gained["samples"]] == [("toy_arith", "q3")]
    page2 = client.get(
        "/api/pairs/1/samples", params={"transition": "11", "page_size": 5, "page": 2}
    ).json()
    assert page2["page"] == 2 and len(page2["samples"]) == 5
    found = client.get("/api/pairs/1/samples", params={"q": "question 7 of mmlu"}).json()
    assert [s["sample_id"] for s in found["samples"]] == ["q7"]
    # LIKE wildcards in the search text are literal, not patterns
    assert client.get("/api/pairs/1/samples", params={"q": "%"}).json()["total"] == 0


def test_samples_page_links_keep_the_page_size(client):
    """The page's previous/next links carry page_size, so page 2 has as many rows as page 1."""
    first = client.get("/pairs/1/samples", params={"transition": "11", "page_size": 5})
    assert first.status_code == 200
    assert "&amp;page_size=5&page=2" in first.text
    second = client.get("/pairs/1/samples", params={"transition": "11", "page_size": 5, "page": 2})
    assert "&amp;page_size=5&page=1" in second.text


def test_api_sample_detail(client):
    body = client.get(
        "/api/pairs/1/sample", params={"benchmark": "mmlu:anatomy", "sample_id": "q7"}
    ).json()
    assert [s["seed"] for s in body["seeds"]] == [0, 1]
    seed0 = body["seeds"][0]
    assert (seed0["base_correct"], seed0["post_correct"]) == (True, False)
    assert seed0["prompt"] == "question 7 of mmlu_anatomy"


def test_api_exports(client):
    csv_text = client.get("/api/pairs/1/benchmarks.csv").text
    assert csv_text.splitlines()[0].startswith('"benchmark","category"')
    assert len(csv_text.strip().splitlines()) == 3
    import io

    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(client.get("/api/pairs/1/samples.parquet").content))
    assert table.num_rows == 28
    assert {"base_correct", "post_correct", "base_response", "post_response"} <= set(
        table.column_names
    )


def test_api_cross_views(client):
    forgotten = client.get("/api/cross/forgotten").json()
    # 1->0 in at least half of the two seeds: q7 (seed 0), q4 and q5 (seed 1), toy q0 (seed 0)
    assert {(f["benchmark"], f["sample_id"]) for f in forgotten} == {
        ("mmlu:anatomy", "q7"),
        ("mmlu:anatomy", "q4"),
        ("mmlu:anatomy", "q5"),
        ("toy_arith", "q0"),
    }
    assert all(f["pairs"] == 1 and f["pair_ids"] == [1] for f in forgotten)
    [dot] = client.get("/api/cross/size").json()
    assert dot["size_params"] == 7_000_000_000 and dot["label"] == "7B"


def test_api_map_filters(client):
    assert client.get("/api/map", params={"stage": "rl"}).json() == []
    assert len(client.get("/api/map", params={"q": "7b"}).json()) == 3
    assert client.get("/api/map", params={"min_size": 1e10}).json() == []
    assert len(client.get("/api/map/cells", params={"level": "benchmark"}).json()) == 2


@pytest.mark.parametrize(
    ("url", "status", "text"),
    [
        ("/api/pairs/99", 404, "pair 99 does not exist"),
        ("/api/pairs/99/samples", 404, "pair 99 does not exist"),
        ("/api/pairs/1/samples?benchmark=nope", 404, "benchmark 'nope' does not exist"),
        ("/api/pairs/1/samples?transition=12", 422, "transition"),
        ("/api/pairs/1/samples?page=0", 422, "greater than or equal to 1"),
        ("/api/pairs/abc", 422, "integer"),
        ("/api/pairs/1/sample?benchmark=mmlu:anatomy&sample_id=nope", 404, "sample 'nope'"),
        ("/api/pairs/1/sample?benchmark=mmlu:anatomy", 422, "sample_id"),
        ("/api/pairs/1/benchmarks.xlsx", 422, "csv"),
        ("/api/map?aggregate=median", 422, "macro"),
        ("/pairs/99", 404, "pair 99 does not exist"),
        ("/pairs/1/samples?transition=5", 422, "transition"),
    ],
)
def test_errors_are_clear(client, url, status, text):
    response = client.get(url)
    assert response.status_code == status
    assert text in response.text


def test_pages_render(client):
    for url in (
        "/",
        "/?level=benchmark&metric=net",
        "/pairs/1",
        "/pairs/1/samples",
        "/cross",
        "/pairs/1/sample?benchmark=toy_arith&sample_id=q0",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "text/html" in response.headers["content-type"]
    fragment = client.get("/pairs/1/samples", headers={"HX-Request": "true"}).text
    assert "<html" not in fragment and "sample-count" in fragment
    assert client.get("/openapi.json").json()["info"]["title"] == "forgetmap"


def test_theory_page_and_api(client):
    data = client.get("/api/theory", params={"separation": 5, "steps": 100}).json()
    assert data["params"]["separation"] == 5.0
    assert data["weights"]["forward_alpha"][-1] < 0.05  # SFT drains the old mode
    assert abs(data["weights"]["reverse_alpha"][-1] - 0.5) < 1e-3  # RL keeps it
    assert client.get("/api/theory", params={"replay": 2}).status_code == 422
    page = client.get("/theory")
    assert page.status_code == 200 and "plot-drift" in page.text


def test_theory_replay_reaches_every_plot_it_concerns(client):
    """The replay input moves plot 1 (SFT with replay settles at lambda) and plot 3 (the chosen
    lambda is on its grid, also beyond the default grid's 0.5), as well as plot 4."""
    runs = {
        lam: client.get("/api/theory", params={"replay": lam, "steps": 200}).json()
        for lam in (0.1, 0.8)
    }
    for lam, data in runs.items():
        assert abs(data["weights"]["forward_replay_alpha"][-1] - lam) < 0.05
        assert data["weights"]["forward_alpha"][-1] < 0.05  # without replay SFT still drains it
        grid = data["replay"]["replay"]
        assert lam in grid and max(grid) >= lam and grid == sorted(grid)
    assert runs[0.8]["replay"]["replay"][-1] == 0.8  # the axis reaches the chosen value
    assert (
        runs[0.1]["starvation"]["by_batch_size"]["replay_empirical"]
        != runs[0.8]["starvation"]["by_batch_size"]["replay_empirical"]
    )


def test_docs_page_uses_local_assets_only(client):
    html = client.get("/docs").text
    assert "/static/swagger/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower() and "https://" not in html
    assert client.get("/static/swagger/swagger-ui-bundle.js").status_code == 200


def test_map_size_filter_in_billions(client):
    assert len(client.get("/api/map", params={"min_size_b": 6, "max_size_b": 8}).json()) == 3
    assert client.get("/api/map", params={"max_size_b": 3}).json() == []
    assert 'name="min_size_b" value="6.0"' in client.get("/", params={"min_size_b": 6}).text


@pytest.mark.parametrize(
    ("path", "query", "text"),
    [
        ("/pairs/1/samples", "page=0", "greater than or equal to 1"),
        ("/pairs/1/samples", "page=1000001", "less than or equal to 1000000"),
        ("/pairs/1/samples", "page_size=501", "less than or equal to 500"),
        ("/pairs/1/samples", "q=" + "x" * 201, "at most 200 characters"),
        ("/pairs/1/samples", "benchmark=" + "b" * 501, "at most 500 characters"),
        ("/pairs/1/samples", "transition=5", "transition"),
        ("/pairs/-1/samples", "", "greater than or equal to 0"),
        ("/pairs/1/sample", "benchmark=toy_arith", "sample_id"),
        ("/pairs/1/sample", "benchmark=toy_arith&sample_id=", "at least 1 character"),
        ("/pairs/-1", "", "greater than or equal to 0"),
    ],
)
def test_a_page_and_its_json_route_reject_a_query_alike(client, path, query, text):
    page = client.get(f"{path}?{query}")
    api = client.get(f"/api{path}?{query}")
    assert page.status_code == api.status_code == 422
    message = api.json()["detail"]
    assert text in message
    assert "text/html" in page.headers["content-type"]
    assert message in html.unescape(page.text)


def test_a_page_and_its_json_route_read_a_query_alike(client):
    query = "transition=11&category=Total&q=&page=1&page_size=2"
    api = client.get(f"/api/pairs/1/samples?{query}").json()
    assert (api["page"], api["page_size"], api["transition"]) == (1, 2, "11")
    assert 0 < len(api["samples"]) <= 2
    page = client.get(f"/pairs/1/samples?{query}", headers={"HX-Request": "true"}).text
    for sample in api["samples"]:
        assert html.escape(sample["sample_id"]) in page


def test_a_flips_letters_are_one_seeds_and_both_prompts_show(cli, tmp_path):
    """q0 is forgotten in seeds 0 and 2 (not 1); each seed answered otherwise. The list shows
    gold, base and post answers of one seed, the first forgotten one, and names it; the sample
    shows the base's few-shot prompt and the post's chat prompt, each as it was asked."""

    def rows(model: str, correct: list[int], letter: str, prompt: str) -> list[dict]:
        common = {"model": model, "benchmark": "mmlu_anatomy", "sample_id": "q0"}
        # the last seed first: no row order makes the first seed's letters come first
        return [
            {
                **common,
                "seed": seed,
                "correct": correct[seed],
                "num_choices": 4,
                "prompt": prompt,
                "prediction": f"{letter}{seed}",
                "gold": "A",
            }
            for seed in (2, 1, 0)
        ]

    few_shot, chat = "Q: 2+2? A: 4\nQ: question 0 A:", "<|user|>question 0<|assistant|>"
    write_csv(tmp_path / "b.csv", rows("base-1b", [1, 1, 1], "A", few_shot))
    write_csv(tmp_path / "p.csv", rows("post-1b", [0, 1, 0], "B", chat))
    cli("import", "table", tmp_path / "b.csv")
    cli("import", "table", tmp_path / "p.csv")
    cli("pair", "add", "base-1b", "post-1b")
    with TestClient(create_app(cli.db)) as client:
        [sample] = client.get("/api/pairs/1/samples").json()["samples"]
        assert sample["seeds"] == [0, 2]
        letters = (sample["base_prediction"], sample["post_prediction"], sample["letters_seed"])
        assert letters == ("A0", "B0", 0)
        page = client.get("/pairs/1/samples").text
        assert 'A0 · B0 <small class="letters-seed">seed 0</small>' in page
        where = {"benchmark": sample["benchmark"], "sample_id": "q0"}
        detail = client.get("/pairs/1/sample", params=where)
        assert (
            f'<pre class="prompt-text" id="base-prompt">{html.escape(few_shot)}</pre>'
            in detail.text
        )
        assert f'<pre class="prompt-text" id="post-prompt">{html.escape(chat)}</pre>' in detail.text
