"""Workers the app refused, remembered so a job page can say why its shards do not move.

A worker whose token the app refuses (401: unknown or revoked; 403: a role other than worker)
stops and puts its shard back on the queue; from outside, its jobs just stay queued. Each refused
call to a worker route is recorded here with a name the app gives it (forgetmap.web.deps: its valid
token's name, never the ``X-Forgetmap-Worker`` header a refused caller sends; cut to MAX_NAME
characters and escaped wherever shown), the time and the app's reason.
Memory only, bounded: the newest refusal per name for the last MAX_WORKERS names. A worker call the
app accepts after a refusal means some worker runs shards again, so the refusal no longer explains
a wait; no accepted call at all since the app started means no worker may be running.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

MAX_WORKERS = 100
MAX_NAME = 200
MAX_REASON = 500
RECENT_SECONDS = 600  # an older refusal no longer explains a wait
UNNAMED = "(unnamed)"


@dataclass(frozen=True)
class Rejection:
    worker: str
    reason: str
    at: float  # seconds since the epoch


def _one_line(text: str, limit: int) -> str:
    return " ".join(text.split())[:limit]


class RejectionLog:
    """The newest refusal per worker name, and when the app last accepted a worker's call."""

    def __init__(self, max_workers: int = MAX_WORKERS):
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, not {max_workers}")
        self.max_workers = max_workers
        self._rejections: OrderedDict[str, Rejection] = OrderedDict()  # oldest first
        self._accepted_at = float("-inf")
        self._lock = threading.Lock()
        self.started_at = time.time()
        """When the log began: the app's start (forgetmap.web makes it then)."""

    def refused(self, worker: str | None, reason: str, at: float | None = None) -> Rejection:
        """Record that the app refused a call of ``worker`` (its header; None: not sent)."""
        name = _one_line(worker or "", MAX_NAME) or UNNAMED
        rejection = Rejection(
            name, _one_line(reason, MAX_REASON), time.time() if at is None else at
        )
        with self._lock:
            self._rejections.pop(name, None)
            self._rejections[name] = rejection
            while len(self._rejections) > self.max_workers:
                self._rejections.popitem(last=False)
        return rejection

    def accepted(self, at: float | None = None) -> None:
        """Record that the app accepted a worker's call (any worker)."""
        at = time.time() if at is None else at
        with self._lock:
            self._accepted_at = max(self._accepted_at, at)

    @property
    def accepted_at(self) -> float | None:
        """When the app last accepted a worker's call; None: no worker has called since the
        start."""
        with self._lock:
            return None if self._accepted_at == float("-inf") else self._accepted_at

    def blocking(self, now: float | None = None) -> Rejection | None:
        """The newest refusal of the last RECENT_SECONDS, unless a worker's call was accepted
        since: then shards run again and the refusal explains no wait."""
        now = time.time() if now is None else now
        with self._lock:
            newest = next(reversed(self._rejections.values()), None)
            accepted_at = self._accepted_at
        if newest is None or newest.at < now - RECENT_SECONDS or newest.at <= accepted_at:
            return None
        return newest

    def __len__(self) -> int:
        """How many names have a refusal on record (at most ``max_workers``)."""
        with self._lock:
            return len(self._rejections)
