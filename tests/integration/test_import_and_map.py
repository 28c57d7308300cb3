"""`forgetmap import table` + `pair add` + `map` end to end on a real DuckDB file, values by
hand."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from forgetmap.services.map import BENCHMARK_FIELDS, CATEGORY_FIELDS

from tests.support.cli import cli_both_ways

# Hand-built results. mmlu_anatomy (a taxonomy benchmark, k = 4) and toy_arith (generative, unknown
# to the taxonomy, category given in the file), two seeds each.
from tests.support.tables import BASE, POST, rows_for, write_csv


@pytest.fixture
def loaded(cli, tmp_path):
    write_csv(tmp_path / "base.csv", rows_for("base-7b", BASE))
    write_csv(tmp_path / "post.csv", rows_for("post-7b", POST))
    cli("import", "table", tmp_path / "base.csv")
    cli("import", "table", tmp_path / "post.csv")
    out = cli(
        "pair", "add", "base-7b", "post-7b", "--label", "7B -> instruct", "--stage", "instruct"
    )
    assert "added pair 1" in out.stdout
    return cli


cli = cli_both_ways()  # every test with the owner absent, then with a real serve owning the file


def by_key(records, *keys):
    if len(keys) == 1:
        return {r[keys[0]]: r for r in records}
    return {tuple(r[k] for k in keys): r for r in records}


def test_benchmark_level_json_matches_hand_computed_values(loaded):
    records = loaded.json("map", "--level", "benchmark", "--format", "json")
    assert len(records) == 4
    assert all(list(r)[: len(BENCHMARK_FIELDS)] == list(BENCHMARK_FIELDS) for r in records)
    r = by_key(records, "benchmark", "seed")

    # mmlu:anatomy seed 0: n11 = 7, n10 = 1, n00 = 1, n01 = 1
    a0 = r[("mmlu:anatomy", 0)]
    assert (a0["base"], a0["post"], a0["category"], a0["num_choices"]) == (
        "base-7b",
        "post-7b",
        "Science/Tech",
        4,
    )
    assert (a0["n"], a0["n_00"], a0["n_01"], a0["n_10"], a0["n_11"]) == (10, 1, 1, 1, 7)
    assert a0["acc_pre"] == 0.8 and a0["acc_post"] == 0.8
    assert a0["f"] == 0.1 and a0["bt"] == 0.1
    assert a0["f_chance"] == pytest.approx(0.2 * 0.2 / 3, abs=1e-15)
    assert a0["f_true"] == pytest.approx(0.1 - 0.04 / 3, abs=1e-15)
    assert a0["bt_true"] == pytest.approx(0.1 - 0.04 / 3, abs=1e-15)
    assert a0["f_max"] == pytest.approx((4 * 0.8 - 1) / 3, abs=1e-15)

    # mmlu:anatomy seed 1: n11 = 4, n10 = 2, n01 = 1, n00 = 3; acc .6 -> .5
    a1 = r[("mmlu:anatomy", 1)]
    assert (a1["n_00"], a1["n_01"], a1["n_10"], a1["n_11"]) == (3, 1, 2, 4)
    assert a1["f_chance"] == pytest.approx(0.4 * 0.5 / 3, abs=1e-15)
    assert a1["f_true"] == pytest.approx(0.2 - 0.2 / 3, abs=1e-15)
    assert a1["bt_true"] == pytest.approx(0.1 - 0.2 / 3, abs=1e-15)
    assert a1["bt_max"] == pytest.approx((4 * 0.5 - 1) / 3, abs=1e-15)

    # toy_arith: generative, so no chance term and ceilings equal accuracies
    g0 = r[("toy_arith", 0)]
    assert (g0["category"], g0["num_choices"]) == ("Math", None)
    assert (g0["n_00"], g0["n_01"], g0["n_10"], g0["n_11"]) == (1, 1, 1, 1)
    assert g0["f_chance"] == 0.0 and g0["f_true"] == 0.25 and g0["f_max"] == 0.5
    g1 = r[("toy_arith", 1)]
    assert g1["f"] == 0.0 and g1["f_true"] == 0.0 and g1["f_max"] == 0.75
    assert all(rec["label"] == "7B -> instruct" and rec["stage"] == "instruct" for rec in records)


def test_category_level_macro_and_micro_match_hand_computed_values(loaded):
    macro = by_key(loaded.json("map", "--level", "category", "--format", "json"), "category")
    assert set(macro) == {"Science/Tech", "Math", "Total"}
    assert all(list(r)[: len(CATEGORY_FIELDS)] == list(CATEGORY_FIELDS) for r in macro.values())
    sci = [0.1 - 0.04 / 3, 0.2 - 0.2 / 3]
    math_ = [0.25, 0.0]
    st = macro["Science/Tech"]
    assert (st["n_benchmarks"], st["seeds"]) == (1, 2)
    assert st["f_true"] == pytest.approx((sci[0] + sci[1]) / 2, abs=1e-15)
    assert st["f_true_std"] == pytest.approx(abs(sci[0] - sci[1]) / math.sqrt(2), abs=1e-15)
    assert macro["Math"]["f_true"] == pytest.approx(0.125, abs=1e-15)
    total_per_seed = [(sci[0] + math_[0]) / 2, (sci[1] + math_[1]) / 2]
    total = macro["Total"]
    assert total["n_benchmarks"] == 2
    assert total["f_true"] == pytest.approx(sum(total_per_seed) / 2, abs=1e-15)
    assert total["f_true_std"] == pytest.approx(
        abs(total_per_seed[0] - total_per_seed[1]) / math.sqrt(2), abs=1e-15
    )

    micro = by_key(loaded.json("map", "--aggregate", "micro", "--format", "json"), "category")
    micro_per_seed = [(10 * sci[0] + 4 * math_[0]) / 14, (10 * sci[1] + 4 * math_[1]) / 14]
    assert micro["Total"]["f_true"] == pytest.approx(sum(micro_per_seed) / 2, abs=1e-15)
    # one benchmark per category: micro equals macro there
    assert micro["Science/Tech"]["f_true"] == pytest.approx(st["f_true"], abs=1e-15)


def test_noise_floor_is_each_models_seed_vs_seed_flip_rate(loaded):
    records = by_key(
        loaded.json("map", "--level", "benchmark", "--format", "json"), "benchmark", "seed"
    )
    # base seed0 vs seed1 on mmlu: 2 flips of 10 in one direction -> (0.2 + 0) / 2 = 0.1
    # post seed0 vs seed1: 3 flips of 10 -> 0.15; the pair shows the mean of the two
    assert records[("mmlu:anatomy", 0)]["noise_floor"] == pytest.approx(0.125)
    # toy_arith: base 1100 -> 1110 flips 1 of 4 (0.25 / 2); post 0101 -> 1110 flips 3 of 4:
    # 2 up, 1 down -> (0.5 + 0.25) / 2
    assert records[("toy_arith", 0)]["noise_floor"] == pytest.approx((0.125 + 0.375) / 2)


def test_csv_and_table_formats(loaded):
    out = loaded("map", "--level", "benchmark", "--format", "csv").stdout.splitlines()
    assert out[0].split(",")[: len(BENCHMARK_FIELDS)] == list(BENCHMARK_FIELDS)
    assert len(out) == 5
    table = loaded("map").stdout
    assert "Science/Tech" in table and "Total" in table and "base-7b -> post-7b" in table


def test_reimporting_the_same_file_is_a_no_op(loaded, tmp_path):
    before = loaded.contents()
    out = loaded("import", "table", tmp_path / "base.csv")
    assert "imported 0 new rows (28 already stored)" in out.stdout
    assert loaded.contents() == before


def test_parquet_and_jsonl_import_the_same_rows_as_csv(cli, tmp_path):
    rows = rows_for("base-7b", BASE)
    write_csv(tmp_path / "a.csv", rows)
    cli("import", "table", tmp_path / "a.csv")
    csv_contents = cli.contents()["results"]
    for name, writer in (
        (
            "b.parquet",
            lambda p: pq.write_table(
                pa.Table.from_pylist(
                    [
                        {
                            **r,
                            "num_choices": r["num_choices"] or None,
                            "category": r["category"] or None,
                        }
                        for r in rows
                    ]
                ),
                p,
            ),
        ),
        (
            "c.jsonl",
            lambda p: p.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8"),
        ),
    ):
        other = type(cli)(tmp_path / f"{name}.duckdb")
        writer(tmp_path / name)
        other("import", "table", tmp_path / name)
        assert other.contents()["results"] == csv_contents, name


def test_model_option_fills_a_missing_model_column(cli, tmp_path):
    rows = [{k: v for k, v in r.items() if k != "model"} for r in rows_for("x", BASE)]
    write_csv(tmp_path / "nomodel.csv", rows)
    out = cli("import", "table", tmp_path / "nomodel.csv", "--model", "named-by-flag")
    assert "for named-by-flag" in out.stdout


def test_unpaired_samples_are_counted_not_silently_dropped(cli, tmp_path):
    base = rows_for("b", {("piqa", 0): [1, 0, 1]})
    post = rows_for("p", {("piqa", 0): [1, 1]}) + rows_for("p", {("piqa", 1): [0]})
    write_csv(tmp_path / "b.csv", base)
    write_csv(tmp_path / "p.csv", post)
    cli("import", "table", tmp_path / "b.csv")
    cli("import", "table", tmp_path / "p.csv")
    out = cli("pair", "add", "b", "p").stdout
    assert "1 only in base, 1 only in post" in out
    [rec] = cli.json("map", "--level", "benchmark", "--format", "json")
    assert (rec["seed"], rec["n"], rec["only_base"], rec["only_post"]) == (0, 2, 1, 0)
    # the file left num_choices empty (generative as shown): the taxonomy's usual k (2) does not
    # override what the file says was shown
    assert rec["num_choices"] is None and rec["category"] == "Commonsense"


def test_mixed_k_benchmark_through_the_store(cli, tmp_path):
    rows = []
    for model, values in (("b", [1, 1, 0, 0, 1, 1]), ("p", [0, 1, 0, 1, 1, 0])):
        for i, c in enumerate(values):
            rows.append(
                {
                    "model": model,
                    "benchmark": "truthfulqa_mc1",
                    "sample_id": i,
                    "correct": c,
                    "num_choices": 2 if i < 4 else 5,
                }
            )
    write_csv(tmp_path / "m.csv", rows)
    cli("import", "table", tmp_path / "m.csv")
    cli("pair", "add", "b", "p")
    [rec] = cli.json("map", "--level", "benchmark", "--format", "json")
    # k=2 group: b 1100, p 0101 -> acc .5/.5, c2 = .25; k=5 group: b 11, p 10 -> acc 1/.5, c5 = 0
    assert rec["benchmark"] == "truthfulqa:mc1" and rec["category"] == "Safety/Truth"
    assert rec["num_choices"] is None and rec["k_mix"] == "2:4,5:2"
    assert rec["f_chance"] == pytest.approx(4 / 6 * 0.25)
    assert rec["f"] == pytest.approx(2 / 6)
    assert rec["f_true"] == pytest.approx(2 / 6 - 1 / 6)


def test_seeds_pair_by_seed_value_not_by_file_order(cli, tmp_path):
    base = {("arc_easy", 2): [1, 1, 1, 1], ("arc_easy", 0): [0, 0, 0, 0]}
    post = {("arc_easy", 0): [1, 1, 1, 1], ("arc_easy", 2): [0, 0, 1, 1]}
    write_csv(tmp_path / "b.csv", rows_for("b", base))
    write_csv(tmp_path / "p.csv", rows_for("p", post))
    cli("import", "table", tmp_path / "b.csv")
    cli("import", "table", tmp_path / "p.csv")
    cli("pair", "add", "b", "p")
    records = by_key(cli.json("map", "--level", "benchmark", "--format", "json"), "seed")
    assert (records[0]["n_01"], records[0]["n_10"]) == (4, 0)  # seed 0: 0000 -> 1111
    assert (records[2]["n_01"], records[2]["n_10"]) == (0, 2)  # seed 2: 1111 -> 0011


def test_pair_add_with_unknown_model_is_a_clear_error(loaded):
    before = loaded.contents()
    out = loaded("pair", "add", "base-7b", "nope", ok=False)
    assert out.exit_code == 2
    assert "unknown post model 'nope'" in out.stderr and "base-7b" in out.stderr
    assert loaded.contents() == before


def test_empty_map_tells_the_user_what_to_do(cli):
    assert "import results" in cli("map").stdout
    assert cli.json("map", "--format", "json") == []


def test_locked_database_gives_a_clear_error(cli, tmp_path):
    if cli.owner:
        pytest.skip("with an app owning the file, the commands go through it")
    write_csv(tmp_path / "base.csv", rows_for("base-7b", BASE))
    cli("import", "table", tmp_path / "base.csv")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                f"import duckdb, time; c = duckdb.connect({str(cli.db)!r}); "
                "print('held', flush=True); time.sleep(60)"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        out = cli("map", ok=False)
        assert out.exit_code == 2
        assert "in use by another process" in out.stderr
    finally:
        holder.kill()
        holder.wait()


def test_console_script_runs_from_a_fresh_process(tmp_path):
    db = tmp_path / "x.duckdb"
    write_csv(tmp_path / "b.csv", rows_for("b", BASE))
    exe = Path(sys.executable).parent / "forgetmap"
    done = subprocess.run(
        [str(exe), "--db", str(db), "import", "table", str(tmp_path / "b.csv")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "imported 28 new rows" in done.stdout


def test_unknown_benchmark_without_category_is_uncategorized_and_taxonomy_wins(cli, tmp_path):
    rows = [
        {"model": m, "benchmark": b, "sample_id": 1, "correct": c, "category": cat}
        for m, c in (("b", 1), ("p", 0))
        for b, cat in (("my_private_eval", ""), ("arc_easy", "Physics"))
    ]
    write_csv(tmp_path / "x.csv", rows)
    cli("import", "table", tmp_path / "x.csv")
    cli("pair", "add", "b", "p")
    cats = {
        r["benchmark"]: r["category"]
        for r in cli.json("map", "--level", "benchmark", "--format", "json")
    }
    assert cats == {"my_private_eval": "Uncategorized", "arc:easy": "Logic"}
    categories = [r["category"] for r in cli.json("map", "--format", "json")]
    assert categories == ["Logic", "Uncategorized", "Total"]


def test_csv_fields_with_newlines_commas_and_quotes_survive(cli, tmp_path):
    prompt = 'Question: "which", exactly?\nA. one\nB. two, or three'
    response = "Let me think.\n\nAnswer: B"
    write_csv(
        tmp_path / "m.csv",
        [
            {
                "model": "m",
                "benchmark": "piqa",
                "sample_id": 1,
                "correct": 1,
                "prompt": prompt,
                "response": response,
            }
        ],
    )
    cli("import", "table", tmp_path / "m.csv")
    [row] = cli.contents()["results"]
    assert prompt in row and response in row
