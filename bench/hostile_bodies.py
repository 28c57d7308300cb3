"""Hostile bodies: the app's peak memory under request bodies it must not hold (issue 50, row 2).

    .venv/bin/python bench/hostile_bodies.py                 # 300 MB bodies, 4 at once, 3 runs
    .venv/bin/python bench/hostile_bodies.py --mb 50 --runs 1   # quick

Each case runs against a fresh `forgetmap serve` (an empty database with a submit and a worker
token), so one case's freed heap does not hide the next one's growth. The client streams every
body from a generator in 1 MiB pieces (it never holds one) and keeps sending to the end, as an
attacker would, noting how much it had sent when the answer arrived. Cases:

- a normal small request: ``POST /api/pairs`` (60 bytes, submit token; the route answers 422, the
  models are unknown);
- ``--mb`` MB of JSON to ``POST /api/results`` without a token, one, then ``--concurrent`` at
  once (a body of one long string: the parse of the old app held it ~3 times);
- ``--token-mb`` MB to ``POST /api/results`` with a worker's token (over the 64 MiB limit).

Reported per case, medians over ``--runs``: the answer, MB sent when it came, seconds to send the
whole body, and the app process's peak RSS above its RSS before the case (VmHWM, reset through
/proc/PID/clear_refs). Goal: every hostile case within a few MB of the normal request's growth.
"""

from __future__ import annotations

import argparse
import re
import select
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from forgetmap.db import open_store  # noqa: E402
from forgetmap.services.tokens import Role, create_token  # noqa: E402

from bench._http import HOST, Server  # noqa: E402

MB = 1 << 20
PIECE = MB


@dataclass(frozen=True)
class Case:
    name: str
    path: str
    role: Role | None  # whose token is sent; None: none
    size: int  # body bytes
    concurrent: int = 1


@dataclass(frozen=True)
class Sent:
    status: int
    answered_after: int  # body bytes sent when the answer was there to read
    seconds: float


def json_body(size: int) -> Iterator[bytes]:
    """``size`` bytes of a results upload whose one row's prompt is one long string, in pieces."""
    head = b'{"shard_id": 1, "rows": [{"sample_id": "q", "correct": true, "prompt": "'
    tail = b'"}]}'
    filler = size - len(head) - len(tail)
    yield head
    while filler > 0:
        yield b"x" * min(PIECE, filler)
        filler -= PIECE
    yield tail


SMALL = b'{"base": "nobody", "post": "nobody-else"}'


def post(port: int, case: Case, token: str | None) -> Sent:
    """Send ``case``'s body to the end, watching for the answer after each piece."""
    head = [
        f"POST {case.path} HTTP/1.1",
        f"Host: {HOST}",
        "Content-Type: application/json",
        f"Content-Length: {case.size}",
    ]
    head += [f"Authorization: Bearer {token}"] if token else []
    pieces = [SMALL] if case.size == len(SMALL) else json_body(case.size)
    t0 = time.perf_counter()
    with socket.create_connection((HOST, port), timeout=600) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sent, answered_after = 0, None
        for piece in pieces:
            try:
                sock.sendall(piece)
            except OSError:  # the server closed the connection after its answer
                break
            sent += len(piece)
            if answered_after is None and select.select([sock], [], [], 0)[0]:
                answered_after = sent
        seconds = time.perf_counter() - t0
        status_line = sock.makefile("rb").readline().decode()
    status = int(status_line.split()[1]) if status_line else 0
    return Sent(status, answered_after if answered_after is not None else sent, seconds)


def memory_kb(pid: int, field: str) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+) kB", status).group(1))


def run_case(workdir: Path, case: Case, run: int) -> tuple[list[Sent], float]:
    """A fresh app; ``case`` sent ``case.concurrent`` times at once; (answers, peak growth MB)."""
    db = workdir / f"case-{case.path.strip('/').replace('/', '-')}-{case.size}-{run}.duckdb"
    store = open_store(db)
    with store.transaction() as conn:
        tokens = {role: create_token(conn, f"bench-{role}", role) for role in Role}
    store.close()
    server = Server(db, workdir / f"{db.stem}.log", settings={"FORGETMAP_WARM_START": "0"})
    try:
        pid = server.proc.pid
        time.sleep(0.5)  # the app settles after its first answer
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
        before = memory_kb(pid, "VmRSS")
        token = tokens[case.role] if case.role else None
        answers: list[Sent] = []

        def send() -> None:
            answers.append(post(server.port, case, token))

        threads = [threading.Thread(target=send) for _ in range(case.concurrent)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(0.5)  # what the app does after its answer counts too
        growth = (memory_kb(pid, "VmHWM") - before) / 1024
    finally:
        server.stop()
        for path in workdir.glob(f"{db.stem}*"):
            path.unlink() if path.is_file() else None
    return answers, growth


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=300, help="each unauthenticated body, MB")
    parser.add_argument("--concurrent", type=int, default=4, help="unauthenticated bodies at once")
    parser.add_argument("--token-mb", type=int, default=100, help="the worker's body, MB")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    cases = [
        Case("normal: POST /api/pairs, submit token", "/api/pairs", Role.submit, len(SMALL)),
        Case(f"{args.mb} MB to /api/results, no token", "/api/results", None, args.mb * MB),
        Case(
            f"{args.concurrent} x {args.mb} MB at once, no token",
            "/api/results",
            None,
            args.mb * MB,
            args.concurrent,
        ),
        Case(
            f"{args.token_mb} MB to /api/results, worker token",
            "/api/results",
            Role.worker,
            args.token_mb * MB,
        ),
    ]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="fm-hostile-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"{args.runs} run(s) per case, a fresh app each; medians", flush=True)
    print(
        "| case | answer | answered after (MB sent) | whole body sent (s) "
        "| app peak RSS growth (MB) |"
    )
    print("|---|---|---:|---:|---:|")
    for case in cases:
        runs = [run_case(workdir, case, i) for i in range(args.runs)]
        statuses = sorted({a.status for answers, _ in runs for a in answers})
        after = statistics.median(a.answered_after / MB for answers, _ in runs for a in answers)
        seconds = statistics.median(max(a.seconds for a in answers) for answers, _ in runs)
        growth = statistics.median(g for _, g in runs)
        print(
            f"| {case.name} | {'/'.join(map(str, statuses))} | {after:.2f} | {seconds:.2f} "
            f"| {growth:.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
