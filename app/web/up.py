"""Serving the app: `forgetmap serve`, and `forgetmap up` (the app and one local worker, one
command, no Redis needed).

The app listens on a socket bound before it starts, so that it knows the URL it is reached at
(port 0 picks a free port) and publishes it in the owner file (forgetmap.runtime.owner) when given
the command line. `up`'s worker runs in its own process (it loads the inference engine) and talks to
the app over HTTP with a token made for it at start; the queue is the embedded filesystem broker
under the data folder unless FORGETMAP_BROKER_URL names one. Ctrl-C stops both.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import click
from forgetmap.core.errors import InputError
from forgetmap.db import open_store
from forgetmap.runtime.broker import BrokerSettings
from forgetmap.runtime.config import WebSettings
from forgetmap.runtime.owner import listening_socket
from forgetmap.services.tokens import Role, create_token, revoke_token
from forgetmap.web import create_app
from forgetmap.web.cli import AppCommandLine

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


def serve(db_path: Path, host: str, port: int, *, commands: click.Group | None = None) -> None:
    """Serve the app on (host, port); given the ``forgetmap`` group, it publishes itself in the
    owner file and runs the CLI's commands on its database while it serves."""
    sock, url = bind(host, port)
    app = create_app(
        db_path, command_line=AppCommandLine(commands, url) if commands is not None else None
    )
    print(f"forgetmap serves {db_path} at {url} (Ctrl-C stops it)", flush=True)
    run_server(app, sock, "info")


def bind(host: str, port: int):
    """The listening socket and its URL; an InputError when (host, port) cannot be bound."""
    try:
        return listening_socket(host, port)
    except OSError as exc:  # the port is taken, the host unknown
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def run_server(app, sock, log_level: str) -> None:
    """uvicorn on the bound socket until Ctrl-C or SIGTERM (the app's shutdown runs either way)."""
    import uvicorn

    uvicorn.Server(uvicorn.Config(app, log_level=log_level)).run(sockets=[sock])


def up_environment(data_dir: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with `forgetmap up`'s defaults where it sets none: the queue, the model roots
    and the benchmark folders beside the database (the two folders made here)."""
    out = dict(environ)
    out.setdefault("FORGETMAP_DATA_DIR", str(data_dir))
    for variable, folder in (
        ("FORGETMAP_MODEL_ROOTS", "models"),
        ("FORGETMAP_BENCHMARK_DIRS", "benchmarks"),
    ):
        if not out.get(variable):
            (data_dir / folder).mkdir(parents=True, exist_ok=True)
            out[variable] = str(data_dir / folder)
    return out


def run_up(
    db_path: Path,
    host: str,
    port: int,
    *,
    on_started=None,
    watch_args: list[str] | None = None,
    commands: click.Group | None = None,
    settings: Mapping[str, str] | None = None,
) -> None:
    """Serve the app with a local worker; ``on_started(app)`` runs in a thread once it serves.
    ``watch_args``: the arguments of a `forgetmap watch` to run beside them; ``commands``: the
    ``forgetmap`` group, for the app to run the CLI's commands (as ``serve``); ``settings``:
    variables that stand in for this process's own (``FORGETMAP_*``: read by the app, and given
    to the worker and the watcher with ``up_environment``'s defaults)."""
    import threading

    db_path = Path(db_path)
    sock, url = bind(host, port)
    data_dir = db_path.resolve().parent
    environ = up_environment(data_dir, {**os.environ, **(settings or {})})
    token = local_worker_token(db_path)
    env = {**environ, "FORGETMAP_APP_URL": url, "FORGETMAP_API_TOKEN": token}
    watcher_token = local_token(db_path, LOCAL_WATCHER, "submit") if watch_args else None
    # the app (its settings read, its database opened) before any process is started: a
    # setting that does not parse stops `up` here, with no worker left running behind it
    app = create_app(
        db_path,
        broker=BrokerSettings.from_env(data_dir, environ),
        settings=WebSettings.from_env(data_dir, environ),
        command_line=AppCommandLine(commands, url) if commands is not None else None,
    )
    worker = subprocess.Popen(
        [sys.executable, "-m", "forgetmap.cli", "worker"], env=env, start_new_session=True
    )
    print(
        f"forgetmap is up: {url}  (local worker pid {worker.pid}, queue: "
        f"{environ.get('FORGETMAP_BROKER_URL') or 'embedded, ' + str(data_dir / 'broker')})\n"
        f"local checkpoints go under {environ['FORGETMAP_MODEL_ROOTS']}, local benchmarks under "
        f"{environ['FORGETMAP_BENCHMARK_DIRS']}; "
        "log in with a token from `forgetmap token create NAME`",
        flush=True,
    )
    watcher = None
    if watch_args:  # the watcher submits checkpoints: a submit token of its own
        watcher = subprocess.Popen(
            [sys.executable, "-m", "forgetmap.cli", "watch", *watch_args],
            env={**env, "FORGETMAP_API_TOKEN": watcher_token},
            start_new_session=True,
        )
    if on_started is not None:
        threading.Thread(
            target=on_started, args=(app,), name="forgetmap-up-monitor", daemon=True
        ).start()
    try:
        run_server(app, sock, "warning" if on_started else "info")
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
