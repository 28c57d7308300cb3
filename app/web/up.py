"""`forgetmap up`: the app and one local worker, one command, no Redis needed.

The worker runs in its own process (it loads the inference engine) and talks to the app over
HTTP with a token made for it at start; the queue is the embedded filesystem broker under the
data folder unless FORGETMAP_BROKER_URL names one. Ctrl-C stops both.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

from app.core.errors import InputError
from app.db import open_store
from app.services.tokens import Role, create_token, revoke_token
from app.web import create_app

log = logging.getLogger("forgetmap.up")
LOCAL_WORKER = "local-worker"
LOCAL_WATCHER = "local-watcher"


def local_token(db_path: Path, name: str, role: str) -> str:
    """A fresh token of ``role`` for one of this run's processes (the previous one is revoked)."""
    store = open_store(db_path)
    try:
        with store.transaction() as conn:
            try:
                revoke_token(conn, name)
            except InputError:
                pass
            return create_token(conn, name, Role(role))
    finally:
        store.close()


def local_worker_token(db_path: Path) -> str:
    """A fresh ``worker`` token for this run's worker: it may run shards, nothing else."""
    return local_token(db_path, LOCAL_WORKER, "worker")


def run_up(
    db_path: Path, host: str, port: int, *, on_started=None, watch_args: list[str] | None = None
) -> None:
    """Serve the app with a local worker; ``on_started(app)`` runs in a thread once it serves.
    ``watch_args``: the arguments of a `forgetmap watch` to run beside them."""
    import threading

    import uvicorn

    db_path = Path(db_path)
    data_dir = db_path.resolve().parent
    os.environ.setdefault("FORGETMAP_DATA_DIR", str(data_dir))
    if not os.environ.get("FORGETMAP_MODEL_ROOTS"):
        roots = data_dir / "models"
        roots.mkdir(parents=True, exist_ok=True)
        os.environ["FORGETMAP_MODEL_ROOTS"] = str(roots)
    if not os.environ.get("FORGETMAP_BENCHMARK_DIRS"):
        bench = data_dir / "benchmarks"
        bench.mkdir(parents=True, exist_ok=True)
        os.environ["FORGETMAP_BENCHMARK_DIRS"] = str(bench)
    token = local_worker_token(db_path)
    env = {
        **os.environ,
        "FORGETMAP_APP_URL": f"http://127.0.0.1:{port}",
        "FORGETMAP_API_TOKEN": token,
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "worker"], env=env, start_new_session=True
    )
    print(
        f"forgetmap is up: http://{host}:{port}  (local worker pid {worker.pid}, queue: "
        f"{os.environ.get('FORGETMAP_BROKER_URL') or 'embedded, ' + str(data_dir / 'broker')})\n"
        f"local checkpoints go under {os.environ['FORGETMAP_MODEL_ROOTS']}, local benchmarks under "
        f"{os.environ['FORGETMAP_BENCHMARK_DIRS']}; log in with a token from `forgetmap token create NAME`",
        flush=True,
    )
    watcher = None
    if watch_args:  # the watcher submits checkpoints: a submit token of its own
        watcher_env = {**env, "FORGETMAP_API_TOKEN": local_token(db_path, LOCAL_WATCHER, "submit")}
        watcher = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "watch", *watch_args],
            env=watcher_env,
            start_new_session=True,
        )
    app = create_app(db_path)
    if on_started is not None:
        threading.Thread(
            target=on_started, args=(app,), name="forgetmap-up-monitor", daemon=True
        ).start()
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning" if on_started else "info")
    finally:
        stop_worker(worker)
        if watcher is not None:
            stop_worker(watcher)


def stop_worker(worker: subprocess.Popen) -> None:
    if worker.poll() is not None:
        return
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
