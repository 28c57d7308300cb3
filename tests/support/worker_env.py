"""A real deployment in miniature: `forgetmap serve`, a Redis broker, `forgetmap worker` processes.

Used by the worker and fault tests. Each environment gets its own Redis queue name so tests do not
see each other's tasks; workers run in their own process groups so a test can SIGKILL one.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

from tests.support.server import Server
from tests.support.services import service_missing

REDIS_URL = os.environ.get("FORGETMAP_TEST_REDIS", "redis://127.0.0.1:6379/15")
FORGETMAP = str(Path(sys.executable).parent / "forgetmap")


def require_redis() -> None:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001 - any failure means no broker
        service_missing(f"Redis not reachable at {REDIS_URL}: {exc}")


def write_toy_benchmark(path: Path, n: int, *, generative: int = 0) -> Path:
    """A local JSONL benchmark: n four-option questions (+ a few numeric ones)."""
    lines = []
    for i in range(n):
        options = [f"red {i}", f"blue {i}", f"green {i}", f"white {i}"]
        lines.append(
            {
                "id": f"q{i:03d}",
                "question": f"Which colour is item {i}?",
                "choices": options,
                "answer": "ABCD"[i % 4],
                "category": "Knowledge/QA",
            }
        )
    for i in range(generative):
        lines.append(
            {
                "id": f"g{i:03d}",
                "question": f"What is {i} plus {i}?",
                "answer": str(2 * i),
                "category": "Math",
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


class Deployment:
    def __init__(
        self,
        root: Path,
        *,
        visibility_timeout: int = 3600,
        upload_batch: int = 8,
        redis_url: str = REDIS_URL,
        extra_env: dict | None = None,
    ):
        self.root = root
        self.db = root / "fm.duckdb"
        self.models = root / "models"
        self.benchmarks = root / "benchmarks"
        self.queue = f"fm-test-{uuid.uuid4().hex[:8]}"
        self.redis_url = redis_url
        # the app checks model paths against its roots too: the same folder as the workers'
        env = {
            "FORGETMAP_BROKER_URL": redis_url,
            "FORGETMAP_QUEUE": self.queue,
            "FORGETMAP_VISIBILITY_TIMEOUT": str(visibility_timeout),
            "FORGETMAP_MODEL_ROOTS": str(self.models),
            **(extra_env or {}),
        }
        self.env = {**os.environ, **env}
        subprocess.run([FORGETMAP, "--db", str(self.db), "map"], check=True, capture_output=True)
        # the workers' token may only run shards; jobs are submitted with a submit token
        self.token = self._token("worker", "worker")
        self.submit_token = self._token("submitter", "submit")
        os.environ.update(env)  # the server reads the broker settings from its environment
        try:
            self.server = Server(self.db)
        finally:
            for key in env:
                os.environ.pop(key, None)
        self.url = self.server.url
        self.worker_env = {
            **self.env,
            "FORGETMAP_APP_URL": self.url,
            "FORGETMAP_API_TOKEN": self.token,
            "FORGETMAP_MODEL_ROOTS": str(self.models),
            "FORGETMAP_BENCHMARK_DIRS": str(self.benchmarks),
            "FORGETMAP_UPLOAD_BATCH": str(upload_batch),
            "OMP_NUM_THREADS": "1",
            "FORGETMAP_TORCH_THREADS": "1",
        }
        self.workers: list[subprocess.Popen] = []
        self.http = httpx.Client(
            base_url=self.url, timeout=60, headers={"Authorization": f"Bearer {self.submit_token}"}
        )

    def _token(self, name: str, role: str) -> str:
        command = [FORGETMAP, "--db", str(self.db), "token", "create", name, "--role", role]
        return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()

    def start_worker(self, log_name: str = "worker") -> subprocess.Popen:
        log = (self.root / f"{log_name}-{len(self.workers)}.log").open("w")
        proc = subprocess.Popen(
            [FORGETMAP, "worker"],
            env=self.worker_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.workers.append(proc)
        return proc

    def wait_ready(self, timeout: float = 120) -> None:
        """Until every started worker has connected to the broker (Celery logs 'ready.')."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            logs = sorted(self.root.glob("worker-*.log"))
            if len(logs) >= len(self.workers) and all("ready." in p.read_text() for p in logs):
                return
            time.sleep(0.3)
        raise AssertionError(f"workers not ready in {timeout}s: {self.logs()}")

    def kill(self, proc: subprocess.Popen) -> None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def submit(self, body: dict) -> int:
        response = self.http.post("/api/jobs", json=body)
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def job(self, job_id: int) -> dict:
        return self.http.get(f"/api/jobs/{job_id}").json()

    def wait(self, job_id: int, *, timeout: float = 600, until=None) -> dict:
        deadline = time.time() + timeout
        until = until or (lambda j: j["status"] in ("done", "failed", "cancelled"))
        while time.time() < deadline:
            job = self.job(job_id)
            if until(job):
                return job
            for proc in self.workers:
                if proc.poll() not in (None, -9):
                    raise AssertionError(f"worker exited with {proc.returncode}: {self.logs()}")
            time.sleep(0.5)
        raise AssertionError(
            f"job {job_id} not finished in {timeout}s: {json.dumps(self.job(job_id))[:3000]}\n"
            f"{self.logs()}"
        )

    def wait_handled(self, messages: int, *, timeout: float) -> None:
        """Until the workers have finished ``messages`` task messages, run or refused (Celery
        logs "Task ...[id] succeeded" or "raised" at INFO, `forgetmap worker`'s default)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            text = "\n".join(p.read_text() for p in self.root.glob("worker-*.log"))
            ended = set(re.findall(r"Task \S+\[([0-9a-f-]+)\] (?:succeeded|raised)", text))
            if len(ended) >= messages:
                return
            time.sleep(0.3)
        raise AssertionError(
            f"the workers did not handle {messages} messages in {timeout}s: {self.logs()}"
        )

    def logs(self) -> str:
        return "\n".join(p.read_text()[-3000:] for p in sorted(self.root.glob("worker-*.log")))

    def close(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.workers:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        self.http.close()
        self.server.stop()
        import redis

        try:
            r = redis.Redis.from_url(self.redis_url, socket_connect_timeout=2)
            for key in r.scan_iter(f"*{self.queue}*"):
                r.delete(key)
        except redis.ConnectionError:
            pass

    def results(self) -> list[tuple]:
        """(model, benchmark, seed, sample_id) of every stored row (reads the file after
        stopping)."""
        from forgetmap.db import open_store

        store = open_store(self.db, read_only=True)
        try:
            with store.read() as conn:
                return conn.execute(
                    "SELECT m.name, b.name, r.seed, r.sample_id FROM results r "
                    "JOIN models m ON m.id = r.model_id JOIN benchmarks b ON b.id = r.benchmark_id"
                ).fetchall()
        finally:
            store.close()
