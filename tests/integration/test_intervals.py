"""The map's paired interval, n and partial marking end to end: `forgetmap import table` +
`pair add` on a real DuckDB file, the interval from the counts stored at pairing time
(cross_seed_cells) against a hand computation and against forgetmap.analysis.adaptive on the
per-sample arrays, and the exports."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import duckdb
import numpy as np
import pytest
from fastapi.testclient import TestClient
from forgetmap.analysis.adaptive import prefix_intervals
from forgetmap.services.map import INTERVAL_FIELDS
from forgetmap.web import create_app

CATEGORY = "Knowledge"


def write_rows(path: Path, model: str, data: dict, k: dict) -> Path:
    """data[(benchmark, seed)] = 0/1 list (sample i has id s<i>); k[benchmark] = per-sample k."""
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(
            ["model", "benchmark", "sample_id", "correct", "num_choices", "category", "seed"]
        )
        for (bench, seed), values in data.items():
            for i, correct in enumerate(values):
                kk = int(k[bench][i])
                writer.writerow([model, bench, f"s{i}", int(correct), kk or "", CATEGORY, seed])
    return path


def import_pair(cli, tmp_path: Path, base: dict, post: dict, k: dict) -> None:
    cli("import", "table", write_rows(tmp_path / "base.csv", "base", base, k))
    cli("import", "table", write_rows(tmp_path / "post.csv", "post", post, k))
    cli("pair", "add", "base", "post")


def records(cli, level: str = "benchmark") -> list[dict]:
    return cli.json("map", "--level", level, "--format", "json")


def test_golden_interval_one_seed_k2(cli, tmp_path):
    """By hand: one seed, k = 2, the pattern pre = 1 1 1 1 0 0, post = 0 0 1 1 0 1 repeated 100
    times (t = 600). acc_pre = 2/3, acc_post = 1/2, c = (1/3)(1/2)/1 = 1/6, F = 1/3, BT = 1/6:
    F_true = 1/6, BT_true = 0. Contributions (module doc of forgetmap.analysis.adaptive) with
    1 - a = 1/3, 1 - b = 1/2: F: 10 -> 1 - (1/3 - 1/6) = 5/6, 11 -> 1/6,
    00 -> -(1/2 + 1/3 - 1/6) = -2/3, 01 -> -(1/2 - 1/6) = -1/3; mean 1/6,
    E[psi^2] = (2 25 + 2 + 16 + 4) / 216 = 1/3, variance 1/3 - 1/36 = 11/36. BT: 10 -> -1/6,
    11 -> 1/6, 00 -> -2/3, 01 -> 2/3; mean 0, variance 1/6.
    Half-width: the CLT's 1.9599640 sqrt(v / t) on the regularized v = (t var + 2/4) / (t + 2)."""
    pattern_pre, pattern_post = [1, 1, 1, 1, 0, 0], [0, 0, 1, 1, 0, 1]
    base = {("golden", 0): pattern_pre * 100}
    post = {("golden", 0): pattern_post * 100}
    import_pair(cli, tmp_path, base, post, {"golden": [2] * 600})

    def half(variance: float, t: int = 600) -> float:
        regularized = (t * variance + 2 * 0.25) / (t + 2)
        return 1.9599639845 * math.sqrt(regularized / t)

    h_f, h_bt = half(11 / 36), half(1 / 6)
    assert 0.03 < h_f < 1 / 6  # the F bounds are not clipped: the check below is the formula's
    [r] = records(cli)
    assert (r["n"], r["f_true"], r["bt_true"]) == (600, pytest.approx(1 / 6), 0.0)
    assert r["f_true_low"] == pytest.approx(1 / 6 - h_f, rel=1e-9)
    assert r["f_true_high"] == pytest.approx(1 / 6 + h_f, rel=1e-9)
    assert (r["bt_true_low"], r["bt_true_high"]) == (0.0, pytest.approx(h_bt, rel=1e-9))
    assert (r["full_size"], r["partial"]) == (None, False)
    # a category of one benchmark: the same half-width around the same value
    [cat, total] = records(cli, "category")
    assert cat["n"] == total["n"] == 600
    assert cat["f_true_low"] == pytest.approx(1 / 6 - h_f, rel=1e-9)
    assert total["f_true_high"] == pytest.approx(1 / 6 + h_f, rel=1e-9)


def random_data(seed: int, n: int, seeds: int):
    rng = np.random.default_rng(seed)
    k = {"alpha": rng.choice([0, 2, 4], size=n), "beta": np.full(n, 5)}
    pre = {b: (rng.random((seeds, n)) < 0.7).astype(int) for b in k}
    post = {b: np.where(rng.random((seeds, n)) < 0.25, 1 - pre[b], pre[b]) for b in k}
    return k, pre, post


def as_data(arrays: dict, seeds) -> dict:
    return {(b, s): arrays[b][s].tolist() for b in arrays for s in seeds}


def test_stored_counts_give_the_arrays_interval(cli, tmp_path):
    """3 seeds, mixed k: the map's interval (from the transitions and cross_seed_cells rows that
    `pair add` stored) equals forgetmap.analysis.adaptive's on the per-sample arrays; also after a
    later import that touches one seed only (its cross rows with the untouched seeds are
    recomputed)."""
    n = 150
    k, pre, post = random_data(7, n, 3)
    cli("import", "table", write_rows(tmp_path / "b.csv", "base", as_data(pre, range(3)), k))
    cli("import", "table", write_rows(tmp_path / "p.csv", "post", as_data(post, range(2)), k))
    cli("pair", "add", "base", "post")

    def check(seeds: int) -> None:
        by_bench = {}
        for r in records(cli):
            by_bench.setdefault(r["benchmark"], []).append(r)
        assert sorted(by_bench) == ["alpha", "beta"]
        for bench, rows in by_bench.items():
            assert len(rows) == seeds and all(r["n"] == n for r in rows)
            cs = prefix_intervals(pre[bench][:seeds], post[bench][:seeds], k[bench], [n])
            for r in rows:
                for field in INTERVAL_FIELDS:
                    assert r[field] == pytest.approx(cs[field][0], rel=1e-9, abs=1e-12), field
            assert np.mean([r["f_true"] for r in rows]) == pytest.approx(cs["f_true"][0])

    check(2)
    stored = duckdb.connect(str(cli.db), read_only=True)
    pairs_of_seeds = stored.execute(
        "SELECT DISTINCT seed_a, seed_b FROM cross_seed_cells ORDER BY ALL"
    ).fetchall()
    stored.close()
    assert pairs_of_seeds == [(0, 1)]
    # seed 2 of the post model arrives later (as a worker's upload would): only it is touched
    cli("import", "table", write_rows(tmp_path / "p2.csv", "post", as_data(post, [2]), k))
    check(3)
    stored = duckdb.connect(str(cli.db), read_only=True)
    assert stored.execute(
        "SELECT DISTINCT seed_a, seed_b FROM cross_seed_cells ORDER BY ALL"
    ).fetchall() == [(0, 1), (0, 2), (1, 2)]
    stored.close()


def _partial_pair(cli, tmp_path):
    """A pair on 120 samples whose alpha a job's loader saw with 200 (adaptive evaluation stopped
    at 120); beta's size unknown. Returns (n, k, pre, post)."""
    n = 120
    k, pre, post = random_data(11, n, 2)
    import_pair(cli, tmp_path, as_data(pre, range(2)), as_data(post, range(2)), k)
    db = duckdb.connect(str(cli.db))
    db.execute("UPDATE benchmarks SET full_size = 200 WHERE name = 'alpha'")
    db.close()
    return n, k, pre, post


def test_partial_marking_category_interval_and_exports(cli, tmp_path):
    n, k, pre, post = _partial_pair(cli, tmp_path)

    rows = records(cli)
    for r in rows:
        expected = (200, True) if r["benchmark"] == "alpha" else (None, False)
        assert (r["full_size"], r["partial"]) == expected, r
    [cat, total] = records(cli, "category")
    assert (cat["n"], cat["full_size"], cat["partial"]) == (2 * n, 200 + n, True)
    # the category's half-width: sqrt(h_alpha^2 + h_beta^2) / 2 around its value (macro mean)
    halves = [
        prefix_intervals(pre[b], post[b], k[b], [n])["f_true_half_width"][0]
        for b in ("alpha", "beta")
    ]
    h = math.sqrt(halves[0] ** 2 + halves[1] ** 2) / 2
    assert cat["f_true"] - h > 0  # not clipped: the check is the formula's
    assert cat["f_true_low"] == pytest.approx(cat["f_true"] - h, rel=1e-9)
    assert cat["f_true_high"] == pytest.approx(cat["f_true"] + h, rel=1e-9)
    assert total["f_true_low"] == pytest.approx(cat["f_true_low"], rel=1e-9)
    # micro: weights n_b / n (equal n here: the same half-width)
    [micro, _] = cli.json("map", "--aggregate", "micro", "--format", "json")
    assert micro["f_true_high"] - micro["f_true"] == pytest.approx(h, rel=1e-9)

    # exports: the CLI's CSV at both levels, the API's JSON, the pair table's CSV
    for level in ("benchmark", "category"):
        out = cli("map", "--level", level, "--format", "csv").stdout
        header = next(csv.reader(io.StringIO(out)))
        assert {"n", *INTERVAL_FIELDS, "full_size", "partial"} <= set(header)
    with TestClient(create_app(cli.db)) as client:
        api = client.get("/api/map", params={"level": "benchmark"}).json()
        assert [r["partial"] for r in api] == [r["partial"] for r in rows]
        table = client.get("/api/pairs/1/benchmarks.csv").text
        exported = {r["benchmark"]: r for r in csv.DictReader(io.StringIO(table))}
        alpha = next(r for r in rows if r["benchmark"] == "alpha")
        assert exported["alpha"]["partial"] == "true" and exported["alpha"]["full_size"] == "200"
        assert float(exported["alpha"]["f_true_low"]) == pytest.approx(alpha["f_true_low"])
        assert exported["beta"]["partial"] == "false" and exported["beta"]["full_size"] == ""
        pair = client.get("/api/pairs/1").json()
        assert {b["benchmark"]: b["partial"] for b in pair["benchmarks"]} == {
            "alpha": True,
            "beta": False,
        }
        page = client.get("/pairs/1").text
        assert "partial: 120 of 200" in page
        assert f"[{100 * alpha['f_true_low']:.1f}, {100 * alpha['f_true_high']:.1f}]" in page
        cells = client.get("/api/map/cells", params={"level": "benchmark"}).json()
        assert {c["column"]: (c["n"], c["partial"]) for c in cells} == {
            "alpha": (n, True),
            "beta": (n, False),
        }
    assert json.dumps(rows)  # records stay plain JSON


def _table_rows(out: str) -> list[list[str]]:
    """The header and data rows of the table printed by `forgetmap map` (cells split on the
    column bars; the title and the empty lines between pairs hold none)."""
    return [[cell.strip() for cell in line.split("│")] for line in out.splitlines() if "│" in line]


def test_map_table_shows_n_interval_and_partial(cli, tmp_path, monkeypatch):
    """`forgetmap map --format table`: n ("n of N (partial)" for a partial benchmark) and the 95%
    interval of F_true and BT_true, the JSON's numbers, beside the columns it always had; in a
    terminal too narrow for it, in panels that each begin with the pair and category."""
    n, *_ = _partial_pair(cli, tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    narrow = cli("map").stdout.splitlines()
    assert max(len(line) for line in narrow if "│" in line) <= 80  # the table's lines
    panels = [i for i, line in enumerate(narrow) if line.startswith("pair ")]
    assert len(panels) >= 2 and all(
        [c.strip() for c in narrow[i].split("│")][:2] == ["pair", "category"] for i in panels
    )
    monkeypatch.setenv("COLUMNS", "1000")  # one panel for the rest

    def interval(r: dict, name: str) -> str:
        return f"[{r[name + '_low']:.4f}, {r[name + '_high']:.4f}]"

    out = cli("map").stdout
    header, *rows = _table_rows(out)
    assert header == [
        "pair",
        "category",
        "bench",
        "seeds",
        "n",
        "F_true",
        "F_true 95%",
        "BT_true",
        "BT_true 95%",
        "F",
        "BT",
        "F_max",
        "noise",
        "1->0 no answer",
        "1->0 cut",
    ]
    expected = [
        [
            "base -> post",
            r["category"],
            str(r["n_benchmarks"]),
            str(r["seeds"]),
            f"{2 * n} of {200 + n} (partial)",
            f"{r['f_true']:.4f} ± {r['f_true_std']:.4f}",
            interval(r, "f_true"),
            f"{r['bt_true']:.4f} ± {r['bt_true_std']:.4f}",
            interval(r, "bt_true"),
            f"{r['f']:.4f}",
            f"{r['bt']:.4f}",
            f"{r['f_max']:.4f}",
            f"{r['noise_floor']:.4f}",
            str(r["n_10_no_answer"]),
            str(r["n_10_truncated"]),
        ]
        for r in records(cli, "category")
    ]
    assert rows == expected
    assert "95%" in out and "paired interval" in out

    out = cli("map", "--level", "benchmark").stdout
    header, *rows = _table_rows(out)
    assert header == [
        "pair",
        "benchmark",
        "seed",
        "n",
        "k",
        "acc_pre",
        "acc_post",
        "F",
        "BT",
        "F_true",
        "F_true 95%",
        "BT_true",
        "BT_true 95%",
        "p",
        "1->0 no answer",
        "1->0 cut",
    ]
    by_row = {(r["benchmark"], str(r["seed"])): r for r in records(cli)}
    assert len(rows) == len(by_row) == 4
    for row in rows:
        r = by_row[(row[1], row[2])]
        assert row[3] == (f"{n} of 200 (partial)" if r["benchmark"] == "alpha" else str(n))
        assert row[9] == f"{r['f_true']:.4f}" and row[11] == f"{r['bt_true']:.4f}"
        assert (row[10], row[12]) == (interval(r, "f_true"), interval(r, "bt_true"))
        assert row[14] == f"{r['n_10_no_answer']} of {r['n_10']}"
        assert row[15] == f"{r['n_10_truncated']} of {r['n_10']}"
    # JSON and CSV keep what they had
    csv_header = cli("map", "--format", "csv").stdout.splitlines()[0].split(",")
    assert csv_header[:13] == [
        "base",
        "post",
        "category",
        "n_benchmarks",
        "seeds",
        "f_true",
        "f_true_std",
        "bt_true",
        "bt_true_std",
        "f",
        "bt",
        "f_max",
        "bt_max",
    ]


def test_map_table_shows_names_as_typed(cli, tmp_path, monkeypatch):
    """rich reads "[bold]", "[link=...]" as markup: names in the table stay the literal text."""
    monkeypatch.setenv("COLUMNS", "1000")  # one panel
    base, post, bench = "[bold]base[/bold]", "post[link=https://evil.example]x", "[red]bench"
    data = {(bench, 0): [1, 0, 1, 1, 0, 1] * 5}
    flipped = {(bench, 0): [0, 0, 1, 1, 1, 1] * 5}
    k = {bench: [4] * 30}
    cli("import", "table", write_rows(tmp_path / "b.csv", base, data, k))
    cli("import", "table", write_rows(tmp_path / "p.csv", post, flipped, k))
    cli("pair", "add", base, post)
    [row] = _table_rows(cli("map", "--level", "benchmark").stdout)[1:]
    assert row[:2] == [f"{base} -> {post}", bench]
    [cat, _total] = _table_rows(cli("map").stdout)[1:]
    assert cat[0] == f"{base} -> {post}"


def test_a_post_model_holding_part_of_the_questions_is_partial_without_a_known_size(cli, tmp_path):
    """Imported results carry no full size: the base answered alpha's 120 questions, the post
    model only the first 60 of them, in two seeds. The map marks the pair partial, 60 of the 120
    questions either model holds, at both levels and on the pair page; beta, whole on both
    sides, stays unmarked."""
    n = 120
    k, pre, post = random_data(11, n, 2)
    post_data = as_data(post, range(2))
    post_data = {key: (v[:60] if key[0] == "alpha" else v) for key, v in post_data.items()}
    import_pair(cli, tmp_path, as_data(pre, range(2)), post_data, k)
    for r in records(cli):
        expected = (60, 120, True) if r["benchmark"] == "alpha" else (n, None, False)
        assert (r["n"], r["full_size"], r["partial"]) == expected, r
    [cat, total] = records(cli, "category")
    assert (cat["n"], cat["full_size"], cat["partial"]) == (60 + n, 120 + n, True)
    assert (total["full_size"], total["partial"]) == (120 + n, True)
    with TestClient(create_app(cli.db)) as client:
        assert "partial: 60 of 120" in client.get("/pairs/1").text
