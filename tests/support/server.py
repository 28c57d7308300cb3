"""A real `forgetmap serve` process on a free port."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`forgetmap --db DB serve` until ``stop()``; its output goes to ``log`` (a pipe nobody
    read would stall a server that answers many requests)."""

    def __init__(self, db: Path, *, env: dict | None = None):
        self.db = db
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = db.with_name(db.name + f".serve-{self.port}.log")
        exe = Path(sys.executable).parent / "forgetmap"
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [str(exe), "--db", str(db), "serve", "--port", str(self.port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
                env=env,
            )
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen(self.url + "/healthz", timeout=1)
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited: {self.output()}") from None
                time.sleep(0.1)
        raise RuntimeError("server did not start in 60 s")

    def output(self) -> str:
        return self.log.read_text()

    def stop(self) -> str:
        """SIGTERM, as Ctrl-C or a service manager ends it; what it printed."""
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        return self.output()

    def kill(self) -> None:
        """SIGKILL: no shutdown runs."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=20)
