"""Results cached until the next write a page can show: this process is the database's only
writer, so a value computed at the store's page version v stays right until that version moves
(``Store.page_version``: a shard's bookkeeping and results of models no pair holds leave it)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forgetmap.db.store import Store

MAX_ENTRIES = 512


class VersionCache:
    """Values per key, dropped together when the store's page version moves.

    Each key computes under a lock of its own: a burst of identical requests after a write
    computes the value once, while requests for other keys (the map, a pair page, a drill-down)
    compute side by side instead of queueing behind one lock (under load, every page kind waited
    for every other's recompute after each write). A value computed while a write landed is kept
    for the version it started at, which the next call drops.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._version = -1
        self._entries: dict[Hashable, Any] = {}
        self._computing: dict[Hashable, threading.RLock] = {}  # computes may read other keys
        self._lock = threading.Lock()  # guards the two dicts and the version, never a compute

    def _current(self, key: Hashable) -> tuple[int, bool, Any]:
        """(version, found, value) under the dicts' lock, dropping entries of an older version."""
        with self._lock:
            version = self.store.page_version
            if self._version != version:
                self._entries.clear()
                self._computing.clear()
                self._version = version
            if key in self._entries:
                return version, True, self._entries[key]
            return version, False, None

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        version, found, value = self._current(key)
        if found:
            return value
        with self._lock:
            lock = self._computing.setdefault(key, threading.RLock())
        with lock:
            version, found, value = self._current(key)  # another request may have computed it
            if found:
                return value
            value = compute()
            with self._lock:
                if self._version == version:
                    if len(self._entries) >= MAX_ENTRIES:
                        self._entries.pop(next(iter(self._entries)))
                    self._entries[key] = value
            return value
