"""Ingest benchmark: our import path vs DuckDB's raw Arrow insert, per file, same run.

    .venv/bin/python bench/ingest.py                    # full size: 10M rows, 10 models
    .venv/bin/python bench/ingest.py --rows 1000000     # quick run

Steps:
1. generate one Parquet file per model (generic table format; see bench/_data.py);
2. for each file, interleaved (alternating which goes first):
   (a) ours: ``import_file(store, "table", path)`` into a fresh DuckDB file, timed from the path to
       the commit: reading the Parquet file (name columns dictionary-encoded), parsing and
       validating every column (correct, seed, num_choices, empty keys), trimming and canonical
       benchmark names, per-benchmark category/k, registering models/benchmarks, the duplicate
       (model, benchmark, sample_id, seed) check, the check for stored rows, runs, the insert, the
       count refresh (a no-op while no pair has the model), one transaction per file;
   (b) raw: the same rows, ids and run ids already resolved, plain (not dictionary-encoded) string
       columns as ``pq.read_table`` gives them, in ``results`` column order and types: only
       ``INSERT INTO results SELECT ... FROM arrow_table`` and its commit are timed, into another
       fresh DuckDB file made by the same migration (open_store); building that Arrow table is not
       timed. ``--raw-dictionary`` gives the raw side dictionary-encoded sample_id too (the same
       input encoding ours inserts), to check that the encoding does not favour either side;
   ratio = ours rows/s / raw rows/s per file; the median over files is the headline (goal >= 0.5);
3. re-import one file (must add 0 rows), median of --reimport-runs;
4. add the pairs (each base with 3 others) with forgetmap.db.pairing.add_pair, one transaction each;
5. when the ratio misses the goal (or with --breakdown): a second import of every file into a fresh
   file with a per-stage and per-SQL-statement timer, plus cProfile of the Python/Arrow part.

Nothing here is a test: it prints numbers. Sizes are flags; DuckDB files go to a temp dir or
--workdir (kept with --keep, e.g. for ``bench/map.py --db``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from forgetmap.db import ingest as ingest_mod  # noqa: E402
from forgetmap.db.pairing import add_pair  # noqa: E402
from forgetmap.db.store import open_store  # noqa: E402
from forgetmap.importers import import_file  # noqa: E402

from bench._data import (  # noqa: E402
    FULL_BENCHMARKS,
    FULL_MODELS,
    FULL_ROWS,
    FULL_SEEDS,
    Spec,
    benchmark_defs,
    file_size_mb,
    fmt_rate,
    fmt_s,
    machine_line,
    median,
    now,
    timed,
    write_dataset,
)

GOAL_RATIO = 0.5

RESULT_COLUMNS = (
    "model_id, benchmark_id, seed, sample_id, run_id, correct, num_choices, prompt, response, "
    "prediction, gold, choices, doc_hash"
)


def raw_table(
    path: Path,
    model_ids: dict[str, int],
    bench_ids: dict[str, int],
    seeds: int,
    *,
    dictionary: bool = False,
) -> pa.Table:
    """The file's rows with integer ids resolved, in the column order and types of ``results``."""
    t = pq.read_table(path, read_dictionary=["sample_id"] if dictionary else None)
    n = t.num_rows
    names = list(model_ids)
    m = pc.index_in(t["model"], pa.array(names)).to_numpy(zero_copy_only=False)
    model_id = np.asarray([model_ids[x] for x in names], np.int32)[m]
    bnames = list(bench_ids)
    b = pc.index_in(t["benchmark"], pa.array(bnames)).to_numpy(zero_copy_only=False)
    bench_id = np.asarray([bench_ids[x] for x in bnames], np.int32)[b]
    seed = t["seed"].to_numpy().astype(np.int32)
    run_id = (model_id.astype(np.int64) * len(bench_ids) + bench_id) * seeds + seed + 1
    correct = t["correct"]
    if not pa.types.is_boolean(correct.type):
        correct = (
            pc.not_equal(correct, 0)
            if pa.types.is_integer(correct.type)
            else pc.equal(correct, "true")
        )
    null = pa.nulls(n, pa.string())
    return pa.table(
        {
            "model_id": pa.array(model_id),
            "benchmark_id": pa.array(bench_id),
            "seed": pa.array(seed),
            "sample_id": t["sample_id"],
            "run_id": pa.array(run_id.astype(np.int32)),
            "correct": correct,
            "num_choices": pc.cast(t["num_choices"], pa.int16()),
            "prompt": null,
            "response": null,
            "prediction": null,
            "gold": null,
            "choices": null,
            "doc_hash": null,
        }
    )


def raw_insert(store, table: pa.Table) -> None:
    with store.transaction() as conn:
        duck = conn
        duck.register("arrow_table", table)
        try:
            duck.execute(
                f"INSERT INTO results ({RESULT_COLUMNS}) SELECT {RESULT_COLUMNS} FROM arrow_table"
            )
        finally:
            duck.unregister("arrow_table")


def count_results(store) -> int:
    with store.read() as conn:
        return conn.execute("SELECT count(*) FROM results").fetchone()[0]


# ---------------------------------------------------------------------------------------------
# breakdown: per stage and per SQL statement


class TimingDuck:
    """Wraps a DuckDB connection and adds each execute's wall time to a bucket named by its SQL."""

    def __init__(self, duck, sink: dict[str, list[float]]):
        self._duck = duck
        self._sink = sink

    def execute(self, sql, *args, **kwargs):
        key = " ".join(sql.split())[:90]
        t0 = now()
        out = self._duck.execute(sql, *args, **kwargs)
        self._sink[key].append(now() - t0)
        return out

    def __getattr__(self, name):
        return getattr(self._duck, name)


def breakdown(paths: list[Path], workdir: Path, profile_file: int, top: int) -> None:
    from forgetmap.importers import read_source
    from forgetmap.importers.common import prepare

    print(
        "\n== breakdown: second import of every file into a fresh DB, "
        "timed per stage and per SQL =="
    )
    store = open_store(workdir / "breakdown.duckdb")
    stages: dict[str, list[float]] = defaultdict(list)
    sql: dict[str, list[float]] = defaultdict(list)
    # the SQL of an import (forgetmap.db.ingest, forgetmap.db.pairing) runs on the connection it is
    # given
    profile_text = ""
    try:
        for i, path in enumerate(paths):
            t_total = now()
            prof = cProfile.Profile() if i == profile_file else None
            if prof:
                prof.enable()
            t0 = now()
            raw = read_source("table", path, model=None)
            t1 = now()
            table, benchmarks = prepare(raw, source=path.name)
            stages["read_source (parquet + _normalize)"].append(t1 - t0)
            stages["prepare (canonicalize + validate + per-benchmark meta)"].append(now() - t1)
            if prof:
                prof.disable()
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
                profile_text = out.getvalue()
            t0 = now()
            with store.transaction() as conn:
                ingest_mod.ingest(
                    TimingDuck(conn, sql), table, benchmarks, config={"source": "import:table"}
                )
            stages["ingest + commit (SQL)"].append(now() - t0)
            stages["total"].append(now() - t_total)
    finally:
        store.close()
    print(f"{'stage':58s} {'median/file':>12s} {'sum':>10s}")
    for name, values in stages.items():
        print(f"{name:58s} {fmt_s(median(values)):>12s} {fmt_s(sum(values)):>10s}")
    print(f"\nSQL statements in app/db/ingest.py (sum over {len(paths)} files, top {top}):")
    ranked = sorted(sql.items(), key=lambda kv: -sum(kv[1]))
    for key, values in ranked[:top]:
        print(
            f"  {fmt_s(sum(values)):>10s}  median {fmt_s(median(values)):>9s}  "
            f"x{len(values):<3d} {key}"
        )
    if profile_text:
        print(f"\ncProfile of read_source + prepare for file {profile_file} (tottime, top {top}):")
        lines = [ln for ln in profile_text.splitlines() if ln.strip()]
        start = next((j for j, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
        print("\n".join(lines[start : start + top + 1]))


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=FULL_ROWS, help="total rows (default 10M)")
    ap.add_argument("--models", type=int, default=FULL_MODELS)
    ap.add_argument("--benchmarks", type=int, default=FULL_BENCHMARKS)
    ap.add_argument("--seeds", type=int, default=FULL_SEEDS)
    ap.add_argument("--pairs-per-base", type=int, default=3)
    ap.add_argument(
        "--correct-type",
        choices=("bool", "int", "str"),
        default="bool",
        help="parquet type of the correct column (default bool)",
    )
    ap.add_argument("--reimport-runs", type=int, default=3)
    ap.add_argument(
        "--raw-dictionary",
        action="store_true",
        help="raw side inserts sample_id dictionary-encoded (default: plain strings)",
    )
    ap.add_argument(
        "--workdir", type=Path, help="directory for data and DuckDB files (default: temp dir)"
    )
    ap.add_argument(
        "--keep", action="store_true", help="keep the workdir (ours.duckdb has the pairs)"
    )
    ap.add_argument(
        "--breakdown",
        choices=("auto", "yes", "no"),
        default="auto",
        help="per-stage/per-SQL timing pass: auto = only when the ratio misses the goal",
    )
    ap.add_argument("--top", type=int, default=15, help="lines of breakdown/profile output")
    args = ap.parse_args(argv)

    spec = Spec(
        rows=args.rows,
        models=args.models,
        benchmarks=args.benchmarks,
        seeds=args.seeds,
        correct_type=args.correct_type,
    )
    own_tmp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="forgetmap-bench-")) if own_tmp else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("ours.duckdb", "raw.duckdb", "breakdown.duckdb"):
        for suffix in ("", ".wal"):
            (workdir / (name + suffix)).unlink(missing_ok=True)
    t_start = now()
    print("== forgetmap ingest benchmark ==")
    print(machine_line())
    print(
        f"data: {spec.models} models x {spec.benchmarks} benchmarks x {spec.seeds} seeds x "
        f"{spec.samples} samples = {spec.total_rows:,} rows; correct as {spec.correct_type}; "
        f"workdir {workdir}"
    )
    try:
        t, paths = timed(write_dataset, spec, workdir / "data")
        print(
            f"generated {len(paths)} parquet files in {fmt_s(t)} "
            f"({sum(file_size_mb(p) for p in paths):.1f} MB)"
        )

        ours = open_store(workdir / "ours.duckdb")
        raw = open_store(workdir / "raw.duckdb")
        model_ids = {name: i + 1 for i, name in enumerate(spec.model_names())}
        bench_ids = {d.name: i + 1 for i, d in enumerate(benchmark_defs(spec))}

        print(
            "\n-- (a) ours: import_file(store, 'table', path)  vs  "
            "(b) raw: INSERT INTO results SELECT ... FROM arrow_table --"
        )
        print(
            "   raw input: ids resolved, sample_id "
            + ("dictionary-encoded" if args.raw_dictionary else "plain strings")
            + "; only the insert + commit timed"
        )
        print(
            f"{'file':>4s} {'rows':>10s} {'ours':>10s} {'ours rate':>18s} "
            f"{'raw':>10s} {'raw rate':>18s} {'ratio':>7s}"
        )
        ours_t, raw_t, ratios, rows_per_file = [], [], [], []
        added_total = 0
        for i, path in enumerate(paths):
            table = raw_table(  # not timed
                path, model_ids, bench_ids, spec.seeds, dictionary=args.raw_dictionary
            )
            n = table.num_rows

            if i % 2 == 0:  # alternate which goes first, so drift hits both alike
                to, summary = timed(import_file, ours, "table", path)
                tr, _ = timed(raw_insert, raw, table)
            else:
                tr, _ = timed(raw_insert, raw, table)
                to, summary = timed(import_file, ours, "table", path)
            added_total += summary.rows_added
            ratio = (n / to) / (n / tr)
            ours_t.append(to)
            raw_t.append(tr)
            ratios.append(ratio)
            rows_per_file.append(n)
            print(
                f"{i:>4d} {n:>10,d} {fmt_s(to):>10s} {fmt_rate(n, to):>18s} {fmt_s(tr):>10s} "
                f"{fmt_rate(n, tr):>18s} {ratio:>7.3f}"
            )
            del table
        total_rows = sum(rows_per_file)
        assert added_total == total_rows, (added_total, total_rows)
        assert count_results(ours) == count_results(raw) == total_rows
        med_ours = median([r / t for r, t in zip(rows_per_file, ours_t, strict=True)])
        med_raw = median([r / t for r, t in zip(rows_per_file, raw_t, strict=True)])
        med_ratio = median(ratios)
        print(
            f"ours: median {med_ours / 1e6:.3f} M rows/s per file; all {len(paths)} files "
            f"{fmt_s(sum(ours_t))} = {fmt_rate(total_rows, sum(ours_t))}"
        )
        print(
            f"raw : median {med_raw / 1e6:.3f} M rows/s per file; all {len(paths)} files "
            f"{fmt_s(sum(raw_t))} = {fmt_rate(total_rows, sum(raw_t))}"
        )
        print(
            f"RATIO ours/raw: median of per-file ratios {med_ratio:.3f} "
            f"(aggregate {sum(raw_t) / sum(ours_t):.3f}); goal >= {GOAL_RATIO} -> "
            f"{'MET' if med_ratio >= GOAL_RATIO else 'MISSED'}"
        )

        print(
            f"\n-- re-import of {paths[0].name} ({rows_per_file[0]:,} rows, must add 0), "
            f"{args.reimport_runs} runs --"
        )
        re_t = []
        for _ in range(args.reimport_runs):
            t, summary = timed(import_file, ours, "table", paths[0])
            assert summary.rows_added == 0, summary.rows_added
            re_t.append(t)
        print(
            f"re-import: median {fmt_s(median(re_t))} (runs: {', '.join(fmt_s(x) for x in re_t)}); "
            f"rows added 0; vs first import of the same file {fmt_s(ours_t[0])} "
            f"({median(re_t) / ours_t[0]:.2f}x); vs raw insert of it {fmt_s(raw_t[0])} "
            f"({median(re_t) / raw_t[0]:.2f}x)"
        )

        pairs = spec.pairs(args.pairs_per_base)
        print(f"\n-- add {len(pairs)} pairs (add_pair in store.transaction(), one each) --")
        pair_t = []

        def one_pair(base: str, post: str):
            with ours.transaction() as conn:
                return add_pair(conn, base, post, label=None, stage=None)

        for base, post in pairs:
            t, (_, created, unpaired) = timed(one_pair, base, post)
            assert created and not any(unpaired.values()), unpaired
            pair_t.append(t)
        per_pair_rows = 2 * total_rows / spec.models
        with ours.read() as conn:
            duck = conn
            n_trans = duck.execute("SELECT count(*) FROM transitions").fetchone()[0]
            n_paired = duck.execute("SELECT sum(paired) FROM coverage").fetchone()[0]
        print(
            f"pair-add: total {fmt_s(sum(pair_t))}, median {fmt_s(median(pair_t))} per pair "
            f"(min {fmt_s(min(pair_t))}, max {fmt_s(max(pair_t))}); "
            f"each reads {per_pair_rows:,.0f} "
            f"per-sample rows -> {fmt_rate(per_pair_rows, median(pair_t))}; "
            f"{n_trans:,} transition rows, {n_paired:,} paired samples"
        )
        ours.close()
        raw.close()
        print(
            f"\nDB sizes: ours {file_size_mb(workdir / 'ours.duckdb'):.0f} MB, "
            f"raw {file_size_mb(workdir / 'raw.duckdb'):.0f} MB"
        )

        if args.breakdown == "yes" or (args.breakdown == "auto" and med_ratio < GOAL_RATIO):
            breakdown(paths, workdir, profile_file=len(paths) // 2, top=args.top)

        print("\n== summary ==")
        print(
            f"rows {total_rows:,}; ours median {med_ours / 1e6:.3f} M rows/s, raw median "
            f"{med_raw / 1e6:.3f} M rows/s, ratio {med_ratio:.3f} (goal >= {GOAL_RATIO}); "
            f"re-import {fmt_s(median(re_t))} (0 rows added); "
            f"{len(pairs)} pairs {fmt_s(sum(pair_t))} (median {fmt_s(median(pair_t))}/pair)"
        )
        print(f"wall time {fmt_s(now() - t_start)}")
        if args.keep:
            (workdir / "breakdown.duckdb").unlink(missing_ok=True)
            (workdir / "raw.duckdb").unlink(missing_ok=True)
            print(
                f"kept {workdir / 'ours.duckdb'} (use: bench/map.py --db {workdir / 'ours.duckdb'} "
                f"--rows {args.rows})"
            )
    finally:
        if not args.keep:
            shutil.rmtree(workdir / "data", ignore_errors=True)
            for name in ("ours.duckdb", "raw.duckdb", "breakdown.duckdb"):
                for suffix in ("", ".wal"):
                    (workdir / (name + suffix)).unlink(missing_ok=True)
            if own_tmp:
                shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
