"""A series' results as a tracker takes them (app/contract/series.py): the records of
`forgetmap series show` (one implementation of the numbers: ``series_records``) with their 95%
margins, the exact flip counts of each (step, category) and the flipped samples themselves.

``series_export`` builds it on the store (the app's route, or the CLI on the file);
``fetch_series_export`` asks a running app for it (``GET /api/series/{id}/export``), for a
command that writes to a tracker on the user's machine while the app owns the database.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, cast

import httpx
from forgetmap.contract.errors import reply_detail
from forgetmap.contract.series import MAX_FLIPS, TEXT_LIMIT, SeriesExport, SeriesFlip, SeriesResult
from forgetmap.core import metrics
from forgetmap.core.errors import InputError
from forgetmap.core.vocabularies import Aggregate
from forgetmap.db import series_export as export_db
from forgetmap.db.store import Store
from forgetmap.services.map_cache import MapCache
from forgetmap.services.series import find_series, series_records


def series_export(
    source: MapCache | Store,
    series: dict | str,
    *,
    aggregate: str = "macro",
    steps: Collection[int] | None = None,
    max_flips: int = MAX_FLIPS,
    text_limit: int = TEXT_LIMIT,
) -> SeriesExport:
    """The export of ``series`` (as ``find_series`` gives it, or its name) for ``steps`` (None:
    all). A step of the series not scored yet has no results; a step the series lacks is an
    InputError. ``max_flips``: flip rows kept per step (forgotten ones first)."""
    cache = source if isinstance(source, MapCache) else MapCache(source)
    if isinstance(series, str):
        found = find_series(cache.store, name=series)
        if found is None:
            raise InputError(f"no series named {series!r} (see `forgetmap series list`)")
        series = found
    if aggregate not in metrics.AGGREGATES:
        raise InputError(f"aggregate must be one of {', '.join(metrics.AGGREGATES)}")
    if max_flips < 0 or text_limit < 2:
        raise InputError("max_flips must be >= 0 and text_limit >= 2")
    wanted = _checked_steps(series, steps)
    records = [
        r for r in series_records(cache, series, aggregate) if wanted is None or r["step"] in wanted
    ]
    with cache.store.read() as conn:
        counts = export_db.flip_counts(conn, series["id"], wanted)
        flips, cut_steps = export_db.flip_rows(
            conn, series, wanted, max_flips=max_flips, text_limit=text_limit
        )
    by_cell = _with_totals(counts)
    results = []
    for r in records:
        forgotten, learned, n = by_cell.get((r["step"], r["category"]), (0, 0, 0))
        results.append(
            SeriesResult(
                step=r["step"],
                post=r["post"],
                category=r["category"],
                f_true=r["f_true"],
                f_true_margin=metrics.t_margin(r["f_true_std"], r["seeds"]),
                bt_true=r["bt_true"],
                bt_true_margin=metrics.t_margin(r["bt_true_std"], r["seeds"]),
                noise_floor=r["noise_floor"],
                seeds=r["seeds"],
                forgotten=forgotten,
                learned=learned,
                n=n,
            )
        )
    return SeriesExport(
        series=series["name"],
        base=series["base"],
        aggregate=cast(Aggregate, aggregate),  # one of them: checked above
        steps=sorted({r.step for r in results}),
        results=results,
        flips=[SeriesFlip(**f) for f in flips],
        max_flips=max_flips,
        text_limit=text_limit,
        flips_truncated=bool(cut_steps),
    )


def _checked_steps(series: dict, steps: Collection[int] | None) -> list[int] | None:
    if steps is None:
        return None
    known = {c["step"] for c in series["checkpoints"]}
    unknown = sorted(set(steps) - known)
    if unknown:
        listed = ", ".join(map(str, sorted(known))) or "none yet"
        raise InputError(
            f"series {series['name']!r} has no step {', '.join(map(str, unknown))} "
            f"(its steps: {listed})"
        )
    return sorted(set(steps))


def _with_totals(counts: list[dict]) -> dict[tuple[int, str], tuple[int, int, int]]:
    """(step, category) -> (forgotten, learned, n), plus each step's "Total": the sum over the
    categories that count towards it (metrics.OUTSIDE_TOTAL stay out, as in the map's Total)."""
    out: dict[tuple[int, str], tuple[int, int, int]] = {}
    for c in counts:
        cell = (c["forgotten"], c["learned"], c["n"])
        out[(c["step"], c["category"])] = cell
        if c["category"] not in metrics.OUTSIDE_TOTAL:
            total = out.get((c["step"], metrics.TOTAL), (0, 0, 0))
            out[(c["step"], metrics.TOTAL)] = tuple(a + b for a, b in zip(total, cell, strict=True))
    return out


TIMEOUT_SECONDS = 300.0  # an export of a long run with many flips takes a while to build


def fetch_series_export(
    url: str,
    credential: str,
    name: str,
    *,
    aggregate: str = "macro",
    steps: Collection[int] | None = None,
    max_flips: int = MAX_FLIPS,
) -> SeriesExport:
    """Series ``name``'s export from the app at ``url`` (``GET /api/series?name=`` for its id,
    then ``GET /api/series/{id}/export``), with ``credential`` (a token, or the local
    credential of the app that owns the database). An unknown series, a refusal or an app out
    of reach is an InputError in one line."""
    headers = {"Authorization": f"Bearer {credential}"}
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=TIMEOUT_SECONDS) as http:
            found = _answer(http.get("/api/series", params={"name": name}), url)
            if not found:
                raise InputError(f"no series named {name!r} (see `forgetmap series list`)")
            params: dict[str, Any] = {"aggregate": aggregate, "max_flips": max_flips}
            if steps is not None:
                params["steps"] = sorted(steps)
            reply = http.get(f"/api/series/{found[0]['id']}/export", params=params)
            return SeriesExport.model_validate_json(_answer(reply, url, parsed=False))
    except httpx.TransportError as exc:
        raise InputError(f"cannot reach the app at {url}: {exc}") from None


def _answer(reply: httpx.Response, url: str, *, parsed: bool = True):
    if reply.status_code != 200:
        detail = reply_detail(reply) or reply.text[:200]
        raise InputError(f"the app at {url} refused ({reply.status_code}): {detail}")
    return reply.json() if parsed else reply.content
