"""A real `forgetmap serve` process on a free port."""

from __future__ import annotations

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
    def __init__(self, db: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        exe = Path(sys.executable).parent / "forgetmap"
        self.proc = subprocess.Popen(
            [str(exe), "--db", str(db), "serve", "--port", str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen(self.url + "/healthz", timeout=1)
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited: {self.proc.stdout.read()}") from None
                time.sleep(0.2)
        raise RuntimeError("server did not start in 60 s")

    def stop(self) -> str:
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=20)
        return out
