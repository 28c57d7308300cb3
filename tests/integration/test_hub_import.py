"""`forgetmap import hub` on the Open LLM Leaderboards' details datasets (both generations, a
base model and its chat/instruct model each) and on Every Eval Ever files, from a Hugging Face
cache in huggingface_hub's real layout with HF_HUB_OFFLINE=1: the real library in the real
command's process, no network. The map's values are computed by hand from the trees in
tests/support/leaderboard_layout.py; the same import goes through an app that owns the database
(the files uploaded to it)."""

from __future__ import annotations

import json
import sys
from fnmatch import fnmatch
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from forgetmap.core.errors import InputError
from forgetmap.importers.hub.fetch import download
from forgetmap.importers.hub.leaderboards import V1, V2, run_key
from forgetmap.importers.hub.truthfulqa import mc1_details

from tests.support import eee_files
from tests.support.hub_cache import forgetmap, offline_env
from tests.support.leaderboard_layout import (
    V1_NEW,
    V1_OLD,
    V2_OLD,
    Item,
    v1_details,
    write_cached_dataset,
    write_leaderboard_cache,
)
from tests.support.server import Server

pytestmark = pytest.mark.integration

V1_BASE, V1_CHAT = (
    "open-llm-leaderboard-old/details_acme__Tiny-7B",
    "open-llm-leaderboard-old/details_acme__Tiny-7B-Chat",
)
V1_LIGHTEVAL = "open-llm-leaderboard-old/details_acme__Tiny-7B-Instruct"
V2_BASE = "open-llm-leaderboard/acme__Tiny-8B-details"
V2_INSTRUCT = "open-llm-leaderboard/acme__Tiny-8B-Instruct-details"


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> dict:
    """The environment of a node whose Hugging Face cache holds the four datasets, offline."""
    root = tmp_path_factory.mktemp("hf")
    cache = write_leaderboard_cache(root / "hub")
    return offline_env(cache, root / "home")


def benchmark_map(db: Path, env: dict) -> dict[tuple[str, str], dict]:
    records = json.loads(
        forgetmap(db, env, "map", "--level", "benchmark", "--format", "json").stdout
    )
    return {(r["post"], r["benchmark"]): r for r in records}


# Each benchmark's (category, n, n_00, n_01, n_10, n_11, f_chance, f_true, bt_true), by hand: the
# chance term per k-group, c_g = (1 - acc_pre_g)(1 - acc_post_g) / (k_g - 1), weighted n_g / N.
V1_EXPECTED = {
    # acc_norm (acc says the opposite); k 4: 11 10 00 01 -> c 1/4 * 1/4 / 3 = 1/12; k 3: 00 10 ->
    # 1/2 * 1 / 2 = 1/4; k 5: 01 -> 0; c = 4/7 * 1/12 + 2/7 * 1/4 = 5/42; F = BT = 2/7
    "arc:challenge": ("Logic", 7, 2, 2, 2, 1, 5 / 42, 2 / 7 - 5 / 42, 2 / 7 - 5 / 42),
    # k 4: 11 10 11 01 -> c = 1/4 * 1/4 / 3 = 1/48
    "mmlu:anatomy": ("Science/Tech", 4, 0, 1, 1, 2, 1 / 48, 1 / 4 - 1 / 48, 1 / 4 - 1 / 48),
    # mc1's options only (2, 2, 4, 4; with mc2's they were 5, 5, 7, 7): k 2: 10 11 -> acc_pre 1,
    # c 0; k 4: 10 00 -> 1/2 * 1 / 3 = 1/6; c = 2/4 * 1/6 = 1/12; F = 2/4
    "truthfulqa:mc1": ("Safety/Truth", 4, 1, 0, 2, 1, 1 / 12, 1 / 2 - 1 / 12, 0.0),
    # k 2: 11 11 10 00 -> c = 1/4 * 1/2 / 1 = 1/8; F = 1/4
    "winogrande": ("Commonsense", 4, 1, 0, 1, 2, 1 / 8, 1 / 8, 0.0),
    # generative: no chance term
    "gsm8k": ("Math", 3, 0, 1, 1, 1, 0.0, 1 / 3, 1 / 3),
}
V2_EXPECTED = {
    # k 2: 11 11 10 01 -> c = 1/4 * 1/4 = 1/16 (the first run's .json file: its only run)
    "bbh:navigate": ("Logic", 4, 0, 1, 1, 2, 1 / 16, 1 / 4 - 1 / 16, 1 / 4 - 1 / 16),
    # the later run's: k 4: 10 00 00 11 -> c = 1/2 * 3/4 / 3 = 1/8
    "gpqa:diamond": ("Science/Tech", 4, 2, 0, 1, 1, 1 / 8, 1 / 8, 0.0),
    # k 10: 01 00 -> c 1 * 1/2 / 9 = 1/18; k 9: 10 -> 0; c = 2/3 * 1/18 = 1/27
    "mmlu_pro": ("Knowledge/QA", 3, 1, 1, 1, 0, 1 / 27, 1 / 3 - 1 / 27, 1 / 3 - 1 / 27),
    # k 3: 00 -> c 1/2; k 5: 00 10 -> 1/2 * 1 / 4 = 1/8; c = 1/3 * 1/2 + 2/3 * 1/8 = 1/4
    "musr:object_placements": ("Logic", 3, 2, 0, 1, 0, 1 / 4, 1 / 3 - 1 / 4, 0.0),
    # k 3: 11 01 -> acc_post 1, c 0
    "musr:team_allocation": ("Logic", 2, 0, 1, 0, 1, 0.0, 0.0, 1 / 2),
    "math_hard:algebra": ("Math", 2, 1, 0, 1, 0, 0.0, 1 / 2, 0.0),
    "ifeval": ("Not scored", 2, 0, 1, 0, 1, 0.0, 0.0, 1 / 2),
}
FIELDS = ("category", "n", "n_00", "n_01", "n_10", "n_11", "f_chance", "f_true", "bt_true")


def _check(records: dict, post: str, expected: dict) -> None:
    assert {b for p, b in records if p == post} == set(expected)
    for benchmark, values in expected.items():
        got = records[(post, benchmark)]
        assert tuple(got[f] for f in FIELDS) == pytest.approx(values, abs=1e-12), benchmark


def test_both_leaderboards_to_the_hand_computed_map(hub, tmp_path):
    db = tmp_path / "fm.duckdb"
    first = forgetmap(db, hub, "import", "hub", V1_BASE)
    assert (
        first.stdout == "imported 22 new rows (0 already stored) for acme/Tiny-7B on 5 benchmarks\n"
    )
    assert "left out, not scored by the leaderboard: harness|gsm8k|0" in first.stderr
    assert f"model acme/Tiny-7B at revision {'a' * 40}" in first.stderr
    # again: fetches nothing (the cache has it), stores nothing twice
    again = forgetmap(db, hub, "import", "hub", V1_BASE)
    assert (
        again.stdout == "imported 0 new rows (22 already stored) for acme/Tiny-7B on 5 benchmarks\n"
    )
    forgetmap(db, hub, "import", "hub", V1_CHAT)
    forgetmap(db, hub, "import", "hub", V1_LIGHTEVAL)
    v2 = forgetmap(db, hub, "import", "hub", V2_BASE)
    assert v2.stdout == "imported 20 new rows (0 already stored) for acme/Tiny-8B on 7 benchmarks\n"
    forgetmap(db, hub, "import", "hub", V2_INSTRUCT)
    forgetmap(db, hub, "pair", "add", "acme/Tiny-7B", "acme/Tiny-7B-Chat")
    forgetmap(db, hub, "pair", "add", "acme/Tiny-7B", "acme/Tiny-7B-Instruct")
    forgetmap(db, hub, "pair", "add", "acme/Tiny-8B", "acme/Tiny-8B-Instruct")
    records = benchmark_map(db, hub)
    _check(records, "acme/Tiny-7B-Chat", V1_EXPECTED)  # the harness's columns, ids or not
    _check(records, "acme/Tiny-7B-Instruct", V1_EXPECTED)  # lighteval's rows against them
    _check(records, "acme/Tiny-8B-Instruct", V2_EXPECTED)
    # k per sample where a task mixes them (ARC's 3- and 5-option items, MMLU-Pro's 9)
    assert records[("acme/Tiny-7B-Chat", "arc:challenge")]["k_mix"] == "3:2,4:4,5:1"
    assert records[("acme/Tiny-8B-Instruct", "mmlu_pro")]["k_mix"] == "9:1,10:2"


def test_through_the_app_that_owns_the_database(hub, tmp_path):
    db = tmp_path / "fm.duckdb"
    server = Server(db)
    try:
        told = forgetmap(db, hub, "import", "hub", V1_BASE)
        assert (
            told.stdout
            == "imported 22 new rows (0 already stored) for acme/Tiny-7B on 5 benchmarks\n"
        )
        forgetmap(db, hub, "import", "hub", V1_CHAT)
        forgetmap(db, hub, "pair", "add", "acme/Tiny-7B", "acme/Tiny-7B-Chat")
        _check(benchmark_map(db, hub), "acme/Tiny-7B-Chat", V1_EXPECTED)
    finally:
        server.stop()


def test_include_and_model_choose_files_and_name(hub, tmp_path):
    db = tmp_path / "fm.duckdb"
    done = forgetmap(
        db, hub, "import", "hub", V1_BASE, "--include", "*hendrycksTest*", "--model", "mine"
    )
    assert done.stdout == "imported 4 new rows (0 already stored) for mine on 1 benchmarks\n"


def test_a_dataset_missing_from_the_offline_cache_is_one_line(hub, tmp_path):
    done = forgetmap(tmp_path / "fm.duckdb", hub, "import", "hub", "acme/not-cached", ok=False)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "error: dataset acme/not-cached (revision main) is not in the Hugging Face cache"
    )
    assert "HF_HUB_OFFLINE is set" in done.stderr and "nothing was imported" in done.stderr


def test_every_eval_ever_files(hub, tmp_path):
    source = eee_files.write_pair(tmp_path / "eee")
    files = {
        p.relative_to(source).as_posix(): p.read_bytes()
        for p in sorted(source.rglob("*"))
        if p.is_file()
    }
    write_cached_dataset(Path(hub["HF_HUB_CACHE"]), "acme/evals", files)
    db = tmp_path / "fm.duckdb"
    done = forgetmap(db, hub, "import", "hub", "acme/evals", "--include", "data/toy_mc/*")
    assert done.stdout == (
        f"imported 16 new rows (0 already stored) for {eee_files.BASE}, "
        f"{eee_files.POST} on 1 benchmarks\n"
    )
    done = forgetmap(db, hub, "import", "hub", "acme/evals")
    assert done.stdout.startswith("imported 16 new rows (16 already stored)")


# ---------------------------------------------------------------------------------------------
# the layouts' names and v1 TruthfulQA, without the hub


def test_file_names_of_both_generations():
    assert run_key(V1_OLD) == "2023-08-19T16-35-46.942696"
    name = f"details_harness|arc:challenge|25_{V1_OLD}.parquet"
    assert V1.file_task(name) == ("harness|arc:challenge|25", run_key(V1_OLD))
    [pattern] = V1.patterns("harness|arc:challenge|25", run_key(V1_OLD))
    assert fnmatch(f"{V1_OLD}/{name}", pattern)  # colons in the folder's and the file's times
    assert fnmatch(
        f"{V1_NEW}/details_harness|arc:challenge|25_{V1_NEW}.parquet",
        V1.patterns("harness|arc:challenge|25", V1_NEW)[0],
    )
    assert V2.file_task(f"samples_leaderboard_bbh_navigate_{V2_OLD}.json") == (
        "leaderboard_bbh_navigate",
        V2_OLD,
    )
    assert V2.metric_of("leaderboard_math_algebra_hard") == "exact_match"
    assert V2.metric_of("leaderboard_math_hard") is None  # a group: no samples of its own
    assert V1.metric_of("harness|gsm8k|0") is None and V1.metric_of("harness|gsm8k|5") == "acc"


def test_truthfulqa_keeps_mc1s_options(tmp_path):
    items = [Item("q", tuple(f"a{j}" for j in range(5)), True, mc1=2)]
    source = tmp_path / "tqa.parquet"
    source.write_bytes(v1_details("harness|truthfulqa:mc|0", items, {"mc1": [1], "mc2": [0.4]}))
    mc1_details(source, tmp_path / "mc1.parquet")
    [row] = pq.read_table(tmp_path / "mc1.parquet").to_pylist()
    assert row["choices"] == [" a0", " a1"] and row["gold_index"] == [0]
    assert len(row["predictions"]) == 2 and row["metrics"] == {"mc1": 1, "mc2": 0.4}


def test_without_huggingface_hub_the_fix_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # as if it were not installed
    with pytest.raises(InputError, match=r"needs huggingface_hub: pip install huggingface_hub"):
        download("acme/x", revision=None, patterns=["*"])
