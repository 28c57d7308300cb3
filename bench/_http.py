"""The web benchmark's HTTP side (bench/web.py): the `forgetmap serve` subprocess, keep-alive
clients, and the sequential and concurrent measurements of one endpoint."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench._data import now

FORGETMAP = str(Path(sys.executable).parent / "forgetmap")
HOST = "127.0.0.1"

Request = tuple[str, dict[str, str]]  # path, headers


@dataclass
class Endpoint:
    name: str
    describe: str
    make: Callable[[int], Request]  # i-th request -> (path, headers)
    goal_ms: float | None  # None: baseline or extra
    extra: bool = False
    seq: list[float] = field(default_factory=list)
    first: float | None = None
    size: int = 0
    load: dict | None = None
    paced: dict | None = None
    inproc: float | None = None


# --------------------------------------------------------------------------------- HTTP client


class Conn:
    """One keep-alive HTTP/1.1 connection (http.client: the lightest client in the stdlib)."""

    def __init__(self, port: int):
        self.port = port
        self.c = http.client.HTTPConnection(HOST, port, timeout=120)

    def request(
        self, method: str, path: str, headers: dict | None = None, body: bytes | None = None
    ) -> tuple[int, bytes, float]:
        for attempt in range(2):
            t0 = time.perf_counter()
            try:
                self.c.request(method, path, body=body, headers=headers or {})
                r = self.c.getresponse()
                data = r.read()
                return r.status, data, time.perf_counter() - t0
            except (http.client.HTTPException, ConnectionError):
                # the server closed an idle keep-alive connection: reconnect once
                self.c.close()
                self.c = http.client.HTTPConnection(HOST, self.port, timeout=120)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def get(self, req: Request) -> tuple[int, bytes, float]:
        return self.request("GET", req[0], req[1])

    def close(self) -> None:
        self.c.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Server:
    """`forgetmap --db DB serve --port P` as a subprocess, log to a file."""

    def __init__(self, db: Path, log_path: Path, *, settings: dict[str, str] | None = None):
        """``settings``: FORGETMAP_* variables for the app (the caller's own are left out)."""
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.workdir = db.parent
        env = {k: v for k, v in os.environ.items() if not k.startswith("FORGETMAP_")}
        env.update(settings or {})
        self.log = log_path.open("w")
        t0 = now()
        self.proc = subprocess.Popen(
            [FORGETMAP, "--db", str(db), "serve", "--host", HOST, "--port", str(self.port)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=db.parent,
        )
        deadline = time.time() + 120
        while True:
            try:
                conn = Conn(self.port)
                status, _, _ = conn.get(("/healthz", {}))
                conn.close()
                if status == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {log_path.read_text()[-3000:]}")
            if time.time() > deadline:
                raise RuntimeError("server did not answer /healthz in 120 s")
            time.sleep(0.1)
        self.start_s = now() - t0

    def cpu_seconds(self) -> float:
        """user + system CPU time of the server process so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# ----------------------------------------------------------------------------- measurements


def sequential(port: int, ep: Endpoint, n: int, budget_s: float) -> None:
    conn = Conn(port)
    start = now()
    try:
        for i in range(n):
            status, body, dt = conn.get(ep.make(i))
            if status != 200:
                raise RuntimeError(f"{ep.name}: HTTP {status}: {body[:300]!r}")
            ep.seq.append(dt)
            ep.size = len(body)
            if i >= 4 and now() - start > budget_s:
                break
    finally:
        conn.close()


def under_load(
    server: Server, ep: Endpoint, clients: int, duration: float, think: float = 0.0
) -> dict:
    """clients threads request ep in a loop for duration seconds; with think > 0 each waits an
    exponential think time (mean think seconds) between its requests, as people do."""
    lat: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    barrier = threading.Barrier(clients + 1)
    stop_at = [0.0]
    done_at = [0.0] * clients

    def client(ci: int) -> None:
        rng = np.random.default_rng(ci)
        conn = Conn(server.port)
        conn.get(("/healthz", {}))  # open the connection before the clock starts
        barrier.wait()
        if think:
            time.sleep(rng.uniform(0, think))  # users do not start in step
        i = ci
        while time.perf_counter() < stop_at[0]:
            try:
                status, _, dt = conn.get(ep.make(i))
            except (OSError, http.client.HTTPException):
                errors[ci] += 1
                continue
            if status == 200:
                lat[ci].append(dt)
            else:
                errors[ci] += 1
            i += clients
            if think:
                time.sleep(min(rng.exponential(think), max(0.0, stop_at[0] - time.perf_counter())))
        done_at[ci] = time.perf_counter()
        conn.close()

    threads = [threading.Thread(target=client, args=(ci,), daemon=True) for ci in range(clients)]
    for t in threads:
        t.start()
    cpu0 = server.cpu_seconds()
    stop_at[0] = time.perf_counter() + duration
    t0 = time.perf_counter()
    barrier.wait()
    for t in threads:
        t.join()
    elapsed = max(done_at) - t0
    cpu = server.cpu_seconds() - cpu0
    flat = np.array([x for per in lat for x in per])
    if len(flat) == 0:
        return {"n": 0, "errors": sum(errors)}
    return {
        "n": len(flat),
        "errors": sum(errors),
        "median": float(np.median(flat)),
        "p95": float(np.percentile(flat, 95)),
        "max": float(flat.max()),
        "rps": len(flat) / elapsed,
        "cpu_per_req": cpu / len(flat),
        "cpu_share": cpu / elapsed,  # cores the server used on average
    }
