"""`forgetmap suite fetch` and `suite check`: local copies of the paper's benchmarks, written from a
folder in the hub's Parquet-export layout (through the real `datasets`), then loaded as a worker
loads them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner
from forgetmap.cli import main
from forgetmap.core.errors import InputError
from forgetmap.services.suite import check_suite, fetch_suite, read_manifest, select_benchmarks
from forgetmap.worker.benchmarks.items import load_jsonl_benchmark
from forgetmap.worker.benchmarks.registry import file_sha256, load_benchmark
from forgetmap.worker.benchmarks.sources import load_hub_rows

from tests.support.hub_layout import SPLITS, write_hub
from tests.support.services import require_module

require_module("datasets")

NAMES = sorted(SPLITS) + ["mctest"]


@pytest.fixture(scope="module")
def fetched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list]:
    root = tmp_path_factory.mktemp("suite")
    hub = write_hub(root / "hub")
    results = fetch_suite(NAMES, root / "copies", hub_dir=hub)
    return hub, root / "copies", results


def test_select_benchmarks() -> None:
    assert len(select_benchmarks()) == 94 == len(select_benchmarks(paper=True))
    assert select_benchmarks(["bbh_navigate", "PIQA", "bbh:navigate"]) == ["bbh:navigate", "piqa"]
    logic = select_benchmarks(categories=["Logic"])
    assert "arc:easy" in logic and "piqa" not in logic
    with pytest.raises(InputError, match="unknown benchmark.*mmlu_pro"):
        select_benchmarks(["mmlu_pro"])
    with pytest.raises(InputError, match="unknown categor.*Sports"):
        select_benchmarks(categories=["Sports"])
    with pytest.raises(InputError, match="one of"):
        select_benchmarks(["piqa"], paper=True)


def test_fetch_writes_copies_that_give_the_hubs_items(fetched) -> None:
    hub, copies, results = fetched
    assert {r.name: r.status for r in results} == {n: "fetched" for n in NAMES}
    manifest = read_manifest(copies)["benchmarks"]
    assert set(manifest) == set(NAMES)
    entry = manifest["bbh:causal_judgment"]
    assert entry["file"] == "bbh_causal_judgment.jsonl" and entry["rows"] == 2
    assert entry["sources"] == [
        {
            "repo": "lighteval/big_bench_hard",
            "config": "causal_judgement",
            "split": "train",
            "revision": None,
        }
    ]
    assert entry["sha256"] == file_sha256(copies / "bbh_causal_judgment.jsonl")
    assert [s["config"] for s in manifest["mctest"]["sources"]] == ["mc160", "mc500"]
    # every copy, loaded as a worker loads it (shuffles included), equals the hub's items
    for name in NAMES:
        for seed in (0, 1):
            via_copy = load_benchmark(name, local_dirs=[copies], seed=seed)
            via_hub = load_benchmark(name, fetch=partial(load_hub_rows, hub_dir=hub), seed=seed)
            assert via_copy.source == "local" and via_hub.source == "hub"
            assert via_copy.items == via_hub.items, name
    record = json.loads((copies / "bbh_ruin_names.jsonl").read_text().splitlines()[0])
    assert record["k"] == 4 and record["answer"] == "A" and record["category"] == "Language"
    gpqa = load_jsonl_benchmark(copies / "gpqa_diamond.jsonl")
    assert all(it.gold == "A" for it in gpqa)  # stored in the dataset's order, shuffled on load


def test_rerun_skips_current_copies_and_refetches_changed_ones(fetched) -> None:
    hub, copies, _ = fetched
    again = fetch_suite(["piqa", "hellaswag"], copies, hub_dir=hub)
    assert [r.status for r in again] == ["current", "current"]
    path = copies / "piqa.jsonl"
    original = path.read_text()
    path.write_text(original.replace("bobby pin", "hair pin"))
    (checked,) = check_suite(["piqa"], [copies])
    assert checked.ok and any("differs from its manifest.json" in p for p in checked.problems)
    assert [r.status for r in fetch_suite(["piqa"], copies, hub_dir=hub)] == ["fetched"]
    assert path.read_text() == original


def test_check_reports_source_n_and_histograms(fetched) -> None:
    _, copies, _ = fetched
    by = {r.name: r for r in check_suite(["truthfulqa:mc1", "bbh:ruin_names", "mctest"], [copies])}
    truthful = by["truthfulqa:mc1"]
    assert truthful.ok and truthful.source == "local" and truthful.n == 6
    assert truthful.k_histogram == {"2": 2, "3": 2, "4": 2}
    assert sum(truthful.gold_histogram.values()) == 6 and truthful.problems == []
    assert by["bbh:ruin_names"].k_histogram == {"4": 1}
    assert by["mctest"].gold_histogram == {"C": 5} and by["mctest"].n == 5


def test_check_flags_gold_always_at_one_letter(tmp_path: Path) -> None:
    rows = [
        {"question": f"q{n}", "choices": ["a", "b", "c", "d"], "answer": "A"} for n in range(25)
    ]
    (tmp_path / "mmlu_anatomy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (checked,) = check_suite(["mmlu:anatomy"], [tmp_path])
    assert checked.problems == ["the gold answer is A for 25 of 25 items (unshuffled?)"]


def test_cli_check_json_and_exit_code(fetched) -> None:
    _, copies, _ = fetched
    runner = CliRunner()
    env = {"FORGETMAP_BENCHMARK_DIRS": str(copies)}
    result = runner.invoke(
        main,
        ["suite", "check", "--benchmarks", "piqa,bbh:navigate_typo", "--format", "json"],
        env=env,
    )
    assert result.exit_code == 2 and "unknown benchmark(s): bbh:navigate_typo" in result.output
    result = runner.invoke(
        main, ["suite", "check", "--benchmarks", "piqa,hellaswag", "--format", "json"], env=env
    )
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)  # progress lines go to stderr
    assert [(r["name"], r["n"], r["source"]) for r in records] == [
        ("piqa", 2, "local"),
        ("hellaswag", 1, "local"),
    ]


def test_cli_fetch_and_offline_check_without_a_copy(tmp_path: Path) -> None:
    hub = write_hub(tmp_path / "hub", ["piqa"])
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(Path.cwd()),
        "FORGETMAP_BENCHMARK_DIRS": str(tmp_path / "copies"),
    }
    cli = [sys.executable, "-m", "forgetmap.cli", "suite"]
    fetch = subprocess.run(
        [
            *cli,
            "fetch",
            "--benchmarks",
            "piqa",
            "--out",
            str(tmp_path / "copies"),
            "--hub-dir",
            str(hub),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert fetch.returncode == 0, fetch.stderr
    assert "1 fetched, 0 already current, 0 failed" in fetch.stdout
    check = subprocess.run(
        [*cli, "check", "--benchmarks", "piqa,mmlu:anatomy"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 1
    assert "1 of 2 benchmarks do not load: mmlu:anatomy" in check.stderr
    out = " ".join(check.stdout.split())
    assert "no local copy mmlu_anatomy.jsonl" in out and "forgetmap suite fetch" in out
