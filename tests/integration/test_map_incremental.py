"""The map after a write recomputes only the pairs whose inputs changed, and gives exactly what a
full recompute gives (labels, new benchmarks, categories and noise floors included)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from forgetmap.db import open_store
from forgetmap.db.pairing import add_pair
from forgetmap.importers import import_file
from forgetmap.services.map import MapQuery
from forgetmap.services.map_cache import MapCache

from tests.support.series_fixtures import load_run


def _extra(path, model: str, bench: str, category: str | None, seeds=(0, 1)):
    rows = [
        {
            "model": model,
            "benchmark": bench,
            "sample_id": f"x{i}",
            "seed": s,
            "correct": (i + s) % 3 == 0,
            "num_choices": 4,
            "category": category,
        }
        for s in seeds
        for i in range(6)
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_incremental_category_map_equals_a_full_recompute(cli, tmp_path):
    load_run(cli, tmp_path)
    store = open_store(cli.db)
    try:
        query = MapQuery(level="category")
        cache = MapCache(store)
        before = {r["pair_id"]: r for r in cache.records(query) if r["category"] == "Total"}
        # uploads: results of one checkpoint and of the base on a new benchmark
        import_file(store, "table", _extra(tmp_path / "a.parquet", "run-step4", "extra", "Math"))
        import_file(store, "table", _extra(tmp_path / "b.parquet", "base", "extra", "Math"))
        after = cache.records(query)
        assert after == MapCache(store).records(query)  # a fresh cache computes all pairs
        # the base changed too, so every pair moved; now touch one checkpoint only
        for micro in (False, True):
            q = MapQuery(level="category", aggregate="micro" if micro else "macro")
            cache.records(q)
        # each pair's computed records, as the cache keeps them (every answer is a copy: its
        # p_adjusted is over the whole family, which one pair's write moves)
        parts = cache._category_parts["macro"]
        kept = {p: records for p, (_, records) in parts.items()}
        import_file(store, "table", _extra(tmp_path / "c.parquet", "run-step2", "extra", "Math"))
        again = cache.records(query)
        assert again == MapCache(store).records(query)
        again_totals = {r["pair_id"]: r for r in again if r["category"] == "Total"}
        assert [p for p in kept if parts[p][1] is not kept[p]] == [2]  # only step 2's pair
        assert before[2]["n_benchmarks"] == 2 and again_totals[2]["n_benchmarks"] == 3
        # a label, and a benchmark's category (an Uncategorized one named later), move records too
        with store.transaction() as conn:
            add_pair(conn, "base", "run-step3", label="renamed", stage="sft")
        import_file(store, "table", _extra(tmp_path / "d.parquet", "run-step1", "late", None))
        import_file(store, "table", _extra(tmp_path / "e.parquet", "base", "late", None))
        mid = cache.records(query)
        assert mid == MapCache(store).records(query)
        assert {r["label"] for r in mid if r["pair_id"] == 3} == {"renamed"}
        import_file(store, "table", _extra(tmp_path / "f.parquet", "run-step1", "late", "Culture"))
        final = cache.records(query)
        assert final == MapCache(store).records(query)
        assert "Culture" in {r["category"] for r in final if r["pair_id"] == 1}
        micro = MapQuery(level="category", aggregate="micro")
        assert cache.records(micro) == MapCache(store).records(micro)
    finally:
        store.close()


def test_incremental_benchmark_json_is_byte_for_byte_a_full_encoding(cli, tmp_path):
    import json

    import orjson

    store = open_store(cli.db)
    query = MapQuery(level="benchmark")
    try:
        cache = MapCache(store)
        assert cache.json(query) == b"[]"
        store.close()
        load_run(cli, tmp_path)
        store = open_store(cli.db)
        cache = MapCache(store)
        first = cache.json(query)
        assert first == orjson.dumps(MapCache(store).records(query))
        import_file(store, "table", _extra(tmp_path / "a.parquet", "run-step4", "extra", "Math"))
        import_file(
            store, "table", _extra(tmp_path / "b.parquet", "base", "extra", "Math", seeds=(0,))
        )
        second = cache.json(query)
        assert second != first
        assert second == orjson.dumps(MapCache(store).records(query))
        # the base has seed 0 only: seed 0 is paired, the checkpoint's seed 1 is not
        records = json.loads(second)
        assert {(r["benchmark"], r["seed"]) for r in records if r["pair_id"] == 4} >= {("extra", 0)}
    finally:
        store.close()


def test_a_write_during_the_first_map_keeps_no_parts_older_than_their_fingerprints(cli, tmp_path):
    """A fresh cache reads the fingerprints beside the records (MapCache._category_first); an
    import that commits between the two reads must not leave the new fingerprints on the old
    records, or the next map would show the old records until the pair changes again."""
    load_run(cli, tmp_path)
    store = open_store(cli.db)
    rows = [
        {
            "model": model,
            "benchmark": "extra",
            "sample_id": f"x{i}",
            "seed": 0,
            "correct": i % 3 == 0,
            "num_choices": 4,
            "category": "Culture",
        }
        for model in ("base", "run-step2")
        for i in range(20_000)
    ]
    late = tmp_path / "late.parquet"
    pq.write_table(pa.Table.from_pylist(rows), late)

    class ImportMeanwhile(MapCache):
        def _fingerprints(self):  # the records are read while this import runs (~0.5 s)
            import_file(store, "table", late)
            return super()._fingerprints()

    try:
        query = MapQuery(level="category")
        cache = ImportMeanwhile(store)
        first = cache.records(query)
        assert "Culture" not in {r["category"] for r in first}  # read before the import
        again = cache.records(query)
        assert again == MapCache(store).records(query)
        assert "Culture" in {r["category"] for r in again if r["pair_id"] == 2}
    finally:
        store.close()
