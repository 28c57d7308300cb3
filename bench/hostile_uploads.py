"""Hostile uploads: what a table import costs when the file's shape, not its size, is the attack.

Each hostile file is measured next to a normal file of the same size:

- a wide CSV (300,000 columns, 2.9 MB) beside a results CSV of the same bytes;
- a long-line JSONL (one line of ``--long-mb`` MB) beside a JSONL of ordinary lines (4 KB answers);
- a zip bomb (``--bomb-mb`` MB of zeros, about 0.5 MB zipped) beside a zip of a results CSV of the
  same packed size;
- a wide Parquet file (100,000 columns) beside a results Parquet file of the same bytes.

The table files go through ``forgetmap --db FRESH import table FILE`` in a fresh process under
``/usr/bin/time -v`` (its peak RSS); the zips through a fresh ``forgetmap serve``'s
``POST /api/imports`` (the app's peak RSS, ``VmHWM``, less its RSS before the upload, and what
was left in ``<db>.imports/`` after the job). Prints one table: peak memory, seconds, the outcome.

    .venv/bin/python bench/hostile_uploads.py                 # ~1 min on 2 cores
    .venv/bin/python bench/hostile_uploads.py --long-mb 32 --bomb-mb 128   # quicker
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from forgetmap.contract.imports import import_options  # noqa: E402
from forgetmap.db import open_store  # noqa: E402
from forgetmap.services.import_upload import ImportFailed, upload_import  # noqa: E402
from forgetmap.services.tokens import Role, create_token  # noqa: E402

from bench._http import Server  # noqa: E402

FORGETMAP = str(Path(sys.executable).parent / "forgetmap")
HEADER = "model,benchmark,sample_id,correct,seed\n"


def results_csv(path: Path, size: int) -> Path:
    """A results CSV of about ``size`` bytes (two models, ten benchmarks)."""
    with path.open("w") as out:
        out.write(HEADER)
        written, i = len(HEADER), 0
        while written < size:
            line = f"model-{i % 2},bench_{i % 10},q{i},{(i * 7) % 3 % 2},0\n"
            out.write(line)
            written += len(line)
            i += 1
    return path


def wide_csv(path: Path, columns: int) -> Path:
    path.write_text(
        ",".join(f"c{i}" for i in range(columns)) + "\n" + ",".join("1" * columns) + "\n"
    )
    return path


def long_line_jsonl(path: Path, megabytes: int) -> Path:
    """One line whose answer is ``megabytes`` MB, then an ordinary one."""
    with path.open("w") as out:
        head = '{"model": "m", "benchmark": "b", "sample_id": "long", "correct": 1, "response": "'
        out.write(head)
        chunk = "x" * (1 << 20)
        for _ in range(megabytes):
            out.write(chunk)
        out.write('"}\n')
        out.write(json.dumps({"model": "m", "benchmark": "b", "sample_id": "s", "correct": 0}))
        out.write("\n")
    return path


def answers_jsonl(path: Path, size: int) -> Path:
    """Ordinary lines with 4 KB answers, about ``size`` bytes."""
    answer = ("the answer is " * 300)[:4000]
    with path.open("w") as out:
        written, i = 0, 0
        while written < size:
            line = (
                json.dumps(
                    {
                        "model": "m",
                        "benchmark": f"b{i % 10}",
                        "sample_id": f"q{i}",
                        "correct": i % 2,
                        "response": answer,
                    }
                )
                + "\n"
            )
            out.write(line)
            written += len(line)
            i += 1
    return path


def zip_of(path: Path, name: str, write) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open(name, "w", force_zip64=True) as member:
            write(member)
    return path


def zeros(megabytes: int):
    def write(member) -> None:
        block = b"\0" * (1 << 20)
        for _ in range(megabytes):
            member.write(block)

    return write


def csv_bytes(source: Path):
    def write(member) -> None:
        member.write(source.read_bytes())

    return write


def wide_parquet(path: Path, columns: int) -> Path:
    pq.write_table(pa.table({f"c{i}": pa.array([1], pa.int8()) for i in range(columns)}), path)
    return path


def results_parquet(path: Path, size: int) -> Path:
    """A results Parquet file of about ``size`` bytes (unique ids keep it from compressing)."""
    rows = max(1000, size // 12)
    while True:
        table = pa.table(
            {
                "model": ["m"] * rows,
                "benchmark": [f"b{i % 10}" for i in range(rows)],
                "sample_id": [f"q{i * 7919 % 1000003}-{i}" for i in range(rows)],
                "correct": [i % 2 for i in range(rows)],
            }
        )
        pq.write_table(table, path)
        if path.stat().st_size >= size * 0.9:
            return path
        rows = int(rows * size / path.stat().st_size) + 1000


def cli_import(path: Path, work: Path) -> dict:
    """Peak RSS (MB), seconds and outcome of a fresh process's ``import table``."""
    db = work / f"fresh-{time.monotonic_ns()}.duckdb"
    t0 = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-v", FORGETMAP, "--db", str(db), "import", "table", str(path)],
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - t0
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    outcome = done.stdout.strip().splitlines()[-1] if done.returncode == 0 else lines[0]
    return {"peak_mb": int(rss.group(1)) / 1024, "seconds": seconds, "outcome": outcome}


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def app_import(path: Path, work: Path) -> dict:
    """The app's peak RSS growth (MB) over one upload's import, its seconds and outcome, and the
    bytes left in the staging folder after the job."""
    folder = Path(tempfile.mkdtemp(dir=work, prefix="app-"))
    db = folder / "app.duckdb"
    store = open_store(db)
    try:
        with store.transaction() as conn:
            token = create_token(conn, "bench", Role.submit)
    finally:
        store.close()
    server = Server(db, folder / "serve.log", settings={"FORGETMAP_WARM_START": "false"})
    try:
        # the peak from here on: "5" resets the process's VmHWM to its current RSS
        Path(f"/proc/{server.proc.pid}/clear_refs").write_text("5")
        before = _status_kb(server.proc.pid, "VmRSS")
        t0 = time.perf_counter()
        try:
            job = upload_import(server.url, token, path, import_options("table"), timeout=600)
            outcome = job["request"]["lines"][0]
        except ImportFailed as exc:
            outcome = f"error: {exc}"
        seconds = time.perf_counter() - t0
        peak = _status_kb(server.proc.pid, "VmHWM")
    finally:
        server.stop()
    staging = db.with_name(db.name + ".imports")
    left = (
        sum(p.stat().st_size for p in staging.rglob("*") if p.is_file()) if staging.exists() else 0
    )
    return {"peak_mb": (peak - before) / 1024, "seconds": seconds, "outcome": outcome, "left": left}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", type=int, default=300_000, help="the wide CSV's columns")
    parser.add_argument("--long-mb", type=int, default=200, help="the long JSONL line, in MB")
    parser.add_argument("--bomb-mb", type=int, default=512, help="zeros in the zip bomb, in MB")
    parser.add_argument("--parquet-columns", type=int, default=100_000)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        rows = []

        def pair(what: str, hostile: Path, normal: Path, measure) -> None:
            for kind, path in (("hostile", hostile), ("normal", normal)):
                size = path.stat().st_size
                result = measure(path, work)
                rows.append((what if kind == "hostile" else "", kind, size, result))
                print(f"  measured {what} ({kind}): {result['peak_mb']:.0f} MB", file=sys.stderr)

        wide = wide_csv(work / "wide.csv", args.columns)
        pair(
            f"CSV, {args.columns:,} columns",
            wide,
            results_csv(work / "normal.csv", wide.stat().st_size),
            cli_import,
        )
        long = long_line_jsonl(work / "long.jsonl", args.long_mb)
        pair(
            f"JSONL, one {args.long_mb} MB line",
            long,
            answers_jsonl(work / "answers.jsonl", long.stat().st_size),
            cli_import,
        )
        pwide = wide_parquet(work / "wide.parquet", args.parquet_columns)
        normal = results_parquet(work / "normal.parquet", pwide.stat().st_size)
        pair(f"Parquet, {args.parquet_columns:,} columns", pwide, normal, cli_import)
        bomb = zip_of(work / "bomb.zip", "zeros.csv", zeros(args.bomb_mb))
        source = results_csv(work / "zipped.csv", bomb.stat().st_size * 10)
        normal_zip = zip_of(work / "normal.zip", "results.csv", csv_bytes(source))
        pair(f"zip of {args.bomb_mb} MB of zeros (upload)", bomb, normal_zip, app_import)

    print()
    print("| input | file | bytes | peak memory (MB) | seconds | outcome |")
    print("|---|---|---:|---:|---:|---|")
    for what, kind, size, r in rows:
        outcome = r["outcome"] if len(r["outcome"]) <= 90 else r["outcome"][:87] + "..."
        if "left" in r:
            outcome += f"; {r['left']:,} bytes left staged"
        print(
            f"| {what} | {kind} | {size:,} | {r['peak_mb']:.0f} | {r['seconds']:.1f} | {outcome} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
