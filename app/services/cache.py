"""Results cached until the next write: this process is the database's only writer, so a value
computed at store version v stays right until the version moves."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

MAX_ENTRIES = 512


class VersionCache:
    def __init__(self, store):
        self.store = store
        self._version = -1
        self._entries: dict[Hashable, Any] = {}
        # one lock: a burst of identical requests after a write computes the value once
        self._lock = threading.RLock()  # computes may read other cached values

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if self._version != self.store.version:
                self._entries.clear()
                self._version = self.store.version
            if key not in self._entries:
                if len(self._entries) >= MAX_ENTRIES:
                    self._entries.pop(next(iter(self._entries)))
                self._entries[key] = compute()
            return self._entries[key]
