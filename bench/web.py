"""Web benchmark: the real app (`forgetmap serve`, uvicorn) over HTTP with 10M per-sample rows.

    .venv/bin/python bench/web.py                              # full: builds a 10M-row DB, ~8 min
    .venv/bin/python bench/web.py --db /tmp/fmbench/map.duckdb  # reuse a kept DB (copied first)
    .venv/bin/python bench/web.py --rows 300000 --duration 3 --think 0  # quick

With the rows loaded (import_file per model file, pairs added: or a copy of a DB kept by
`bench/map.py --keep` / `bench/ingest.py --keep`), `forgetmap --db DB serve` is started as a
subprocess and these endpoints are requested over loopback HTTP (keep-alive connections):

- baseline: ``GET /healthz`` (one ``SELECT 1``: the floor of the HTTP stack and of the client);
- ``GET /api/map`` (category/macro), ``GET /api/map?level=benchmark``, the map page ``GET /`` (and
  ``/?level=benchmark``): goal < 50 ms;
- the drill-down page ``GET /pairs/{id}/samples?benchmark=B&transition=10`` (first page of 1->0
  flips), its HTMX fragment (same URL with ``HX-Request: true``) and the JSON
  ``GET /api/pairs/{id}/samples``: goal < 100 ms. The target cycles over --targets (pair, benchmark)
  combinations spread over the pairs;
- extras without a goal: the pair page ``/pairs/{id}`` and the drill-down with a text search (q=).

Measured: (a) the first request of each endpoint in the server's life (the app caches the map per
data version: /api/map, / and /api/map/cells share the cache entry of one level/aggregate, so the
first of them pays for it), then the map right after a write (POST /api/pairs re-adding a pair bumps
the data version); sequential latency, median of --requests; (b) --clients concurrent clients
(threads, one keep-alive connection each, in this process) for --duration seconds per endpoint:
median, p95, requests/s, and the server process's CPU time per request; (c) --clients users who
wait an exponential think time (mean --think s) between requests, --think-duration s per endpoint.
Latencies are client-side wall times over loopback (request sent -> body read); ratios are against
/healthz measured the same way in the same run. The synthetic data has no text columns: --text-chars
fills prompt/response/prediction/gold of the drilled benchmarks (all models) so the pages render
text as real ones do.

When a goal is missed under load (or with --profile yes) the app is also driven in-process (ASGI,
no socket, sync endpoints run inline so cProfile sees them) for the slowest endpoints: in-process
medians and the cProfile top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench._data import (  # noqa: E402
    FULL_BENCHMARKS,
    FULL_MODELS,
    FULL_ROWS,
    FULL_SEEDS,
    Spec,
    fmt_s,
    machine_line,
    median,
    now,
    timed,
    write_dataset,
)
from bench._http import (  # noqa: E402
    FORGETMAP,
    HOST,
    Conn,
    Endpoint,
    Request,
    Server,
    sequential,
    under_load,
)

ROOT = Path(__file__).resolve().parents[1]
MAP_GOAL_MS = 50.0
DRILL_GOAL_MS = 100.0

# --------------------------------------------------------------------------------- the data


def prepare_db(args, workdir: Path) -> Path:
    db = workdir / "web.duckdb"
    for suffix in ("", ".wal"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    if args.db is not None:
        t0 = now()
        shutil.copyfile(args.db, db)
        wal = Path(str(args.db) + ".wal")
        if wal.exists():
            shutil.copyfile(wal, Path(str(db) + ".wal"))
        print(f"copied {args.db} -> {db} in {fmt_s(now() - t0)}")
        return db
    from forgetmap.db.store import open_store

    from bench._data import load_dataset

    spec = Spec(rows=args.rows, models=args.models, benchmarks=args.benchmarks, seeds=args.seeds)
    print(
        f"data: {spec.models} models x {spec.benchmarks} benchmarks x {spec.seeds} seeds x "
        f"{spec.samples} samples = {spec.total_rows:,} rows; {len(spec.pairs())} pairs"
    )
    t, paths = timed(write_dataset, spec, workdir / "data")
    store = open_store(db)
    t_load, _ = timed(load_dataset, spec, store, paths)
    store.close()
    shutil.rmtree(workdir / "data", ignore_errors=True)
    print(
        f"generated in {fmt_s(t)}; loaded (import_file x {len(paths)} + pairs) in {fmt_s(t_load)}"
    )
    return db


def pick_targets(duck, n: int, seed: int) -> list[tuple[int, str, int]]:
    """(pair id, benchmark, 1->0 flips) spread over the pairs; each pair gets another benchmark,
    including a mixed-k and a generative one when the data has them."""
    rng = np.random.default_rng(seed)
    pair_ids = [r[0] for r in duck.execute("SELECT id FROM pairs ORDER BY id").fetchall()]
    rows = duck.execute(
        """
        SELECT t.pair_id, b.name, sum(t.n_10)::BIGINT AS flips, count(DISTINCT t.num_choices) AS ks,
               bool_or(t.num_choices = 0) AS generative
        FROM transitions t JOIN benchmarks b ON b.id = t.benchmark_id
        GROUP BY t.pair_id, b.name HAVING sum(t.n_10) > 0 ORDER BY t.pair_id, b.name
        """
    ).fetchall()
    by_pair: dict[int, list[tuple]] = {}
    for r in rows:
        by_pair.setdefault(r[0], []).append(r)
    chosen_pairs = [
        pair_ids[int(i)] for i in np.linspace(0, len(pair_ids) - 1, min(n, len(pair_ids)))
    ]
    out: list[tuple[int, str, int]] = []
    used: set[str] = set()
    for j, pid in enumerate(chosen_pairs):
        options = [r for r in by_pair.get(pid, []) if r[1] not in used]
        if not options:
            continue
        special = [r for r in options if (j == 1 and r[3] > 1) or (j == 2 and r[4])]
        r = special[0] if special else options[int(rng.integers(len(options)))]
        used.add(r[1])
        out.append((pid, r[1], int(r[2])))
    return out


def fill_text(duck, benchmarks: list[str], chars: int) -> int:
    """Synthetic prompt/response text on every row of the given benchmarks (all models)."""
    if chars <= 0:
        return 0
    reps = max(1, chars // 24)
    n = duck.execute(
        f"""
        UPDATE results SET
          prompt = 'Question ' || sample_id || ': ' || \
repeat('which option is right here? ', {reps})
                   || E'\\nA. red\\nB. blue\\nC. green\\nD. white\\nAnswer:',
          response = repeat('Let us think step by step. ', {reps}) || 'The answer is ' ||
                     CASE WHEN correct THEN 'A' ELSE 'B' END || '.',
          prediction = CASE WHEN correct THEN 'A' ELSE 'B' END,
          gold = 'A'
        WHERE benchmark_id IN \
(SELECT id FROM benchmarks WHERE name IN ({", ".join("?" for _ in benchmarks)}))
        """,
        benchmarks,
    ).fetchone()
    duck.execute("CHECKPOINT")
    return int(n[0]) if n else 0


# ------------------------------------------------------------------------- in-process profile


def inprocess(db: Path, endpoints: list[Endpoint], runs: int, profile_names: set[str], top: int):
    """Drive the ASGI app in this thread (sync endpoints inline): medians, then cProfile."""
    import fastapi.dependencies.utils as fdu
    import fastapi.routing as froute
    import httpx

    async def inline(func, *args, **kwargs):
        return func(*args, **kwargs)

    saved = (froute.run_in_threadpool, fdu.run_in_threadpool)
    froute.run_in_threadpool = fdu.run_in_threadpool = inline
    os.environ.pop("FORGETMAP_BROKER_URL", None)
    from forgetmap.web import create_app

    app = create_app(db)
    reports: dict[str, str] = {}

    async def drive() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            for ep in endpoints:
                times = []
                for i in range(runs):
                    path, headers = ep.make(i)
                    t0 = time.perf_counter()
                    r = await client.get(path, headers=headers)
                    times.append(time.perf_counter() - t0)
                    if r.status_code != 200:
                        raise RuntimeError(f"in-process {ep.name}: HTTP {r.status_code}")
                ep.inproc = median(times[1:] if len(times) > 2 else times)
            for ep in endpoints:
                if ep.name not in profile_names:
                    continue
                prof = cProfile.Profile()
                prof.enable()
                for i in range(runs):
                    path, headers = ep.make(i)
                    await client.get(path, headers=headers)
                prof.disable()
                reports[ep.name] = _profile_text(prof, runs, top)

    try:
        asyncio.run(drive())
    finally:
        froute.run_in_threadpool, fdu.run_in_threadpool = saved
        app.state.store.close()
    return reports


def _profile_text(prof: cProfile.Profile, runs: int, top: int) -> str:
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
    start = next((j for j, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    text = [f"  ({runs} requests) top {top} by tottime:"] + lines[start : start + top + 1]
    # the app's own functions by cumulative time: where in app/ the time goes
    app_rows = []
    for (file, line, fn), (_cc, nc, _tt, ct, _callers) in stats.stats.items():
        if f"{os.sep}app{os.sep}" in file and str(ROOT) in file:
            app_rows.append((ct, nc, f"{Path(file).relative_to(ROOT)}:{line}({fn})"))
    app_rows.sort(reverse=True)
    text.append("  app/ functions by cumulative time (per request):")
    for ct, nc, where in app_rows[:12]:
        text.append(f"    {ct / runs * 1000:8.2f} ms  {nc / runs:7.1f} calls  {where}")
    return "\n".join(text)


# ------------------------------------------------------------------------------------ main


def fmt_ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--db", type=Path, help="a loaded DB (copied into the workdir, never opened)")
    ap.add_argument("--rows", type=int, default=FULL_ROWS, help="total rows (default 10M)")
    ap.add_argument("--models", type=int, default=FULL_MODELS)
    ap.add_argument("--benchmarks", type=int, default=FULL_BENCHMARKS)
    ap.add_argument("--seeds", type=int, default=FULL_SEEDS)
    ap.add_argument("--workdir", type=Path, help="directory for the DB copy (default: temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the workdir")
    ap.add_argument("--requests", type=int, default=30, help="sequential requests per endpoint")
    ap.add_argument("--clients", type=int, default=20, help="concurrent clients")
    ap.add_argument("--duration", type=float, default=15.0, help="seconds of load per endpoint")
    ap.add_argument(
        "--think", type=float, default=1.0, help="users' mean think time in phase (c) (0: skip)"
    )
    ap.add_argument(
        "--think-duration", type=float, default=10.0, help="seconds per endpoint in (c)"
    )
    ap.add_argument("--targets", type=int, default=6, help="drill-down (pair, benchmark) targets")
    ap.add_argument("--text-chars", type=int, default=400, help="synthetic text per row (0: none)")
    ap.add_argument("--writes", type=int, default=5, help="map-after-write repetitions")
    ap.add_argument("--no-extras", action="store_true", help="skip the pair page and search")
    ap.add_argument(
        "--profile",
        choices=("auto", "yes", "no"),
        default="auto",
        help="in-process cProfile: auto = endpoints that miss their goal under load",
    )
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args(argv)

    t_start = now()
    print("== forgetmap web benchmark ==")
    print(machine_line())
    own_tmp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="forgetmap-web-")) if own_tmp else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    server = None
    try:
        db = prepare_db(args, workdir)
        import duckdb

        duck = duckdb.connect(str(db))
        counts = {
            t: duck.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("results", "pairs", "transitions")
        }
        print("tables: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))
        if counts["pairs"] == 0:
            print("error: the DB has no pairs (use bench/map.py --keep or omit --db)")
            return 2
        targets = pick_targets(duck, args.targets, seed=7)
        t, filled = timed(fill_text, duck, sorted({b for _, b, _ in targets}), args.text_chars)
        pair_models = {
            pid: (b, p)
            for pid, b, p in duck.execute(
                "SELECT p.id, mb.name, mp.name FROM pairs p JOIN models mb ON mb.id = "
                "p.base_model_id JOIN models mp ON mp.id = p.post_model_id"
            ).fetchall()
        }
        duck.close()
        print(
            "drill-down targets (pair, benchmark, 1->0 flips over seeds): "
            + "; ".join(f"{p} {b} {f}" for p, b, f in targets)
        )
        if filled:
            print(f"synthetic text ({args.text_chars} chars) on {filled:,} rows in {fmt_s(t)}")
        token = subprocess.run(
            [FORGETMAP, "--db", str(db), "token", "create", "bench-web"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

        def drill(prefix: str, headers: dict | None = None, extra: str = "") -> Callable:
            def make(i: int) -> Request:
                pid, bench, _ = targets[i % len(targets)]
                query = urllib.parse.urlencode({"benchmark": bench, "transition": "10"})
                return f"{prefix.format(pid=pid)}?{query}{extra}", dict(headers or {})

            return make

        def fixed(path: str) -> Callable:
            return lambda i: (path, {})

        endpoints = [
            Endpoint("healthz", "GET /healthz (baseline)", fixed("/healthz"), None),
            Endpoint("api_map", "GET /api/map", fixed("/api/map"), MAP_GOAL_MS),
            Endpoint(
                "api_map_bench",
                "GET /api/map?level=benchmark",
                fixed("/api/map?level=benchmark"),
                MAP_GOAL_MS,
            ),
            Endpoint("map_page", "GET / (map page)", fixed("/"), MAP_GOAL_MS),
            Endpoint(
                "map_page_bench", "GET /?level=benchmark", fixed("/?level=benchmark"), MAP_GOAL_MS
            ),
            Endpoint(
                "samples_page",
                "GET /pairs/{id}/samples?benchmark=..&transition=10",
                drill("/pairs/{pid}/samples"),
                DRILL_GOAL_MS,
            ),
            Endpoint(
                "samples_htmx",
                "  the same, HX-Request: true (fragment)",
                drill("/pairs/{pid}/samples", {"HX-Request": "true"}),
                DRILL_GOAL_MS,
            ),
            Endpoint(
                "samples_api",
                "GET /api/pairs/{id}/samples?benchmark=..&transition=10",
                drill("/api/pairs/{pid}/samples"),
                DRILL_GOAL_MS,
            ),
        ]
        if not args.no_extras:
            endpoints += [
                Endpoint(
                    "pair_page",
                    "GET /pairs/{id} (extra)",
                    lambda i: (f"/pairs/{targets[i % len(targets)][0]}", {}),
                    None,
                    extra=True,
                ),
                Endpoint(
                    "samples_search",
                    "  drill-down page with q=think (extra)",
                    drill("/pairs/{pid}/samples", extra="&q=think"),
                    None,
                    extra=True,
                ),
            ]

        server = Server(db, workdir / "server.log")
        print(
            f"server: forgetmap serve on {HOST}:{server.port}, "
            f"answered /healthz {fmt_s(server.start_s)} after start"
        )

        # (a) first requests, then the map right after a write, then sequential medians
        conn = Conn(server.port)
        for ep in endpoints:
            status, body, dt = conn.get(ep.make(0))
            if status != 200:
                raise RuntimeError(f"{ep.name}: HTTP {status}: {body[:300]!r}")
            ep.first = dt
        after_write: dict[str, list[float]] = {"post": [], "api_map": [], "api_map_bench": []}
        auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        base, post = pair_models[targets[0][0]]
        for _ in range(args.writes):
            status, body, dt = conn.request(
                "POST", "/api/pairs", auth, json.dumps({"base": base, "post": post}).encode()
            )
            if status >= 300:
                raise RuntimeError(f"POST /api/pairs: HTTP {status}: {body[:300]!r}")
            after_write["post"].append(dt)
            for name, path in (
                ("api_map", "/api/map"),
                ("api_map_bench", "/api/map?level=benchmark"),
            ):
                status, _, dt = conn.get((path, {}))
                after_write[name].append(dt)
        conn.close()
        for ep in endpoints:
            sequential(server.port, ep, args.requests, budget_s=30.0)

        print(
            f"\n-- (a) sequential: one client, "
            f"median of {args.requests} requests after the first --"
        )
        floor = median(endpoints[0].seq)
        print(
            f"{'endpoint':56s} {'first':>8s} {'median':>8s} {'p95':>8s} "
            f"{'x healthz':>9s} {'bytes':>9s}"
        )
        for ep in endpoints:
            med = median(ep.seq)
            print(
                f"{ep.describe:56s} {fmt_ms(ep.first):>8s} {fmt_ms(med):>8s} "
                f"{fmt_ms(float(np.percentile(ep.seq, 95))):>8s} {med / floor:>8.1f}x {ep.size:>9,}"
                + ("" if len(ep.seq) >= args.requests else f"  (n={len(ep.seq)}: 30 s budget)")
            )
        print(
            "  (ms; 'first' = the first request of the server's life: /api/map's builds the "
            "category map cache that / reuses; /api/map?level=benchmark's builds the benchmark one)"
        )
        print(
            f"map right after a write (POST /api/pairs re-adding pair {targets[0][0]}: "
            f"median {fmt_ms(median(after_write['post']))} ms), median of {args.writes}: "
            f"/api/map {fmt_ms(median(after_write['api_map']))} ms, "
            f"/api/map?level=benchmark {fmt_ms(median(after_write['api_map_bench']))} ms"
        )

        def load_phase(title: str, attr: str, think: float, duration: float) -> None:
            print(f"\n-- {title} --")
            print(
                f"{'endpoint':56s} {'median':>8s} {'p95':>8s} {'max':>8s} {'req/s':>7s} "
                f"{'x healthz':>9s} {'srv cpu/req':>11s} {'srv cores':>9s}"
            )
            for ep in endpoints:
                ld = under_load(server, ep, args.clients, duration, think)
                setattr(ep, attr, ld)
                if not ld["n"]:
                    print(f"{ep.describe:56s} no successful request ({ld['errors']} errors)")
                    continue
                ratio = ld["median"] / getattr(endpoints[0], attr)["median"]
                print(
                    f"{ep.describe:56s} {fmt_ms(ld['median']):>8s} {fmt_ms(ld['p95']):>8s} "
                    f"{fmt_ms(ld['max']):>8s} {ld['rps']:>7.1f} {ratio:>8.1f}x "
                    f"{fmt_ms(ld['cpu_per_req']):>8s} ms {ld['cpu_share']:>9.2f}"
                    + (f"  ({ld['errors']} errors)" if ld["errors"] else "")
                )

        load_phase(
            f"(b) under load: {args.clients} concurrent clients, no think time (closed loop, each "
            f"sends its next request when the last is answered), "
            f"{args.duration:.0f} s per endpoint",
            "load",
            0.0,
            args.duration,
        )
        print(
            "  (ms; srv cpu/req: the server process's CPU seconds / requests answered; "
            "srv cores: its "
            "CPU seconds / wall seconds.\n   The clients run in this process and share the "
            f"machine's {os.cpu_count()} cores with the server. Closed loop: median ~= clients / "
            "req/s, so it is the server's throughput seen as latency.)"
        )
        if args.think > 0:
            load_phase(
                f"(c) {args.clients} concurrent users with think time (exponential, mean "
                f"{args.think:g} s between a user's requests), "
                f"{args.think_duration:.0f} s per endpoint",
                "paced",
                args.think,
                args.think_duration,
            )
        server.stop()
        server = None

        print("\n-- result --")
        paced = args.think > 0
        print(
            f"{'endpoint':56s} {'seq med':>8s} {'load med':>8s} {'load p95':>8s} "
            + (f"{'users med':>9s} {'users p95':>9s} " if paced else "")
            + f"{'goal':>8s}  closed loop{'  users' if paced else ''}"
        )
        missed = []
        for ep in endpoints:
            if ep.goal_ms is None:
                continue
            ld = ep.load or {}
            met = median(ep.seq) * 1000 < ep.goal_ms and ld.get("median", 1e9) * 1000 < ep.goal_ms
            pc = ep.paced or {}
            met_paced = (
                median(ep.seq) * 1000 < ep.goal_ms and pc.get("median", 1e9) * 1000 < ep.goal_ms
            )
            if not met or (paced and not met_paced):
                missed.append(ep)
            print(
                f"{ep.describe:56s} {fmt_ms(median(ep.seq)):>8s} {fmt_ms(ld.get('median')):>8s} "
                f"{fmt_ms(ld.get('p95')):>8s} "
                + (f"{fmt_ms(pc.get('median')):>9s} {fmt_ms(pc.get('p95')):>9s} " if paced else "")
                + f"{'< ' + str(int(ep.goal_ms)) + ' ms':>8s}  {'MET' if met else 'MISSED':11s}"
                + (f"  {'MET' if met_paced else 'MISSED'}" if paced else "")
            )
        print("  (MET: the median is under the goal sequentially and under that load; ms)")

        if args.profile != "no" and (args.profile == "yes" or missed):
            goal_eps = [ep for ep in endpoints if ep.goal_ms is not None or ep.extra]
            if args.profile == "yes":
                names = {ep.name for ep in goal_eps}
            else:
                names = {ep.name for ep in missed}
            runs = 20
            print(
                f"\n-- in-process (ASGI, no socket, endpoints inline), median of {runs - 1} after "
                "1 warm-up; cProfile of " + ", ".join(sorted(names)) + " --"
            )
            reports = inprocess(db, [endpoints[0], *goal_eps], runs, names, args.top)
            for ep in [endpoints[0], *goal_eps]:
                print(
                    f"{ep.describe:56s} in-process {fmt_ms(ep.inproc):>7s} ms  "
                    f"(over HTTP, sequential: {fmt_ms(median(ep.seq))} ms)"
                )
            for name, text in reports.items():
                print(f"\n[{name}]")
                print(text)
        print(f"\nwall time {fmt_s(now() - t_start)}")
        return 0
    finally:
        if server is not None:
            server.stop()
        if own_tmp and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        elif not args.keep:
            for suffix in ("", ".wal"):
                Path(str(workdir / "web.duckdb") + suffix).unlink(missing_ok=True)
        else:
            print(f"kept {workdir}")


if __name__ == "__main__":
    raise SystemExit(main())
