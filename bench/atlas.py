"""Atlas benchmark: the map and the atlas's pages at the atlas's scale, from a fresh process.

    .venv/bin/python bench/atlas.py                      # 500 pairs x 20,000 questions x 1 seed
    .venv/bin/python bench/atlas.py --pairs 50 --questions 2000    # quick run
    .venv/bin/python bench/atlas.py --db /tmp/atlas.duckdb --keep  # build once, measure again

The database holds ``--pairs`` pairs over ``--questions`` questions (``--benchmarks`` benchmarks,
every fifth generative, the rest with 4 options) and one seed: each pair its own base, except the
last ``--series`` pairs, which are the checkpoints of one training run over one base (a series, one
recipe). About 2 x pairs x questions rows (20M at the defaults). The rows are written by SQL
straight into ``results`` (with their runs, models and benchmarks), then the pairs are added and
counted by forgetmap's own ``refresh_counts`` (what ``pair add`` runs) in one transaction, and the
series by ``forgetmap.db.series.add_checkpoints``; the import's own throughput is measured by
bench/import_scale.py and bench/harness_import.py, not here. Correctness: a base knows a question
with a probability that depends on the question and the model; a post model keeps the base's answer
and flips 10% of them, more on a few "fragile" questions.

Then `forgetmap serve` starts on the file, a fresh process, and each page is asked for once (the
first request: what a visitor gets from a process that just started) and then ``--runs`` times
(cached until the next write): ``/api/map``, the map page, ``/atlas``, its 20th page, ``/api/atlas``
filtered by stage and by category, a question's page ``/atlas/question`` and ``/api/atlas.parquet``
(the whole ranking). Baseline: ``GET /healthz`` the same way. Then the map page alone as the first
request of another fresh process (a visitor who opens the dashboard first). Goals: map (``/api/map``
and the map page) under 100 ms and the atlas's pages under 300 ms, first request from a fresh
process. Twice: with ``FORGETMAP_WARM_START=false``
(every first request computes cold) and as the app starts by default (it computes the map and the
atlas before it serves: its start is reported beside).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from forgetmap.db.pairing import refresh_counts  # noqa: E402
from forgetmap.db.series import add_checkpoints  # noqa: E402
from forgetmap.db.store import open_store  # noqa: E402

from bench._data import machine_line, median  # noqa: E402
from bench._http import Conn, Server  # noqa: E402


def build(db: Path, pairs: int, questions: int, benchmarks: int, series: int) -> dict:
    """The database described in the module's docstring; returns what it holds and how long it
    took."""
    t0 = time.perf_counter()
    store = open_store(db)
    per_bench = questions // benchmarks
    singles = pairs - series
    with store.transaction() as conn:
        conn.execute(
            """
            INSERT INTO benchmarks (name, category, num_choices)
            SELECT 'bench' || lpad(i::VARCHAR, 3, '0'),
                   ['Knowledge/QA', 'Math', 'Logic', 'Commonsense', 'Science/Tech'][i % 5 + 1],
                   CASE WHEN i % 5 = 4 THEN NULL ELSE 4 END
            FROM range(?) t(i)
            """,
            [benchmarks],
        )
        # models: base-<i> and post-<i> for the single pairs; run-base and run-ckpt-<j>
        conn.execute(
            """
            INSERT INTO models (name, family, size_params)
            SELECT name, family, size FROM (
                SELECT 'fam' || (i % 7) || '/base-' || i AS name, 'fam' || (i % 7) AS family,
                       ((i % 9) + 1) * 1000000000 AS size, i AS o FROM range(?) t(i)
                UNION ALL
                SELECT 'fam' || (i % 7) || '/base-' || i || '-instruct', 'fam' || (i % 7),
                       ((i % 9) + 1) * 1000000000, 100000 + i FROM range(?) t(i)
                UNION ALL SELECT 'run/base-7b', 'run', 7000000000, 200000
                UNION ALL
                SELECT 'run/ckpt-' || lpad(j::VARCHAR, 4, '0'), 'run', 7000000000, 300000 + j
                FROM range(?) t(j)
            ) ORDER BY o
            """,
            [singles, singles, series],
        )
        conn.execute(
            """
            INSERT INTO runs (model_id, benchmark_id, seed, config_hash, config)
            SELECT m.id, b.id, 0, 'bench', '{}' FROM models m CROSS JOIN benchmarks b
            """
        )
        # one model at a time keeps the insert's memory small
        models = conn.execute("SELECT id, name FROM models ORDER BY id").fetchall()
        base_of = {}
        for model_id, name in models:
            if name.endswith("-instruct"):
                base_of[model_id] = next(i for i, n in models if n == name[: -len("-instruct")])
            elif "/ckpt-" in name:
                base_of[model_id] = next(i for i, n in models if n == "run/base-7b")
        for model_id, _ in models:
            base = base_of.get(model_id)
            # a base knows question q when hash(model, q) falls under the question's difficulty; a
            # post model copies its base's row and flips 10% (40% on every 50th question)
            conn.execute(
                f"""
                INSERT INTO results (model_id, benchmark_id, seed, sample_id, run_id, correct,
                                     num_choices, question, prediction)
                SELECT $model, b.id, 0, 'q' || lpad(q::VARCHAR, 4, '0'), r.id,
                       {
                    (
                        "base_row.correct <> (hash($model, b.id, q) % 100 < "
                        "CASE WHEN q % 50 = 0 THEN 40 ELSE 10 END)"
                    )
                    if base is not None
                    else "hash($model, b.id, q) % 100 < 30 + (q * 7) % 60"
                },
                       b.num_choices, 'Question ' || q || ' of ' || b.name, 'A'
                FROM benchmarks b CROSS JOIN range($per_bench) t(q)
                JOIN runs r ON r.model_id = $model AND r.benchmark_id = b.id
                {
                    (
                        "JOIN results base_row ON base_row.model_id = $base "
                        "AND base_row.benchmark_id = b.id "
                        "AND base_row.sample_id = 'q' || lpad(q::VARCHAR, 4, '0')"
                    )
                    if base is not None
                    else ""
                }
                """,
                {"model": model_id, "per_bench": per_bench, **({"base": base} if base else {})},
            )
        conn.execute(
            "INSERT INTO pairs (base_model_id, post_model_id, stage) "
            "SELECT base, post, CASE WHEN post % 3 = 0 THEN 'sft' ELSE 'instruct' END "
            "FROM (SELECT unnest($base) AS base, unnest($post) AS post)",
            {"base": list(base_of.values()), "post": list(base_of)},
        )
        conn.execute(
            "CREATE TEMP TABLE touched AS SELECT DISTINCT model_id, benchmark_id, seed FROM runs"
        )
        refresh_counts(conn, "touched")
        conn.execute("DROP TABLE touched")
    built = time.perf_counter() - t0
    if series:
        with store.transaction() as conn:
            checkpoints = [
                (n, (j + 1) * 100) for j, (_, n) in enumerate(m for m in models if "/ckpt-" in m[1])
            ]
            add_checkpoints(conn, "run", "run/base-7b", checkpoints)
    with store.read() as conn:
        rows = conn.execute("SELECT count(*) FROM results").fetchall()[0][0]
        flips = conn.execute("SELECT count(*) FROM question_flips").fetchall()[0][0]
        n_pairs = conn.execute("SELECT count(*) FROM pairs").fetchall()[0][0]
    store.close()
    return {"rows": rows, "flips": flips, "pairs": n_pairs, "build_s": built}


PAGES = [
    ("healthz (baseline)", "/healthz"),
    ("/api/map", "/api/map"),
    ("map page", "/"),
    ("/atlas", "/atlas"),
    ("/atlas page 20", "/atlas?page=20"),
    ("/api/atlas stage=sft", "/api/atlas?stage=sft"),
    ("/api/atlas category", "/api/atlas?category=Math"),
    ("/atlas/question", "/atlas/question?benchmark=bench000&sample_id=q0000"),
    ("/api/atlas.parquet", "/api/atlas.parquet"),
]


def measure(db: Path, runs: int, warm: bool) -> tuple[float, list[tuple[str, float, float]]]:
    """The server's start (s) and, per page, its first request and the median of ``runs`` more;
    ``warm``: as the app starts by default (computing the map and the atlas before it serves)."""
    settings = {"FORGETMAP_WARM_START": "true" if warm else "false"}
    server = Server(db, db.with_suffix(".serve.log"), settings=settings)
    try:
        conn = Conn(server.port)
        out = []
        for name, path in PAGES:
            status, _, first = conn.get((path, {}))
            if status != 200:
                raise RuntimeError(f"{path}: {status}")
            again = [conn.get((path, {}))[2] for _ in range(runs)]
            out.append((name, first, median(again)))
        conn.close()
        return server.start_s, out
    finally:
        server.stop()


def page_first(db: Path, path: str, warm: bool) -> float:
    """The first request of a fresh server being ``path`` (the pages above come after /api/map
    computed the map: a visitor opening the map page first waits for both)."""
    settings = {"FORGETMAP_WARM_START": "true" if warm else "false"}
    server = Server(db, db.with_suffix(".serve.log"), settings=settings)
    try:
        conn = Conn(server.port)
        status, _, first = conn.get((path, {}))
        conn.close()
        if status != 200:
            raise RuntimeError(f"{path}: {status}")
        return first
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pairs", type=int, default=500)
    ap.add_argument("--questions", type=int, default=20_000)
    ap.add_argument("--benchmarks", type=int, default=100)
    ap.add_argument("--series", type=int, default=10, help="pairs that are one run's checkpoints")
    ap.add_argument("--runs", type=int, default=5, help="repeats of each page after the first")
    ap.add_argument("--db", type=Path, help="the database (built when it does not exist)")
    ap.add_argument("--keep", action="store_true", help="keep the database")
    args = ap.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="forgetmap-atlas-"))
    db = args.db or workdir / "atlas.duckdb"
    try:
        print(machine_line())
        if not db.exists():
            info = build(db, args.pairs, args.questions, args.benchmarks, args.series)
            print(
                f"built {info['pairs']} pairs, {info['rows']:,} result rows, "
                f"{info['flips']:,} flipped (question, pair) rows in {info['build_s']:.1f} s"
            )
        cold_start, cold = measure(db, args.runs, warm=False)
        warm_start, warm = measure(db, args.runs, warm=True)
        page = {warm: page_first(db, "/", warm) for warm in (False, True)}
        print(
            f"\nserver start: {cold_start:.2f} s cold (FORGETMAP_WARM_START=false), "
            f"{warm_start:.2f} s computing the map and the atlas first (the default)"
        )
        print(f"\n{'page':<24}{'cold first':>12}{'warm first':>12}{'again (ms)':>12}")
        for (name, first, _), (_, warm_first, again) in zip(cold, warm, strict=True):
            print(f"{name:<24}{first * 1000:>12.1f}{warm_first * 1000:>12.1f}{again * 1000:>12.1f}")
        print(f"{'map page, asked first':<24}{page[False] * 1000:>12.1f}{page[True] * 1000:>12.1f}")
        for label, results, page_s in (("cold", cold, page[False]), ("warm", warm, page[True])):
            first = {name: t for name, t, _ in results}
            pages = [n for n in first if "atlas" in n and "parquet" not in n]
            worst = max(first[n] for n in pages)
            slowest_map = max(first["/api/map"], page_s)
            print(
                f"atlas, {label} start: map first request {first['/api/map'] * 1000:.0f} ms, "
                f"map page asked first {page_s * 1000:.0f} ms (goal < 100 ms: "
                f"{'met' if slowest_map < 0.1 else 'missed'}); atlas "
                f"pages' slowest first request {worst * 1000:.0f} ms (goal < 300 ms: "
                f"{'met' if worst < 0.3 else 'missed'})"
            )
        return 0
    finally:
        if not args.keep and args.db is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
