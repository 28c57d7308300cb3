"""Load benchmark: under load, nothing lost. A real `forgetmap serve` over real Redis, browsed,
imported into and written to by workers at once.

    .venv/bin/python bench/load.py            # 20 clients, 2 x 65,000-row imports, 4 workers,
                                              # ~1 min
    .venv/bin/python bench/load.py --quick    # 10 clients, 2 x 13,000 rows, shorter phases
    .venv/bin/python bench/load.py --think 0  # closed loop: each client asks again at once

The app gets a database of its own (two models, their pairs, a submit and a worker token) and a
Redis queue of its own (``--broker``, a database number of its own). Then, at once:

- ``--clients`` browsing clients (threads of this process, one keep-alive connection each) loop
  over the map page ``/``, ``/api/map``, a pair page ``/pairs/{id}``, the drill-down
  ``/pairs/{id}/samples?benchmark=B&transition=10`` and its JSON, waiting an exponential think
  time (mean ``--think`` s) between pages; they start ``--warmup`` s before the writes and stop
  ``--after`` s after the last one;
- ``--imports`` table files of ``--import-rows`` rows each (with ``--text-chars`` of prompt and
  response: the long answers go to the answer files) uploaded through ``POST /api/imports`` and
  followed to the end of their job (``forgetmap.services.import_upload.upload_import``);
- ``--workers`` simulated workers: the shards are real (an evaluation job through
  ``POST /api/jobs``), and each worker claims its shards and posts their rows in batches of
  ``--batch`` with the worker's own client (``forgetmap.worker.client.AppClient``: start, progress,
  ``POST /api/results``, finish), pausing ``--worker-pause`` s between batches as a worker does
  while it evaluates.

Reported: p50/p99 client-side latency per page kind, over the whole run and for the requests
started while the imports ran (the first upload's start to the last import job's end), requests
and failures (a non-200 answer, a broken connection, or a retried worker call), the workers'
``POST /api/results`` latency; then, with the app stopped, every model's rows in the database
against what was imported and posted: 0 lost, 0 duplicated. Goal: 0 failed requests and the map's
p99 under 200 ms while the imports run. The last line sums it up; the exit status is 1 when a
request failed or a row is lost or duplicated (the latency goal is reported, not enforced).
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from forgetmap.contract.imports import import_options  # noqa: E402
from forgetmap.contract.results import ResultRow  # noqa: E402
from forgetmap.core.taxonomy import CATEGORIES  # noqa: E402
from forgetmap.db import open_store  # noqa: E402
from forgetmap.services.import_upload import upload_import  # noqa: E402
from forgetmap.services.tokens import Role, create_token  # noqa: E402
from forgetmap.worker.client import AppClient  # noqa: E402

from bench._data import Spec, load_dataset, machine_line, write_dataset  # noqa: E402
from bench._http import Conn, Server  # noqa: E402
from bench.web import pick_targets  # noqa: E402

MAP_P99_GOAL_MS = 200.0
PAGES = ("map page", "/api/map", "pair page", "drill-down", "drill-down JSON")
RESULTS = "worker POST /api/results"
IMPORT_BENCHMARKS = 13  # benchmarks an import file spreads its rows over (3 seeds each)
CATEGORY = CATEGORIES[0]


# ------------------------------------------------------------------------------- the records


@dataclass(frozen=True)
class Call:
    kind: str
    start: float  # perf_counter at the request's start
    seconds: float
    ok: bool


@dataclass
class Record:
    """What every thread did; each appends to its own list (no lock needed)."""

    calls: list[list[Call]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def new_log(self) -> list[Call]:
        log: list[Call] = []
        self.calls.append(log)
        return log

    def all(self) -> list[Call]:
        return [c for log in self.calls for c in log]


class RetryCounter(logging.Handler):
    """Counts the worker client's retries (each a request that failed and was sent again)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.retries: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.retries.append(record.getMessage())


def percentiles(seconds: list[float]) -> dict:
    if not seconds:
        return {"n": 0}
    values = np.array(seconds) * 1000
    return {
        "n": len(values),
        "p50_ms": float(np.percentile(values, 50)),
        "p99_ms": float(np.percentile(values, 99)),
        "max_ms": float(values.max()),
    }


def summarize(
    calls: list[Call], quiet: tuple[float, float], imports: list[tuple[float, float]]
) -> dict:
    """Per kind: latency of the successful calls overall, of those started in the ``quiet``
    window (no writes yet: the baseline) and in one of the ``imports`` windows, with the failures
    counted."""

    def started_in(c: Call, windows: list[tuple[float, float]]) -> bool:
        return any(start <= c.start <= end for start, end in windows)

    out = {}
    for kind in dict.fromkeys(c.kind for c in calls):
        mine = [c for c in calls if c.kind == kind]
        good = [c for c in mine if c.ok]
        out[kind] = {
            "requests": len(mine),
            "failed": len(mine) - len(good),
            "overall": percentiles([c.seconds for c in good]),
            "quiet": percentiles([c.seconds for c in good if started_in(c, [quiet])]),
            "during_imports": percentiles([c.seconds for c in good if started_in(c, imports)]),
        }
    return out


# ---------------------------------------------------------------------------------- the data


def seed_database(db: Path, workdir: Path, rows: int, benchmarks: int) -> dict:
    """Two models (their pairs both ways), a submit and a worker token; where the pages point."""
    spec = Spec(rows=rows, models=2, benchmarks=benchmarks, seeds=3)
    paths = write_dataset(spec, workdir / "seed")
    store = open_store(db)
    try:
        load_dataset(spec, store, paths)
        with store.transaction() as conn:
            tokens = {
                role: create_token(conn, f"load-{role}", role)
                for role in (Role.submit, Role.worker)
            }
        with store.read() as conn:
            targets = pick_targets(conn, 2, seed=0)
    finally:
        store.close()
    shutil.rmtree(workdir / "seed", ignore_errors=True)
    expected = {name: spec.total_rows // spec.models for name in spec.model_names()}
    return {"tokens": tokens, "targets": targets, "expected": expected}


def write_import_file(path: Path, model: str, rows: int, text_chars: int, seed: int) -> Path:
    """``rows`` rows of one model in Parquet: row i is benchmark i % 13, seed (i // 13) % 3,
    sample i // 39, so every key is distinct; prompt and response of about ``text_chars``."""
    i = np.arange(rows)
    numbers = pc.cast(pa.array(i), pa.string())

    def text(prefix: str, tail: pa.Array) -> pa.Array:
        filler = np.full(rows, prefix + "word " * max(0, text_chars // 5))
        return pc.binary_join_element_wise(pa.array(filler), tail, " #")

    def joined(prefix: str, values: np.ndarray) -> pa.Array:
        return pc.binary_join_element_wise(
            pa.array(np.full(rows, prefix)), pc.cast(pa.array(values), pa.string()), ""
        )

    table = pa.table(
        {
            "model": pa.array(np.full(rows, model)),
            "benchmark": joined("load:import_", i % IMPORT_BENCHMARKS),
            "sample_id": joined("q", i // (3 * IMPORT_BENCHMARKS)),
            "seed": pa.array((i // IMPORT_BENCHMARKS) % 3),
            "correct": pa.array(np.random.default_rng(seed).random(rows) < 0.6),
            "num_choices": pa.array(np.full(rows, 4)),
            "category": pa.array(np.full(rows, CATEGORY)),
            "prompt": text("Question: ", numbers),
            "response": text("Let us think. ", numbers),
        }
    )
    pq.write_table(table, path)
    return path


# ---------------------------------------------------------------------------------- the app


def check_broker(url: str) -> str | None:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001 - any failure means no broker
        return f"Redis not reachable at {url}: {type(exc).__name__}: {exc}"
    return None


def clear_queue(url: str, queue: str) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    for key in client.scan_iter(f"*{queue}*"):
        client.delete(key)


# ------------------------------------------------------------------------------ the clients


def browse(
    port: int,
    pages: list[tuple[str, str]],
    think: float,
    stop: threading.Event,
    log: list[Call],
    seed: int,
) -> None:
    """One browsing client: the pages in turn, an exponential think time between them."""
    rng = np.random.default_rng(seed)
    conn = Conn(port)
    i = seed
    while not stop.is_set():
        kind, path = pages[i % len(pages)]
        i += 1
        t0 = time.perf_counter()
        try:
            status, _, seconds = conn.get((path, {}))
            log.append(Call(kind, t0, seconds, status == 200))
        except (OSError, http.client.HTTPException):  # Conn retried a closed keep-alive once
            log.append(Call(kind, t0, time.perf_counter() - t0, False))
            conn.close()
            conn = Conn(port)
        if think:
            stop.wait(rng.exponential(think))
    conn.close()


def shard_batches(shard_id: int, rows: int, batch: int, text_chars: int) -> list[list[ResultRow]]:
    """A shard's rows as a worker uploads them, in batches (built before the clock starts)."""
    filler = "word " * max(0, text_chars // 5)
    body = [
        ResultRow(
            sample_id=f"w{j:06d}",
            correct=(shard_id + j) % 3 != 0,
            num_choices=4,
            category=CATEGORY,
            prompt=f"Question {j}: {filler}",
            response=f"Let us think. {filler} #{j}",
            prediction="A",
            gold="A",
        )
        for j in range(rows)
    ]
    return [body[i : i + batch] for i in range(0, rows, batch)]


def run_worker(
    url: str,
    token: str,
    name: str,
    shards: dict[int, list[list[ResultRow]]],
    pause: float,
    record: Record,
) -> None:
    """A worker's calls for each of its shards, as worker/evaluate.py makes them: claim,
    progress, the rows in batches, finish."""
    log = record.new_log()
    client = AppClient(url, token, worker_name=name, timeout=120)
    try:
        for shard_id, batches in shards.items():
            total = sum(len(b) for b in batches)
            if client.start(shard_id, name, uuid.uuid4().hex) is None:
                raise RuntimeError(f"shard {shard_id} could not be claimed")
            client.progress(shard_id, 0, total)
            done = 0
            for body in batches:
                t0 = time.perf_counter()
                client.results(shard_id, body)
                log.append(Call(RESULTS, t0, time.perf_counter() - t0, True))
                done += len(body)
                if done < total:
                    client.progress(shard_id, done, total)
                    time.sleep(pause)
            if client.finish(shard_id, None, full_size=total) != "done":
                raise RuntimeError(f"shard {shard_id} did not end done")
    except Exception as exc:  # noqa: BLE001 - reported as a failure of the run
        record.problems.append(f"{name}: {type(exc).__name__}: {exc}")
        log.append(Call(RESULTS, time.perf_counter(), 0.0, False))
    finally:
        client.close()


def run_import(
    url: str, token: str, path: Path, record: Record, ends: list[float], results: list[dict]
) -> None:
    try:
        job = upload_import(
            url, token, path, import_options("table"), poll_seconds=0.05, timeout=300
        )
        results.append(job["request"]["result"])
    except Exception as exc:  # noqa: BLE001 - reported as a failure of the run
        record.problems.append(f"import of {path.name}: {type(exc).__name__}: {exc}")
    ends.append(time.perf_counter())


def submit_shards(
    url: str, token: str, model: str, workers: int, shards_per_worker: int
) -> list[list[int]]:
    """An evaluation job of ``model`` on a benchmark per worker, a seed per shard; each worker's
    shard ids."""
    import httpx

    body = {
        "models": [{"name": model, "path": f"load/{model}"}],
        "benchmarks": [f"load:worker_{w}" for w in range(workers)],
        "seeds": list(range(shards_per_worker)),
    }
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        reply = client.post("/api/jobs", json=body)
        if reply.status_code != 201:
            raise RuntimeError(f"POST /api/jobs: {reply.status_code} {reply.text[:300]}")
        job = client.get(f"/api/jobs/{reply.json()['id']}").json()
    by_benchmark: dict[str, list[int]] = {}
    for shard in job["shards"]:
        by_benchmark.setdefault(shard["benchmark"], []).append(shard["id"])
    return [sorted(by_benchmark[f"load:worker_{w}"]) for w in range(workers)]


# ------------------------------------------------------------------------------ the run


def stored_rows(db: Path) -> dict[str, tuple[int, int]]:
    """Per model: (rows, distinct (benchmark, seed, sample) keys) in the stopped app's file."""
    store = open_store(db, read_only=True)
    try:
        with store.read() as conn:
            found = conn.execute(
                "SELECT m.name, count(*), count(DISTINCT (r.benchmark_id, r.seed, r.sample_id)) "
                "FROM results r JOIN models m ON m.id = r.model_id GROUP BY m.name"
            ).fetchall()
    finally:
        store.close()
    return {name: (int(rows), int(keys)) for name, rows, keys in found}


def row_check(expected: dict[str, int], found: dict[str, tuple[int, int]]) -> dict:
    """Lost: expected keys missing; duplicated: rows beyond one per key, and rows of a model
    nobody wrote."""
    lost = sum(max(0, n - found.get(m, (0, 0))[1]) for m, n in expected.items())
    duplicated = sum(rows - keys for rows, keys in found.values())
    duplicated += sum(found[m][0] for m in found if m not in expected)
    duplicated += sum(max(0, found.get(m, (0, 0))[1] - n) for m, n in expected.items())
    return {
        "expected": sum(expected.values()),
        "found": sum(r for r, _ in found.values()),
        "lost": lost,
        "duplicated": duplicated,
        "per_model": {
            m: {
                "expected": expected.get(m, 0),
                "rows": found.get(m, (0, 0))[0],
                "keys": found.get(m, (0, 0))[1],
            }
            for m in sorted(set(expected) | set(found))
        },
    }


def page_list(targets: list[tuple[int, str, int]]) -> list[tuple[str, str]]:
    pages = []
    for pair_id, benchmark, _ in targets:
        query = urllib.parse.urlencode({"benchmark": benchmark, "transition": "10"})
        pages += [
            ("map page", "/"),
            ("/api/map", "/api/map"),
            ("pair page", f"/pairs/{pair_id}"),
            ("drill-down", f"/pairs/{pair_id}/samples?{query}"),
            ("drill-down JSON", f"/api/pairs/{pair_id}/samples?{query}"),
        ]
    return pages


def write_round(app: Server, args, tokens: dict, round_: int, record: Record) -> dict:
    """One round of writes at once: the imports and the workers; its window and what it wrote."""
    imports = [
        write_import_file(
            app.workdir / f"import-{round_}-{k}.parquet",
            f"load-import-{round_}-{k}",
            args.import_rows,
            args.text_chars,
            seed=round_ * 100 + k,
        )
        for k in range(args.imports)
    ]
    model = f"load-worker-{round_}"
    shard_ids = (
        submit_shards(app.url, tokens[Role.submit], model, args.workers, args.shards)
        if args.workers
        else []
    )
    shards = [
        {sid: shard_batches(sid, args.worker_rows, args.batch, args.text_chars) for sid in ids}
        for ids in shard_ids
    ]
    ends: list[float] = []
    results: list[dict] = []
    threads = [
        threading.Thread(
            target=run_import, args=(app.url, tokens[Role.submit], path, record, ends, results)
        )
        for path in imports
    ]
    threads += [
        threading.Thread(
            target=run_worker,
            args=(
                app.url,
                tokens[Role.worker],
                f"load-worker-{round_}-{w}",
                shards[w],
                args.worker_pause,
                record,
            ),
        )
        for w in range(args.workers)
    ]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for path in imports:
        path.unlink()
    expected = {f"load-import-{round_}-{k}": args.import_rows for k in range(args.imports)}
    if args.workers:
        expected[model] = args.workers * args.shards * args.worker_rows
    return {
        "window": (start, max(ends, default=start)),
        "seconds": time.perf_counter() - start,
        "expected": expected,
        "added": sum(r["rows_added"] for r in results),
    }


def run(args, workdir: Path) -> dict:
    db = workdir / "load.duckdb"
    for left in (db, *(db.with_name(db.name + s) for s in (".wal", ".texts", ".imports"))):
        shutil.rmtree(left, ignore_errors=True) if left.is_dir() else left.unlink(missing_ok=True)
    seeded = seed_database(db, workdir, args.seed_rows, args.seed_benchmarks)
    expected = dict(seeded["expected"])
    queue = f"fm-load-{uuid.uuid4().hex[:8]}"
    app = Server(
        db,
        workdir / "serve.log",
        settings={
            "FORGETMAP_BROKER_URL": args.broker,
            "FORGETMAP_QUEUE": queue,
            **dict(s.split("=", 1) for s in args.app_setting),
        },
    )
    record, stop, retries = Record(), threading.Event(), RetryCounter()
    logging.getLogger("forgetmap.worker").addHandler(retries)
    rounds = []
    try:
        pages = page_list(seeded["targets"])
        warm = Conn(app.port)
        for _, path in pages:  # the first request of a page fills the app's caches: not timed
            warm.get((path, {}))
        warm.close()
        browsers = [
            threading.Thread(
                target=browse,
                args=(app.port, pages, args.think, stop, record.new_log(), c),
                daemon=True,
            )
            for c in range(args.clients)
        ]
        quiet_start = time.perf_counter()
        for thread in browsers:
            thread.start()
        time.sleep(args.warmup)
        quiet = (quiet_start, time.perf_counter())
        for round_ in range(args.rounds):
            rounds.append(write_round(app, args, seeded["tokens"], round_, record))
            expected.update(rounds[-1]["expected"])
            time.sleep(args.after)
        stop.set()
        for thread in browsers:
            thread.join(timeout=120)
    finally:
        stop.set()
        logging.getLogger("forgetmap.worker").removeHandler(retries)
        app.stop()
        clear_queue(args.broker, queue)
    calls = record.all()
    windows = [r["window"] for r in rounds]
    kinds = summarize(calls, quiet, windows)
    return {
        "kinds": kinds,
        "requests": len(calls),
        "failed": sum(k["failed"] for k in kinds.values()) + len(retries.retries),
        "retries": retries.retries[:20],
        "problems": record.problems,
        "rows": row_check(expected, stored_rows(db)),
        "imports_seconds": [end - start for start, end in windows],
        "round_seconds": [r["seconds"] for r in rounds],
        "imported_rows_added": sum(r["added"] for r in rounds),
    }


def report(args, result: dict) -> str:
    kinds = result["kinds"]
    columns = (
        ("overall", "p50"),
        ("overall", "p99"),
        ("quiet", "p99"),
        ("during_imports", "p50"),
        ("during_imports", "p99"),
    )
    print(
        f"\n{'kind':<26}{'requests':>9}{'failed':>7}{'p50':>8}{'p99':>8}{'p99 quiet':>10}"
        f"{'p50 imp.':>9}{'p99 imp.':>9}{'n imp.':>7}"
    )
    for kind in [*PAGES, RESULTS]:
        if (k := kinds.get(kind)) is None:
            continue
        cells = [f"{k[part][f'{q}_ms']:.1f}" if k[part]["n"] else "-" for part, q in columns]
        widths = (8, 8, 10, 9, 9)
        print(
            f"{kind:<26}{k['requests']:>9}{k['failed']:>7}"
            + "".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))
            + f"{k['during_imports']['n']:>7}"
        )
    imports = ", ".join(f"{s:.1f}" for s in result["imports_seconds"])
    rounds = ", ".join(f"{s:.1f}" for s in result["round_seconds"])
    print(
        f"(ms; quiet: the {args.warmup:.0f} s before any write; imp.: requests started while "
        f"the imports ran: {imports} s; each round's writes took {rounds} s)"
    )
    for line in result["problems"] + result["retries"]:
        print(f"problem: {line}")
    rows = result["rows"]
    for model, r in rows["per_model"].items():
        print(
            f"rows {model}: expected {r['expected']:,}, stored {r['rows']:,} "
            f"({r['keys']:,} distinct keys)"
        )
    during = [kinds[k]["during_imports"] for k in ("map page", "/api/map") if k in kinds]
    map_p99 = max((d["p99_ms"] for d in during if d["n"]), default=float("nan"))
    met = "met" if map_p99 < MAP_P99_GOAL_MS else "missed"
    return (
        f"load: {args.clients} clients, {args.rounds} x ({args.imports} x {args.import_rows:,}-row "
        f"imports + {args.workers} workers x {args.shards * args.worker_rows:,} rows): "
        f"{result['requests']:,} requests, {result['failed']} failed; map p99 during imports "
        f"{map_p99:.0f} ms (goal < {MAP_P99_GOAL_MS:.0f} ms: {met}); rows {rows['found']:,} of "
        f"{rows['expected']:,}: {rows['lost']} lost, {rows['duplicated']} duplicated"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="fewer clients and rows, short phases")
    ap.add_argument("--clients", type=int, help="browsing clients (default 20; quick 10)")
    ap.add_argument("--think", type=float, default=0.5, help="mean think time, s (0: closed loop)")
    ap.add_argument("--rounds", type=int, help="rounds of writes (default 3; quick 1)")
    ap.add_argument("--imports", type=int, default=2, help="table files uploaded at once")
    ap.add_argument("--import-rows", type=int, help="rows a file (default 65,000; quick 13,000)")
    ap.add_argument("--text-chars", type=int, default=300, help="prompt/response chars a row")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--shards", type=int, default=2, help="shards a worker (a seed each)")
    ap.add_argument("--worker-rows", type=int, help="rows a shard (default 2,560; quick 1,024)")
    ap.add_argument("--batch", type=int, default=256, help="rows a POST /api/results")
    ap.add_argument("--worker-pause", type=float, default=0.1, help="s between a worker's batches")
    ap.add_argument("--seed-rows", type=int, default=120_000, help="rows of the 2 browsed models")
    ap.add_argument("--seed-benchmarks", type=int, default=20)
    ap.add_argument("--warmup", type=float, help="s of browsing before the writes (default 5)")
    ap.add_argument("--after", type=float, help="s of browsing after each round (default 3)")
    ap.add_argument("--broker", default="redis://127.0.0.1:6379/13", help="Redis, its own db")
    ap.add_argument("--workdir", type=Path, help="where the database goes (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the workdir")
    ap.add_argument("--json", type=Path, help="write the figures here as JSON")
    ap.add_argument(
        "--app-setting",
        action="append",
        default=[],
        metavar="FORGETMAP_X=V",
        help="a setting for the app (repeatable), e.g. to compare a setting's values",
    )
    args = ap.parse_args(argv)
    quick = args.quick
    defaults = {
        "clients": (20, 10),
        "import_rows": (65_000, 13_000),
        "worker_rows": (2_560, 1_024),
        "warmup": (5.0, 2.0),
        "after": (3.0, 1.0),
        "rounds": (3, 1),
    }
    for name, (full, short) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, short if quick else full)
    if problem := check_broker(args.broker):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    print(machine_line())
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="fm-load-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = run(args, workdir)
        summary = report(args, result)
        if args.json:
            args.json.write_text(json.dumps({**result, "summary": summary}, indent=1))
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(summary)
    rows = result["rows"]
    return 1 if result["failed"] or rows["lost"] or rows["duplicated"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
