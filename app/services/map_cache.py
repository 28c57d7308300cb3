"""The map kept per database: records, heatmap cells and encoded JSON per query, recomputed after
a write only for the pairs whose inputs changed (``MapCache``), and the one-shot map of a command's
process (``map_records``). The records themselves are built by ``forgetmap.services.map``."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from itertools import chain

import numpy as np
import orjson
from forgetmap.db import queries
from forgetmap.db.store import Store
from forgetmap.services import significance
from forgetmap.services.cache import VersionCache
from forgetmap.services.extractor_shift import extractor_shift, score_set_id
from forgetmap.services.map import (
    DERIVED,
    INTERVAL_FIELDS,
    MapQuery,
    benchmark_records,
    category_records_for,
    derived_metrics,
)


def pair_filter(pairs: list[dict], query: MapQuery) -> set[int]:
    """Ids of the pairs that pass the query's filters (pairs as from queries.list_pairs)."""
    keep = set()
    needle = (query.q or "").strip().lower()
    for p in pairs:
        if query.stage and (p["stage"] or "") != query.stage:
            continue
        if query.family and (p["family"] or "") != query.family:
            continue
        size = p["size_params"]
        if query.min_size is not None and (size is None or size < query.min_size):
            continue
        if query.max_size is not None and (size is None or size > query.max_size):
            continue
        text = " ".join(str(p[k] or "") for k in ("label", "base", "post")).lower()
        if needle and needle not in text:
            continue
        keep.add(p["id"])
    return keep


class MapCache:
    """Map records, heatmap cells and encoded JSON per (level, aggregate), kept until a write."""

    def __init__(self, store: Store, cache: VersionCache | None = None):
        self.store = store
        self.cache = cache or VersionCache(store)
        # per aggregate, {pair id: (fingerprint, category records)}: kept across writes, so the
        # first map after a write recomputes only the pairs whose inputs changed (a worker's upload
        # touches the pairs of one model), not all of them
        self._category_parts: dict[str, dict[int, tuple[int, list[dict]]]] = {}
        # the same for the benchmark level (its Benjamini-Hochberg family is set afresh each time)
        self._benchmark_parts: dict[int, tuple[int, list[dict]]] = {}

    def _all(self, query: MapQuery) -> list[dict]:
        if query.mask or query.scores:  # computed whole: the parts are of the usual map
            return self.cache.get(
                ("map", query.level, query.aggregate, query.mask, query.scores),
                lambda: _whole(self.store, query),
            )
        if query.level == "benchmark":
            return self.cache.get(("map", "benchmark"), self._benchmark)
        return self.cache.get(
            ("map", "category", query.aggregate), lambda: self._category(query.aggregate)
        )

    @staticmethod
    def _stale(parts: dict, prints: dict[int, int]) -> list[int]:
        """Pairs whose parts are missing or older than their fingerprint; drops deleted pairs."""
        for gone in set(parts) - set(prints):
            del parts[gone]
        return sorted(p for p, f in prints.items() if p not in parts or parts[p][0] != f)

    def _benchmark(self) -> list[dict]:
        """All benchmark-level records, recomputing only the pairs that changed; p_adjusted and
        significant over all of them (significance.refamily: one pair's write moves every p)."""
        parts = self._benchmark_parts
        with self.store.read() as conn:
            prints = queries.pair_fingerprints(conn)
        stale = self._stale(parts, prints)
        if stale:
            fresh: dict[int, list[dict]] = {p: [] for p in stale}
            subset = stale if len(stale) < len(prints) else None
            for r in benchmark_records(self.store, pair_ids=subset):
                fresh[r["pair_id"]].append(r)
            for p in stale:
                parts[p] = (prints[p], fresh[p])
        every = list(chain.from_iterable(parts[p][1] for p in sorted(prints)))
        return significance.refamily(every)

    def _category(self, aggregate: str) -> list[dict]:
        """Category records of every pair, recomputing only pairs whose fingerprint changed.
        (A write between reading the fingerprints and the counts leaves a stale fingerprint with
        newer records: the next call sees the new fingerprint and recomputes, so this is safe.)"""
        parts = self._category_parts.setdefault(aggregate, {})
        if not parts:
            return self._category_first(aggregate, parts)
        with self.store.read() as conn:
            prints = queries.pair_fingerprints(conn)
            stale = self._stale(parts, prints)
            if stale:
                fresh: dict[int, list[dict]] = {p: [] for p in stale}
                subset = stale if len(stale) < len(prints) else None
                for r in category_records_for(conn, subset, aggregate):
                    fresh[r["pair_id"]].append(r)
                for p in stale:
                    parts[p] = (prints[p], fresh[p])
        every = list(chain.from_iterable(parts[p][1] for p in sorted(prints)))
        return significance.refamily(every)

    def _category_first(self, aggregate: str, parts: dict) -> list[dict]:
        """Every pair's category records, with nothing kept yet: the fingerprints are read on
        another cursor while the records are computed (a fresh process's first map: 15 of its
        100 ms were the fingerprints' query). Both reads may see different commits, so the parts
        are kept only when no write committed from before the first read to after the last."""
        version = self.store.version
        with ThreadPoolExecutor(max_workers=1) as pool:
            prints_read = pool.submit(self._fingerprints)
            with self.store.read() as conn:
                records = category_records_for(conn, None, aggregate)
            prints = prints_read.result()
        if self.store.version == version:
            fresh: dict[int, list[dict]] = {p: [] for p in prints}
            for r in records:
                fresh[r["pair_id"]].append(r)
            parts.update((p, (f, fresh[p])) for p, f in prints.items())
        return records

    def _fingerprints(self) -> dict[int, int]:
        with self.store.read() as conn:
            return queries.pair_fingerprints(conn)

    @staticmethod
    def _filtered(query: MapQuery) -> bool:
        return any((query.stage, query.family, query.q, query.min_size, query.max_size))

    def records(self, query: MapQuery) -> list[dict]:
        records = self._all(query)
        if not self._filtered(query):
            return records
        keep = self.cache.get(("keep", query), lambda: pair_filter(self.pairs(), query))
        return significance.refamily([r for r in records if r["pair_id"] in keep])

    def pairs(self) -> list[dict]:
        def load() -> list[dict]:
            with self.store.read() as conn:
                return queries.list_pairs(conn)

        return self.cache.get(("pairs",), load)

    def cells(self, query: MapQuery) -> list[dict]:
        if self._filtered(query):
            return heatmap_cells(self.records(query), query.level)
        return self.cache.get(
            ("cells", query.level, query.aggregate, query.mask, query.scores),
            lambda: heatmap_cells(self._all(query), query.level),
        )

    def json(self, query: MapQuery) -> bytes:
        """The records as JSON bytes (encoding 9,000 records costs more than computing them)."""
        if self._filtered(query) or query.mask or query.scores:
            return orjson.dumps(self.records(query))
        return self.cache.get(
            ("json", query.level, query.aggregate), lambda: orjson.dumps(self._all(query))
        )

    def page_json(self, query: MapQuery, page: int, page_size: int) -> tuple[bytes, int]:
        """One page of the records, ``page_size`` pairs per page in pair id order, as JSON, and
        the number of pairs in all pages. A benchmark-level page computes only its own pairs."""

        def ids() -> list[int]:
            if self._filtered(query):
                return sorted(
                    self.cache.get(("keep", query), lambda: pair_filter(self.pairs(), query))
                )
            with self.store.read() as conn:
                return queries.pair_names(conn)["pair_id"].tolist()

        def encode() -> tuple[bytes, int]:
            every = ids()
            chosen = every[(page - 1) * page_size : page * page_size]
            if query.level == "benchmark" and not query.scores:
                records = benchmark_records(self.store, pair_ids=chosen, exclude=query.mask)
            else:
                keep = set(chosen)
                records = [r for r in self._all(query) if r["pair_id"] in keep]
            return orjson.dumps(records), len(every)

        return self.cache.get(("page", query, page, page_size), encode)


def map_records(store: Store, query: MapQuery) -> list[dict]:
    """The records of one map, computed once (a command's process keeps no cache: the category
    level skips the per-pair fingerprints that a long-lived ``MapCache`` compares)."""
    if query.level == "category" and not MapCache._filtered(query) and not query.scores:
        with store.read() as conn:
            return category_records_for(conn, None, query.aggregate, query.mask)
    return MapCache(store).records(query)


def _whole(store: Store, query: MapQuery) -> list[dict]:
    """Every pair's records with the samples of the query's excluded causes left out of every
    count, the paired intervals and the noise floors included, graded by its score set (each
    record then says how far F_true moved from the harness's grades: ``extractor_shift``)."""
    scores = score_set_id(store, query.scores) if query.scores else None

    def records(score_set: int | None) -> list[dict]:
        if query.level == "benchmark":
            return benchmark_records(store, exclude=query.mask, scores=score_set)
        with store.read() as conn:
            return category_records_for(conn, None, query.aggregate, query.mask, score_set)

    if scores is None or query.scores is None:
        return records(None)
    return extractor_shift(records(scores), records(None), query.level, query.scores)


def heatmap_cells(records: list[dict], level: str) -> list[dict]:
    """One cell per (pair, column) for the heatmap; benchmark-level seeds are averaged here."""
    if level == "category":
        return [
            {
                **{
                    k: r[k]
                    for k in (
                        "pair_id",
                        "f_true",
                        "f_true_std",
                        "bt_true",
                        "bt_true_std",
                        "f",
                        "bt",
                        "f_max",
                        "bt_max",
                        "noise_floor",
                        "n_benchmarks",
                        "seeds",
                        *DERIVED,
                        "n",
                        *INTERVAL_FIELDS,
                        "full_size",
                        "partial",
                    )
                },
                "column": r["category"],
                **{k: r[k] for k in significance.SIGNIFICANCE_FIELDS},
                **{k: r[k] for k in CELL_SHIFT if k in r},
            }
            for r in records
        ]
    if not records:
        return []
    keys = [(r["pair_id"], r["benchmark"]) for r in records]
    uniq = list(dict.fromkeys(keys))
    index = {k: i for i, k in enumerate(uniq)}
    group = np.fromiter((index[k] for k in keys), dtype=np.int64, count=len(keys))
    count = np.bincount(group, minlength=len(uniq)).astype(np.float64)
    cols = {}
    for name in ("f_true", "bt_true", "f", "bt", "f_max", "bt_max"):
        x = np.fromiter((r[name] for r in records), dtype=np.float64, count=len(records))
        mean = np.bincount(group, weights=x, minlength=len(uniq)) / count
        cols[name] = mean
        if name in ("f_true", "bt_true"):
            sq = np.bincount(group, weights=(x - mean[group]) ** 2, minlength=len(uniq))
            with np.errstate(invalid="ignore", divide="ignore"):
                cols[f"{name}_std"] = np.where(count > 1, np.sqrt(sq / (count - 1)), np.nan)
    cols.update(derived_metrics(cols["f_true"], cols["bt_true"], cols["f_max"]))
    noise = np.fromiter(
        (np.nan if r["noise_floor"] is None else r["noise_floor"] for r in records),
        dtype=np.float64,
        count=len(records),
    )
    has = ~np.isnan(noise)
    noise_n = np.bincount(group[has], minlength=len(uniq))
    noise_sum = np.bincount(group[has], weights=noise[has], minlength=len(uniq))
    # the interval and full size are per (pair, benchmark) already (the same on every seed's
    # record); n: the fewest paired samples of a seed, as the interval counts them
    first: dict[int, dict] = {}
    n_min = np.full(len(uniq), np.iinfo(np.int64).max)
    np.minimum.at(n_min, group, np.fromiter((r["n"] for r in records), np.int64, len(records)))
    partial = np.zeros(len(uniq), dtype=bool)
    for g, r in zip(group.tolist(), records, strict=True):
        first.setdefault(g, r)
        partial[g] |= r["partial"]
    out, passed = [], significance.cell_fields(records, group, len(uniq))
    shifted = _shifted(records, group, len(uniq))
    for i, (pair_id, bench) in enumerate(uniq):
        cell = {"pair_id": pair_id, "column": bench, "n_benchmarks": 1, "seeds": int(count[i])}
        for name, values in cols.items():
            v = float(values[i])
            cell[name] = None if np.isnan(v) else v
        cell["noise_floor"] = float(noise_sum[i] / noise_n[i]) if noise_n[i] else None
        cell["n"] = int(n_min[i])
        cell.update({name: first[i][name] for name in (*INTERVAL_FIELDS, "full_size")})
        cell["partial"] = bool(partial[i])
        out.append(cell | passed[i] | shifted.get(i, {}))
    return out


CELL_SHIFT = ("f_true_shift", "depends_on_extractor")
"""What a score set's heatmap cell says of its extractor
(``forgetmap.services.extractor_shift``)."""


def _shifted(records: list[dict], group: np.ndarray, size: int) -> dict[int, dict]:
    """Per benchmark cell of a score set's map: the mean F_true shift over its seeds, and whether
    any seed's depends on the extractor (none: the harness's map)."""
    if not records or "f_true_shift" not in records[0]:
        return {}
    shift = np.fromiter(
        (np.nan if r["f_true_shift"] is None else r["f_true_shift"] for r in records),
        dtype=np.float64,
        count=len(records),
    )
    has = ~np.isnan(shift)
    total = np.bincount(group[has], weights=shift[has], minlength=size)
    count = np.bincount(group[has], minlength=size)
    depends = np.zeros(size, dtype=bool)
    np.logical_or.at(depends, group, [bool(r["depends_on_extractor"]) for r in records])
    return {
        i: {
            "f_true_shift": float(total[i] / count[i]) if count[i] else None,
            "depends_on_extractor": bool(depends[i]),
        }
        for i in range(size)
    }
