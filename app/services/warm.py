"""What the first visitor asks for, computed as the app starts: the default map (the front page)
and the atlas's ranking. The read cache keeps them until the first write a page can show, so the
first request after a restart is a cache hit instead of a cold compute (at 500 pairs x 20,000
questions: the map 97 ms, the atlas 190 ms; docs/performance.md, "The atlas")."""

from __future__ import annotations

import logging
import time

from forgetmap.services.atlas import AtlasQuery, ranking
from forgetmap.services.map import MapQuery
from forgetmap.services.map_cache import MapCache

log = logging.getLogger("forgetmap.warm")


def warm_start(cache: MapCache) -> float | None:
    """Compute the default map and atlas into ``cache``; the seconds it took, or None when it
    failed (logged: a cold first request then computes them, as without a warm start)."""
    started = time.perf_counter()
    try:
        cache.records(MapQuery())
        ranking(cache, AtlasQuery())
    except Exception:  # the app serves either way: a failure here only costs the first visitor
        log.warning("computing the map at start failed; the first request will", exc_info=True)
        return None
    return time.perf_counter() - started
