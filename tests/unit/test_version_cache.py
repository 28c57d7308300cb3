"""The read cache: one compute per key and version, keys computed side by side, nothing kept
from a compute that a write overtook."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from forgetmap.services.cache import VersionCache


def test_a_value_is_computed_once_per_version():
    store = SimpleNamespace(page_version=0)
    cache, calls = VersionCache(store), []
    assert cache.get("k", lambda: calls.append(1) or len(calls)) == 1
    assert cache.get("k", lambda: calls.append(1) or len(calls)) == 1
    store.page_version += 1  # a write
    assert cache.get("k", lambda: calls.append(1) or len(calls)) == 2


def test_a_burst_of_identical_requests_computes_once():
    cache, calls = VersionCache(SimpleNamespace(page_version=0)), []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return "v"

    threads = [threading.Thread(target=cache.get, args=("k", slow)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1


def test_different_keys_compute_side_by_side():
    """Each compute waits for the other to start: one lock for every key would never let the
    second start (the barrier breaks)."""
    cache = VersionCache(SimpleNamespace(page_version=0))
    both = threading.Barrier(2, timeout=5)
    got = {}

    def fetch(key):
        got[key] = cache.get(key, lambda: both.wait() >= 0 and key)

    threads = [threading.Thread(target=fetch, args=(k,)) for k in ("map", "pair")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {"map": "map", "pair": "pair"}


def test_a_compute_overtaken_by_a_write_is_not_kept():
    store = SimpleNamespace(page_version=0)
    cache = VersionCache(store)

    def while_a_write_lands():
        store.page_version += 1
        return "old"

    assert cache.get("k", while_a_write_lands) == "old"
    assert cache.get("k", lambda: "new") == "new"


def test_a_compute_may_read_other_keys():
    cache = VersionCache(SimpleNamespace(page_version=0))
    assert cache.get("page", lambda: cache.get("records", lambda: 3) + 1) == 4
