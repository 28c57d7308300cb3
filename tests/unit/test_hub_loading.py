"""Loading the paper's datasets through the real ``datasets.load_dataset`` from folders laid out
exactly like the hub's Parquet export (``<config>/<split>/0000.parquet``, no README), with rows in
each dataset's real schema. Nothing of ``datasets`` is replaced."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from forgetmap.worker.benchmarks.items import BenchmarkError
from forgetmap.worker.benchmarks.loaders import load_bbh, load_piqa
from forgetmap.worker.benchmarks.registry import load_benchmark
from forgetmap.worker.benchmarks.sources import HubSource, _gated_message, load_hub_rows

from tests.support.hub_layout import MCTEST, SPLITS, write_hub, write_split
from tests.support.services import require_module

datasets = require_module("datasets")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_hub(tmp_path_factory.mktemp("hub"))


def test_the_export_has_no_named_configs_so_the_config_folder_is_selected(hub: Path) -> None:
    repo = hub / "lighteval/big_bench_hard"
    # what the old fallback asked for: the export knows only 'default' (which merges all folders)
    with pytest.raises(ValueError, match=r"BuilderConfig 'causal_judgement' not found.*default"):
        datasets.load_dataset(str(repo), "causal_judgement", split="train")
    source = HubSource("lighteval/big_bench_hard", "causal_judgement", "train")
    rows = load_hub_rows(source, hub_dir=hub)
    assert isinstance(rows, datasets.Dataset)  # really read by datasets
    assert [r["target"] for r in rows] == ["Yes", "No"]  # causal_judgement's rows only
    items = load_bbh(rows, "bbh:causal_judgment")
    assert [(it.choices, it.gold) for it in items] == [(("Yes", "No"), "A"), (("Yes", "No"), "B")]
    assert items[0].question.endswith("Did Frank T. cause the damage?")  # options block removed


def test_piqa_from_its_plain_text_export_folder(hub: Path) -> None:
    rows = load_hub_rows(HubSource("ybisk/piqa", None, "validation", "plain_text"), hub_dir=hub)
    assert rows.features["label"].dtype == "int64"
    items = load_piqa(rows)
    assert [(it.k, it.gold) for it in items] == [(2, "A"), (2, "B")]


@pytest.mark.parametrize("name", sorted(SPLITS))
def test_every_loader_on_its_real_schema_through_datasets(hub: Path, name: str) -> None:
    split = SPLITS[name]
    fetch = partial(load_hub_rows, hub_dir=hub)
    items = load_benchmark(name, fetch=fetch, seed=3).items
    shown = [it.gold if it.choices is None else it.choices[it.gold_index] for it in items]
    assert shown == split.gold
    assert [it.k for it in items] == split.k
    assert len({it.sample_id for it in items}) == len(items)
    # a second load gives the same items (ids, shuffles): nothing depends on the run
    assert load_benchmark(name, fetch=fetch, seed=3).items == items


def test_awkward_values_arrive_as_the_loaders_expect(hub: Path) -> None:
    fetch = partial(load_hub_rows, hub_dir=hub)
    arc = load_benchmark("arc:challenge", fetch=fetch).items
    assert [it.sample_id for it in arc] == ["NYSEDREGENTS_2008_8_15", "Mercury_7175875"]
    assert arc[0].gold == "B" and arc[0].metadata["labels"] == ["1", "2", "3", "4"]
    (hella,) = load_benchmark("hellaswag", fetch=fetch).items
    assert (hella.sample_id, hella.gold) == ("24", "D")
    gpqa = load_benchmark("gpqa:diamond", fetch=fetch, seed=0).items
    assert len({it.gold for it in gpqa}) > 1  # gold first in the source, shuffled here
    assert load_benchmark("gpqa:diamond", fetch=fetch, seed=1).items != gpqa  # seeded
    truthful = load_benchmark("truthfulqa:mc1", fetch=fetch).items
    assert len({it.gold for it in truthful}) > 1
    (salad,) = load_benchmark("salad_bench:mrq", fetch=fetch, shuffle=False).items
    assert salad.gold_letters == ("A", "C")
    (musr,) = load_benchmark("musr:team_allocation", fetch=fetch).items
    assert musr.context == "In the heart of a bustling city..."


def test_mctest_pools_mc160_and_mc500(hub: Path) -> None:
    items = load_benchmark("mctest", fetch=partial(load_hub_rows, hub_dir=hub)).items
    assert len(items) == len(MCTEST["mc160"]) + len(MCTEST["mc500"]) == 5
    assert {it.question.split("(")[1].split()[0] for it in items} == {"mc160", "mc500"}
    assert len({it.sample_id for it in items}) == 5
    assert all("\\newline" not in it.context and it.gold == "C" for it in items)  # type: ignore[operator]


def test_missing_split_folder_is_named(tmp_path: Path) -> None:
    write_split(tmp_path, "ybisk/piqa", "plain_text", "train", SPLITS["piqa"].rows)
    with pytest.raises(BenchmarkError, match=r"plain_text/validation does not exist"):
        load_hub_rows(HubSource("ybisk/piqa", None, "validation", "plain_text"), hub_dir=tmp_path)


def test_gated_message_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    source = HubSource("Idavidrein/gpqa", "gpqa_diamond", "train", gated=True)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    text = _gated_message(source, PermissionError("401 Client Error"))
    assert "HF_TOKEN is not set" in text
    assert "https://huggingface.co/datasets/Idavidrein/gpqa" in text
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    assert "has not accepted the terms" in _gated_message(source, PermissionError("403"))


def test_a_script_based_repository_is_recognised_and_sent_to_the_export(tmp_path: Path) -> None:
    # a repository with a loading script, as ybisk/piqa's main branch: the real datasets refuses
    # it, and the loader goes on to the Parquet export (which, locally, still has the script)
    repo = tmp_path / "piqa"
    write_split(tmp_path, "piqa", "plain_text", "validation", SPLITS["piqa"].rows)
    (repo / "piqa.py").write_text("import datasets\n")
    with pytest.raises(BenchmarkError) as caught:
        load_hub_rows(HubSource(str(repo), None, "validation", "plain_text"))
    message = str(caught.value)
    assert (
        "it is script-based" in message and "refs/convert/parquet, folder 'plain_text'" in message
    )
    assert "forgetmap suite fetch" in message
