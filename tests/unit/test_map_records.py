"""Benchmark-level map records: built from Python lists per column, same fields and values."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from forgetmap.db.pairing import add_pair
from forgetmap.db.store import open_store
from forgetmap.importers import import_file
from forgetmap.services.map import (
    BENCHMARK_EXTRA,
    BENCHMARK_FIELDS,
    CATEGORY_EXTRA,
    CATEGORY_FIELDS,
    MapQuery,
    benchmark_records,
)
from forgetmap.services.map_cache import heatmap_cells, map_records


def _load(tmp_path):
    store = open_store(tmp_path / "fm.duckdb")
    rows = {
        "model": [],
        "benchmark": [],
        "sample_id": [],
        "seed": [],
        "correct": [],
        "num_choices": [],
        "category": [],
    }
    for model, flip in (("base", 0), ("post", 1)):
        for seeds, bench, k in ((2, "piqa", 2), (1, "custom:gen", None), (1, "custom:mix", "mix")):
            for seed in range(seeds):
                for i in range(12):
                    rows["model"].append(model)
                    rows["benchmark"].append(bench)
                    rows["sample_id"].append(str(i))
                    rows["seed"].append(seed)
                    rows["correct"].append(bool((i + seed + flip * (i % 3 == 0)) % 2))
                    rows["num_choices"].append((2 + i % 2) if k == "mix" else k)
                    rows["category"].append(None if bench == "piqa" else "Custom")
    path = tmp_path / "r.parquet"
    pq.write_table(pa.table(rows), path)
    import_file(store, "table", path)
    with store.transaction() as conn:
        add_pair(conn, "base", "post", label="sft", stage=None)
    return store


def test_benchmark_records_have_the_contract_fields_then_the_extras(tmp_path):
    store = _load(tmp_path)
    try:
        records = benchmark_records(store)
        assert len(records) == 4  # piqa x 2 seeds, two one-seed benchmarks
        for r in records:
            assert tuple(r) == BENCHMARK_FIELDS + BENCHMARK_EXTRA
            assert type(r["seed"]) is int and type(r["n"]) is int and type(r["n_10"]) is int
            assert type(r["f_true"]) is float and 0.0 <= r["f_true"] <= 1.0
            assert r["label"] == "sft" and r["stage"] is None
        by = {(r["benchmark"], r["seed"]): r for r in records}
        assert by[("piqa", 0)]["num_choices"] == 2
        assert by[("custom:gen", 0)]["num_choices"] is None  # generative
        assert by[("custom:mix", 0)]["num_choices"] is None  # mixed k: see k_mix
        assert by[("custom:mix", 0)]["k_mix"] == "2:6,3:6"
        assert type(by[("piqa", 0)]["noise_floor"]) is float  # two seeds: a noise floor
        assert by[("custom:gen", 0)]["noise_floor"] is None  # one seed: none
        assert records == map_records(store, MapQuery(level="benchmark"))
        json.dumps(records, allow_nan=False)
    finally:
        store.close()


def _check_derived(r: dict) -> None:
    assert r["net"] == pytest.approx(r["bt_true"] - r["f_true"], abs=1e-12)
    if r["f_max"] > 0:
        assert r["f_rel"] == pytest.approx(r["f_true"] / r["f_max"], abs=1e-12)
    else:
        assert r["f_rel"] is None


def test_records_and_cells_carry_the_derived_metrics(tmp_path):
    store = _load(tmp_path)
    try:
        for level, fields in (
            ("benchmark", BENCHMARK_FIELDS + BENCHMARK_EXTRA),
            ("category", CATEGORY_FIELDS + CATEGORY_EXTRA),
        ):
            records = map_records(store, MapQuery(level=level))
            assert records and all(tuple(r) == fields for r in records)
            for r in records:
                _check_derived(r)
            cells = heatmap_cells(records, level)
            assert cells
            for c in cells:
                _check_derived(c)
            # both cases occur: a generative benchmark (F_max = acc_pre) and a base at chance
            assert {r["f_rel"] is None for r in records} == {True, False}
    finally:
        store.close()


def test_benchmark_records_of_an_empty_store(tmp_path):
    store = open_store(tmp_path / "e.duckdb")
    try:
        assert benchmark_records(store) == []
    finally:
        store.close()


def test_count_rows_come_in_key_order_whatever_order_they_are_stored_in():
    import numpy as np
    from forgetmap.db.queries import _in_order

    rng = np.random.default_rng(7)
    keys = ("pair_id", "benchmark_id", "seed", "k")
    grid = np.array(np.meshgrid(range(5), range(4), [0, 3, 1000], [0, 2, 4], indexing="ij"))
    rows = {name: grid[i].reshape(-1) for i, name in enumerate(keys)}
    rows["n_00"] = np.arange(len(rows["k"]))  # which stored row each one is
    ordered = _in_order(rows, keys)
    assert ordered is rows  # written in order: not sorted again
    stored = rng.permutation(len(rows["k"]))  # as a table rewritten pair by pair may hold them
    shuffled = {name: values[stored] for name, values in rows.items()}
    again = _in_order(shuffled, keys)
    assert np.array_equal(again["n_00"], np.arange(len(rows["k"])))
    for name in keys:
        assert np.array_equal(again[name], rows[name])
