"""The atlas on a real DuckDB file, against hand-computed values: recipes (a series counts once,
through its latest checkpoint), forgetting beyond chance, filters, paging, the question page, the
CSV/Parquet files, and the flipped questions the migration fills for pairs stored before it."""

from __future__ import annotations

import io

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from forgetmap.db.store import Store
from forgetmap.web import create_app

# per model, per question q0..q3 of one 4-option benchmark: correct under seeds (0, 1)
ANSWERS = {
    "llama-7b": {"q0": (1, 1), "q1": (1, 1), "q2": (1, 1), "q3": (0, 0)},
    "llama-7b-sft": {"q0": (0, 0), "q1": (0, 1), "q2": (1, 1), "q3": (1, 1)},
    "run-s1": {"q0": (0, 0), "q1": (1, 1), "q2": (1, 1), "q3": (0, 0)},
    "run-s2": {"q0": (1, 1), "q1": (1, 1), "q2": (0, 0), "q3": (0, 0)},
    "qwen-1b": {"q0": (1, 1), "q1": (1, 1), "q2": (0, 0), "q3": (0, 0)},
    "qwen-1b-instruct": {"q0": (0, 0), "q1": (1, 1), "q2": (0, 0), "q3": (0, 0)},
}
# chance terms c = (1 - acc_pre)(1 - acc_post) / 3, the mean over the two seeds, per recipe:
# llama-7b -> sft: (1/24 + 1/48) / 2 = 1/32; qwen: 1/8 both seeds; the series' step 2: 1/24
CHANCE = 1 / 32 + 1 / 8 + 1 / 24  # 19/96


@pytest.fixture
def stored(cli, tmp_path):
    # a category of the paper's, so that the map's Total (the size scatter's) counts it
    lines = ["model,benchmark,sample_id,seed,correct,num_choices,prompt,prediction,category"]
    for model, answers in ANSWERS.items():
        for q, seeds in answers.items():
            for seed, correct in enumerate(seeds):
                lines.append(
                    f"{model},quad,{q},{seed},{correct},4,Which is {q}?,{'AB'[correct]},Logic"
                )
    (tmp_path / "rows.csv").write_text("\n".join(lines) + "\n")
    cli("import", "table", tmp_path / "rows.csv")
    cli("pair", "add", "llama-7b", "llama-7b-sft", "--stage", "sft")
    cli("pair", "add", "qwen-1b", "qwen-1b-instruct", "--stage", "instruct")
    cli(
        "series",
        "add",
        "run",
        "--base",
        "llama-7b",
        "--checkpoint",
        "run-s1@1",
        "--checkpoint",
        "run-s2@2",
    )
    return cli


@pytest.fixture
def client(stored):
    with TestClient(create_app(stored.db)) as c:
        yield c


def ranked(client, **params):
    answer = client.get("/api/atlas", params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_questions_are_ranked_by_recipes_beyond_chance(client):
    atlas = ranked(client)
    assert (atlas["recipes"], atlas["total"]) == (3, 3)
    rows = [(q["sample_id"], q["forgot"], q["learned"]) for q in atlas["questions"]]
    # q0: the sft pair and qwen forgot it; the series' step 1 did too, but the run counts once,
    # through step 2, which kept it (counting pairs would say 3); q1: forgot in 1 of 2 seeds
    assert rows == [("q0", 2, 0), ("q1", 1, 0), ("q2", 1, 0)]
    assert [q["held"] for q in atlas["questions"]] == [3, 3, 3]  # "forgot 2 of 3 recipes"
    # reliable changes: a strict majority of the 2 seeds (both) beyond the pair's noise floor.
    # Only llama-7b-sft differs between its seeds (q1: 0 then 1): its floor is (0 + 1/4) / 2 = 1/8,
    # the pair's (1/8 + 0) / 2 = 1/16, and two flips in two seeds at 1/16 have chance 1/256. So
    # q0 (both seeds in the sft pair and in qwen) counts twice, q1 (one seed) never, q2 (the
    # series' step 2, both seeds, floor 0) once
    assert [q["forgot_reliable"] for q in atlas["questions"]] == [2, 0, 1]
    for q, forgot in zip(atlas["questions"], (2, 1, 1), strict=True):
        assert q["chance"] == pytest.approx(CHANCE)
        assert q["beyond"] == pytest.approx(forgot - 19 / 96)
        assert q["k"] == 4 and q["category"] and q["question"] == f"Which is {q['sample_id']}?"


def test_filters_choose_the_recipes_and_the_questions(client):
    instruct = ranked(client, stage="instruct")
    assert instruct["recipes"] == 1
    assert [(q["sample_id"], q["beyond"]) for q in instruct["questions"]] == [("q0", 0.875)]
    big = ranked(client, min_size_b=5)  # the llama recipes: the sft pair and the series
    assert big["recipes"] == 2 and {q["held"] for q in big["questions"]} == {2}
    assert [(q["sample_id"], q["forgot"]) for q in big["questions"]] == [
        ("q0", 1),
        ("q1", 1),
        ("q2", 1),
    ]
    assert ranked(client, family="qwen")["recipes"] == 1
    assert ranked(client, benchmark="nope")["total"] == 0
    paged = ranked(client, page=2, page_size=2)
    assert [q["sample_id"] for q in paged["questions"]] == ["q2"] and paged["total"] == 3


def test_the_atlas_as_csv_and_parquet(client):
    csv = pacsv.read_csv(io.BytesIO(client.get("/api/atlas.csv").content))
    assert csv.column_names == [
        "benchmark",
        "category",
        "sample_id",
        "k",
        "forgot",
        "learned",
        "held",
        "chance",
        "beyond",
        "forgot_reliable",
        "learned_reliable",
        "probed",
        "recovered",
        "recovered_control",
    ]
    assert csv["probed"].to_pylist() == [0, 0, 0, 0]  # nobody asked again
    # every question some recipe forgot or learned: q3 was learned by the sft pair
    assert csv["sample_id"].to_pylist() == ["q0", "q1", "q2", "q3"]
    assert csv["learned"].to_pylist() == [0, 0, 0, 1]
    assert csv["learned_reliable"].to_pylist() == [0, 0, 0, 1]
    parquet = pq.read_table(io.BytesIO(client.get("/api/atlas.parquet?stage=sft").content))
    assert parquet["sample_id"].to_pylist() == ["q0", "q1", "q3"]


def test_one_question_across_every_pair(client):
    q = client.get("/api/atlas/question", params={"benchmark": "quad", "sample_id": "q0"}).json()
    assert q["question"] == "Which is q0?"
    fates = [(p["post"], p["fate"], p["recipe"], p["step"]) for p in q["pairs"]]
    assert fates == [
        ("llama-7b-sft", "forgot", True, None),
        ("qwen-1b-instruct", "forgot", True, None),
        ("run-s1", "forgot", False, 1),
        ("run-s2", "kept", True, 2),
    ]
    assert q["recipe_counts"] == {"forgot": 2, "learned": 0, "kept": 1, "never": 0, "mixed": 0}
    sft = q["pairs"][0]["seeds"]
    assert [(s["seed"], s["base_prediction"], s["post_prediction"]) for s in sft] == [
        (0, "B", "A"),
        (1, "B", "A"),
    ]
    page = client.get("/atlas/question", params={"benchmark": "quad", "sample_id": "q0"})
    assert page.status_code == 200 and "an earlier checkpoint: not counted" in page.text
    missing = client.get("/api/atlas/question", params={"benchmark": "quad", "sample_id": "zz"})
    assert missing.status_code == 404 and "no question 'zz'" in missing.json()["detail"]


def test_the_page_and_the_old_address(client):
    page = client.get("/atlas", params={"stage": "sft"})
    assert page.status_code == 200
    assert 'id="atlas-table"' in page.text and "Which is q1?" in page.text
    old = client.get("/cross", follow_redirects=False)
    assert (old.status_code, old.headers["location"]) == (308, "/atlas")


def test_the_size_scatter_counts_recipes(client):
    def dots(**params):
        answer = client.get("/api/cross/size", params=params)
        assert answer.status_code == 200, answer.text
        return {d["pair_id"]: d for d in answer.json()}

    assert sorted(dots()) == [1, 2, 3, 4]  # by default one dot per pair: both series steps
    recipes = dots(recipes="true")
    # the series counts once, through its latest checkpoint (step 2 is pair 4)
    assert sorted(recipes) == [1, 2, 4]
    got = {i: (d["label"], d["series"], d["stage"], d["size_params"]) for i, d in recipes.items()}
    assert got == {
        1: ("llama-7b → llama-7b-sft", None, "sft", 7_000_000_000),
        2: ("qwen-1b → qwen-1b-instruct", None, "instruct", 1_000_000_000),
        4: ("series run (step 2)", "run", None, 7_000_000_000),  # a series gives no stage
    }
    # Total F_true per seed, F - c: the sft pair 2/4 - 1/24 and 1/4 - 1/48 (mean 11/32, sample
    # std (11/48) / sqrt 2); qwen 1/4 - 1/8 in both seeds; step 2 forgot q2 only: 1/4 - 1/24
    assert recipes[1]["f_true"] == pytest.approx(11 / 32)
    assert recipes[1]["f_true_std"] == pytest.approx(11 / 48 / 2**0.5)
    assert (recipes[2]["f_true"], recipes[2]["f_true_std"]) == (pytest.approx(1 / 8), 0)
    assert recipes[4]["f_true"] == pytest.approx(5 / 24)


FLIPS = """
SELECT f.pair_id, q.benchmark_id, q.sample_id, q.question, f.seed, f.num_choices, f.forgot
FROM question_flips f JOIN flipped_questions q ON q.id = f.question_id ORDER BY ALL
"""


def test_the_migration_fills_the_flips_of_pairs_stored_before_it(stored):
    store = Store(stored.db)
    try:
        with store.read() as conn:
            kept = conn.execute(FLIPS).fetchall()
        store.downgrade("0010")
        store.upgrade("0011")
        with store.read() as conn:
            assert conn.execute(FLIPS).fetchall() == kept  # the ids may differ, not the flips
    finally:
        store.close()
    # (sample, seed) flips: the sft pair q0 x2, q1 x1, q3 x2; qwen q0 x2; step 1 q0 x2; step 2 q2 x2
    assert len(kept) == 11 and kept[0][3] == "Which is q0?"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"min_size_b": "big"}, "min_size_b must be a number of billions, got 'big'"),
        ({"max_size_b": "-1"}, "max_size_b must be between 0 and 1,000,000"),
    ],
)
def test_a_bad_size_is_a_422_and_an_empty_one_is_no_filter(client, params, message):
    answer = client.get("/api/atlas", params=params)
    assert answer.status_code == 422 and message in answer.json()["detail"]
    assert ranked(client, min_size_b="", max_size_b="")["recipes"] == 3
