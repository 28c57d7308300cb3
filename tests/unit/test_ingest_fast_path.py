"""The import fast path: Parquet name columns read dictionary-encoded, keys coded in numpy.

Every behaviour of the plain path has to hold on it: same stored rows, one-line errors with the
right row number, duplicates and contradictions refused, the database unchanged on any error,
re-import a no-op, counts of pairs refreshed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from forgetmap import importers
from forgetmap.core.columns import dictionary_codes, distinct_pairs, map_values, pairs_repeat
from forgetmap.core.errors import InputError
from forgetmap.db import ingest as ingest_mod
from forgetmap.db.pairing import add_pair
from forgetmap.db.store import open_store
from forgetmap.importers import import_file
from forgetmap.importers import table as table_mod
from forgetmap.importers.common import prepare
from forgetmap.importers.table import read_table
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.store_contents import table_contents


@pytest.fixture
def store(tmp_path):
    s = open_store(tmp_path / "fm.duckdb")
    yield s
    s.close()


def contents(store) -> dict:
    with store.read() as conn:
        return table_contents(conn)


def results(store) -> list[tuple]:
    with store.read() as conn:
        return sorted(
            conn.execute(
                "SELECT m.name, b.name, r.seed, r.sample_id, r.correct, r.num_choices, "
                "r.run_id IS NOT NULL FROM results r JOIN models m ON m.id = r.model_id "
                "JOIN benchmarks b ON b.id = r.benchmark_id"
            ).fetchall()
        )


def write_parquet(path: Path, columns: dict, *, row_group_size: int | None = None) -> Path:
    pq.write_table(pa.table(columns), path, row_group_size=row_group_size)
    return path


def rows_table(n: int, model: str = "m", seeds: int = 1) -> dict:
    """n samples x seeds of piqa and a made-up benchmark, names with stray whitespace/aliases."""
    benches = ["piqa", " piqa ", "arc_easy", "custom:x"]  # arc_easy -> arc:easy (taxonomy)
    rows = {
        "model": [],
        "benchmark": [],
        "sample_id": [],
        "seed": [],
        "correct": [],
        "num_choices": [],
        "category": [],
    }
    for seed in range(seeds):
        for b in range(2):
            for i in range(n):
                name = benches[2 * b + (i % 2)] if b == 0 else ["arc_easy", "custom:x"][i % 2]
                rows["model"].append(model if i % 3 else f" {model}")
                rows["benchmark"].append(name)
                rows["sample_id"].append(f"q{i}" if i % 4 else f"q{i} ")
                rows["seed"].append(seed)
                rows["correct"].append((i * 7 + seed) % 3 == 0)
                rows["num_choices"].append(None if name == "custom:x" else 2)
                rows["category"].append("Custom" if name == "custom:x" else None)
    return rows


# ------------------------------------------------------------------------------ helpers


def test_dictionary_codes_folds_repeated_and_unused_values():
    values = pa.array(["a", "b", "a", "zz", "c"])  # "a" twice; "zz" used by no row
    col = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 4, 2, 0], pa.int32()), values)
    codes, distinct = dictionary_codes(pa.chunked_array([col]))
    decoded = [distinct[c].as_py() for c in codes]
    assert decoded == ["a", "b", "a", "c", "a", "a"]
    assert sorted(distinct.to_pylist()) == ["a", "b", "c"]


def test_dictionary_codes_of_chunks_with_different_dictionaries_and_of_plain_strings():
    c1 = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["x", "y"]))
    c2 = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), pa.array(["y", "z"]))
    codes, distinct = dictionary_codes(pa.chunked_array([c1, c2]))
    assert [distinct[c].as_py() for c in codes] == ["x", "y", "y", "z", "y"]
    plain = pa.chunked_array([pa.array(["x", "y"]), pa.array(["y", "z", "y"])])
    codes2, distinct2 = dictionary_codes(plain)
    assert [distinct2[c].as_py() for c in codes2] == ["x", "y", "y", "z", "y"]


@settings(max_examples=60, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 9)), max_size=40),
    wide=st.booleans(),
)
def test_pairs_repeat_says_true_exactly_when_a_pair_occurs_twice(pairs, wide):
    a = np.asarray([p[0] for p in pairs], np.int64)
    b = np.asarray([p[1] for p in pairs], np.int64)
    nb = 10 * 10**6 if wide else 10  # a code space too large for the bitmap: sorted codes
    assert pairs_repeat(a, 7, b, nb) == (len(set(pairs)) < len(pairs))


def test_pair_codes_that_would_overflow_are_refused():
    with pytest.raises(ValueError, match="do not fit an int64"):
        pairs_repeat(np.zeros(2, np.int64), 2**31, np.zeros(2, np.int64), 2**31)


def test_distinct_pairs_bitmap_and_sort_agree():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 50, 10_000)
    b = rng.integers(0, 40, 10_000)
    small = distinct_pairs(a, 50, b, 40)  # bitmap
    large = distinct_pairs(a, 50, b, 40 * 10**7)  # space too large: sorted keys
    expected = sorted(set(zip(a.tolist(), b.tolist(), strict=True)))
    assert list(zip(*[x.tolist() for x in small], strict=True)) == expected
    assert list(zip(*[x.tolist() for x in large], strict=True)) == expected


def test_map_values_runs_once_per_shared_dictionary_and_keeps_nulls():
    calls = []
    d = pa.array([" a", "b "])
    chunks = [
        pa.DictionaryArray.from_arrays(pa.array([0, None, 1], pa.int32()), d),
        pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), d),
    ]

    def trim(values):
        calls.append(len(values))
        return pc.utf8_trim_whitespace(values)

    out = map_values(pa.chunked_array(chunks), trim)
    assert pa.types.is_dictionary(out.type)
    assert out.to_pylist() == ["a", None, "b", "b", "a"]
    assert calls == [2]
    lengths = map_values(pa.chunked_array(chunks), pc.utf8_length)  # not strings: one per row
    assert lengths.to_pylist() == [2, None, 2, 2, 2]


# ------------------------------------------------------------------------------ reading


def test_parquet_reads_name_columns_dictionary_encoded_with_the_same_values_as_plain(tmp_path):
    cols = rows_table(40, seeds=2)
    path = write_parquet(tmp_path / "a.parquet", cols, row_group_size=25)
    table = read_table(path)
    assert pa.types.is_dictionary(table["sample_id"].type)
    assert pa.types.is_dictionary(table["benchmark"].type)
    prepared, benchmarks = prepare(table, source=path.name)
    csv_like, benchmarks_plain = prepare(
        read_table(_to_jsonl(tmp_path / "a.jsonl", cols)), source="a.jsonl"
    )
    assert benchmarks == benchmarks_plain
    assert benchmarks["custom:x"].category == "Custom"
    assert benchmarks["custom:x"].num_choices is None
    assert set(benchmarks) == {"piqa", "arc:easy", "custom:x"}
    for name in ("model", "benchmark", "sample_id", "seed", "correct", "num_choices", "category"):
        assert prepared[name].to_pylist() == csv_like[name].to_pylist(), name


def _to_jsonl(path: Path, cols: dict) -> Path:
    import json

    names = list(cols)
    with path.open("w", encoding="utf-8") as fh:
        for values in zip(*cols.values(), strict=True):
            fh.write(json.dumps(dict(zip(names, values, strict=True))) + "\n")
    return path


def test_plain_and_dictionary_imports_store_the_same_rows(tmp_path):
    cols = rows_table(30, seeds=2)
    a = open_store(tmp_path / "a.duckdb")
    b = open_store(tmp_path / "b.duckdb")
    try:
        s1 = import_file(a, "table", write_parquet(tmp_path / "f.parquet", cols, row_group_size=7))
        s2 = import_file(b, "table", _to_jsonl(tmp_path / "f.jsonl", cols))
        assert s1.rows_added == s2.rows_added == 120
        assert results(a) == results(b)
        assert ("m", "arc:easy", 0, "q0", True, 2, True) in results(a)  # trimmed, canonical
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize(
    "column, values, message",
    [
        (
            "correct",
            ["1", "0", "true", " FALSE ", "0.5", "1"],
            "row 5: correct must be 0/1 or true/false, got '0.5'",
        ),
        (
            "correct",
            ["1", "0", "1", None, "1", "1"],
            "row 4: correct must be 0/1 or true/false, got None",
        ),
        ("seed", ["0", " 1", "0", "1", "x", "0"], "row 5: seed must be an integer, got 'x'"),
        ("seed", ["0", "1", "", "1", "0", "0"], "row 3: seed is empty"),
        ("num_choices", ["2", "", "4", "1.5", "3", "2"], "row 4: num_choices must be an integer"),
        ("sample_id", ["a", "b", "c", "d", "  ", "f"], "row 5 has an empty sample_id"),
        ("benchmark", ["piqa", "piqa", "piqa", "piqa", "piqa", ""], "row 6 has an empty benchmark"),
    ],
)
def test_bad_values_in_dictionary_columns_name_the_right_row(
    store, tmp_path, column, values, message
):
    cols = {
        "model": ["m"] * 6,
        "benchmark": ["piqa"] * 6,
        "sample_id": list("abcdef"),
        "seed": ["0"] * 6,
        "correct": ["1", "0", "1", "0", "1", "0"],
        "num_choices": ["2"] * 6,
    }
    cols[column] = values
    # two rows per row group: each row group has its own dictionary
    path = write_parquet(tmp_path / "bad.parquet", cols, row_group_size=2)
    import_file(
        store,
        "table",
        write_parquet(
            tmp_path / "good.parquet",
            {
                **cols,
                **{
                    "model": ["g"] * 6,
                    "benchmark": ["piqa"] * 6,
                    "sample_id": list("abcdef"),
                    "seed": ["0"] * 6,
                    "correct": ["1"] * 6,
                    "num_choices": ["2"] * 6,
                },
            },
        ),
    )
    before = contents(store)
    with pytest.raises(InputError) as err:
        import_file(store, "table", path)
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    assert contents(store) == before


def test_string_columns_parse_per_distinct_value(store, tmp_path):
    cols = {
        "model": ["m"] * 6,
        "benchmark": ["piqa"] * 6,
        "sample_id": list("abcdef"),
        "seed": ["0", " 1 ", "+1", "0", "1", "0"],
        "correct": ["1", "0", "TRUE", " false", "1.0", "0.0"],
        "num_choices": ["2", "", "2", " ", "2", "2"],
    }
    import_file(store, "table", write_parquet(tmp_path / "s.parquet", cols, row_group_size=4))
    assert results(store) == [
        ("m", "piqa", 0, "a", True, 2, True),
        ("m", "piqa", 0, "d", False, None, True),
        ("m", "piqa", 0, "f", False, 2, True),
        ("m", "piqa", 1, "b", False, None, True),
        ("m", "piqa", 1, "c", True, 2, True),
        ("m", "piqa", 1, "e", True, 2, True),
    ]


def test_model_flag_fills_empty_and_null_model_names(store, tmp_path):
    cols = {
        "model": ["x", "", None, " x "],
        "benchmark": ["piqa"] * 4,
        "sample_id": ["1", "2", "3", "4"],
        "correct": [True, False, True, False],
    }
    import_file(store, "table", write_parquet(tmp_path / "m.parquet", cols), model="x")
    assert {r[0] for r in results(store)} == {"x"}
    assert len(results(store)) == 4
    with pytest.raises(InputError, match="--model 'y' given but the model column also names 'x'"):
        import_file(store, "table", write_parquet(tmp_path / "m2.parquet", cols), model="y")


# ------------------------------------------------------------------------------ duplicates


@pytest.mark.parametrize(
    "sample_ids, benches",
    [
        (["1", "2", "1"], ["piqa"] * 3),  # exact repeat, in another row group
        (["1", "2", " 1"], ["piqa"] * 3),  # the same after trimming
        (["1", "2", "1"], ["piqa", "piqa", "PIQA"]),  # the same after canonical names
    ],
)
def test_duplicate_keys_in_a_parquet_file_are_refused_and_nothing_changes(
    store, tmp_path, sample_ids, benches
):
    import_file(
        store,
        "table",
        write_parquet(
            tmp_path / "g.parquet",
            {"model": ["g"], "benchmark": ["piqa"], "sample_id": ["1"], "correct": [True]},
        ),
    )
    before = contents(store)
    path = write_parquet(
        tmp_path / "d.parquet",
        {
            "model": ["m"] * 3,
            "benchmark": benches,
            "sample_id": sample_ids,
            "seed": [0, 0, 0],
            "correct": [True, False, True],
        },
        row_group_size=2,
    )
    with pytest.raises(InputError) as err:
        import_file(store, "table", path)
    message = str(err.value)
    assert "1 duplicate (benchmark, sample_id, seed) keys" in message
    assert "benchmark='piqa' sample_id='1' seed=0 appears 2 times" in message
    assert "\n" not in message
    assert contents(store) == before


def test_same_sample_in_other_seed_or_model_is_not_a_duplicate(store, tmp_path):
    path = write_parquet(
        tmp_path / "ok.parquet",
        {
            "model": ["a", "a", "b"],
            "benchmark": ["piqa"] * 3,
            "sample_id": ["1"] * 3,
            "seed": [0, 1, 0],
            "correct": [True, False, True],
        },
    )
    assert import_file(store, "table", path).rows_added == 3


@pytest.mark.parametrize("route", ["codes", "sql"])
def test_duplicates_found_by_codes_or_when_codes_would_overflow_by_sql(
    store, tmp_path, monkeypatch, route
):
    if route == "sql":  # the keys do not fit an int64 code: SQL counts distinct keys
        monkeypatch.setattr(ingest_mod, "PAIR_KEY_LIMIT", 0)
    ok = write_parquet(
        tmp_path / "ok.parquet",
        {
            "model": ["m"] * 4,
            "benchmark": ["piqa", "piqa", "boolq", "boolq"],
            "sample_id": ["1", "2", "1", "2"],
            "correct": [True, False, True, False],
        },
    )
    assert import_file(store, "table", ok).rows_added == 4
    before = contents(store)
    dup = write_parquet(
        tmp_path / "dup.parquet",
        {
            "model": ["n"] * 3,
            "benchmark": ["piqa"] * 3,
            "sample_id": ["1", "2", "2"],
            "correct": [True, False, True],
        },
    )
    with pytest.raises(InputError, match="sample_id='2' seed=0 appears 2 times"):
        import_file(store, "table", dup)
    assert contents(store) == before


# ------------------------------------------------------------------------------ stored rows


def test_reimport_is_a_no_op_and_a_contradiction_is_refused(store, tmp_path):
    cols = rows_table(20, seeds=2)
    path = write_parquet(tmp_path / "a.parquet", cols, row_group_size=9)
    first = import_file(store, "table", path)
    assert first.rows_added == 80
    before = contents(store)
    again = import_file(store, "table", path)
    assert (again.rows_added, again.rows_unchanged) == (0, 80)
    assert contents(store) == before
    cols["correct"][5] = not cols["correct"][5]
    bad = write_parquet(tmp_path / "b.parquet", cols, row_group_size=9)
    with pytest.raises(InputError, match="is already stored with correct="):
        import_file(store, "table", bad)
    assert contents(store) == before


def test_a_new_seed_of_stored_units_adds_only_its_rows(store, tmp_path):
    one = rows_table(10, seeds=1)
    two = rows_table(10, seeds=2)
    import_file(store, "table", write_parquet(tmp_path / "1.parquet", one))
    summary = import_file(store, "table", write_parquet(tmp_path / "2.parquet", two))
    assert (summary.rows_added, summary.rows_unchanged) == (20, 20)
    assert len(results(store)) == 40
    with store.read() as conn:
        runs = conn.execute("SELECT count(*), count(DISTINCT id) FROM runs").fetchone()
        orphans = conn.execute(
            "SELECT count(*) FROM results r LEFT JOIN runs u ON u.id = r.run_id WHERE u.id IS NULL "
            "OR u.model_id <> r.model_id OR u.benchmark_id <> r.benchmark_id OR u.seed <> r.seed"
        ).fetchone()[0]
    assert runs == (6, 6)  # 3 benchmarks x 2 seeds
    assert orphans == 0


def test_each_row_gets_the_run_of_its_own_unit(store, tmp_path):
    cols = rows_table(15, model="a", seeds=3)
    for key, values in rows_table(15, model="b", seeds=3).items():
        cols[key] = cols[key] + values
    import_file(store, "table", write_parquet(tmp_path / "ab.parquet", cols, row_group_size=11))
    with store.read() as conn:
        bad = conn.execute(
            "SELECT count(*) FROM results r JOIN runs u ON u.id = r.run_id WHERE "
            "u.model_id <> r.model_id OR u.benchmark_id <> r.benchmark_id OR u.seed <> r.seed"
        ).fetchone()[0]
        n = conn.execute("SELECT count(*) FROM results").fetchone()[0]
    assert (bad, n) == (0, 180)


# ------------------------------------------------------------------------------ counts


def transitions(store) -> list[tuple]:
    with store.read() as conn:
        return sorted(conn.execute("SELECT * FROM transitions").fetchall())


def test_import_of_unpaired_models_leaves_counts_alone_and_paired_models_refresh(store, tmp_path):
    base = rows_table(12, model="base", seeds=1)
    post = rows_table(12, model="post", seeds=1)
    post["correct"] = [not c for c in post["correct"]]
    import_file(store, "table", write_parquet(tmp_path / "b.parquet", base))
    import_file(store, "table", write_parquet(tmp_path / "p.parquet", post))
    assert transitions(store) == []
    with store.transaction() as conn:
        add_pair(conn, "base", "post", label=None, stage=None)
    counted = transitions(store)
    assert sum(r[4] + r[5] + r[6] + r[7] for r in counted) == 24
    # an unrelated model changes nothing
    import_file(
        store, "table", write_parquet(tmp_path / "o.parquet", rows_table(12, model="other"))
    )
    assert transitions(store) == counted
    # a new seed of a paired model is counted at once (its partner has no seed 1: unpaired)
    more = rows_table(12, model="base", seeds=2)
    more2 = rows_table(12, model="post", seeds=2)
    more2["correct"] = [not c for c in more2["correct"]]
    import_file(store, "table", write_parquet(tmp_path / "b2.parquet", more))
    summary = import_file(store, "table", write_parquet(tmp_path / "p2.parquet", more2))
    assert summary.pairs_refreshed == (1,)
    assert {r[2] for r in transitions(store)} == {0, 1}
    with store.read() as conn:
        seed_pairs = conn.execute(
            "SELECT count(*) FROM seed_transitions WHERE seed_a = 0 AND seed_b = 1"
        ).fetchone()[0]
    assert seed_pairs > 0  # the noise floor of the paired models


def test_an_import_larger_than_one_batch_stores_every_row_once(tmp_path, monkeypatch):
    """A file of more rows than a batch is read and written in batches of one transaction,
    units spanning batches: the same rows (with their run ids) as one batch stores."""
    cols = rows_table(30, seeds=2)
    path = write_parquet(tmp_path / "f.parquet", cols)
    one, chunked = open_store(tmp_path / "one.duckdb"), open_store(tmp_path / "chunked.duckdb")
    try:
        import_file(one, "table", path)
        monkeypatch.setattr(table_mod, "BATCH_ROWS", 7)
        monkeypatch.setattr(importers, "JOIN_BYTES", 1)  # the store takes them one by one
        assert import_file(chunked, "table", path).rows_added == 120
        assert results(chunked) == results(one) and len(results(one)) == 120
    finally:
        one.close()
        chunked.close()
