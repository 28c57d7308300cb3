"""Sample ids and seeded option shuffles of the items a loader reads.

Sample ids: the dataset's own id column where it has one (ARC ``id``, CommonsenseQA ``id``,
HellaSwag ``ind``, GPQA ``Record ID``); otherwise ``items.content_hash`` of the row's source text
(question, options and passage as they are in the dataset, before any parsing or shuffling, so that
improving a parser never renumbers a benchmark). Never the row order. Rows whose content hashes
collide (MMLU has a few verbatim duplicate questions) get ``~2``, ``~3`` ... suffixes, assigned in
an order fixed by their content, so the ids do not depend on row order either; colliding dataset
ids are refused.

Option shuffles: ``shuffle_item`` permutes an item's options with a per-item permutation keyed by
``(seed, sample_id)`` (a sort of the option indices by SHA-256 of ``"{seed}\\0{sample_id}\\0{j}"``),
so an item is shuffled the same way whatever else is loaded and in whatever order, on any Python
version. On by default for GPQA (the dataset stores the correct answer first; the paper shuffled
with a seed) and for TruthfulQA mc1 (same reason; the paper's released code did not shuffle it,
which puts every gold answer at ``A``). The permutation is kept in ``metadata["permutation"]``
(``permutation[i]`` = the dataset's index of the option shown at position ``i``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from forgetmap.worker.benchmarks.items import (
    LETTERS,
    BenchmarkError,
    Item,
    content_hash,
    taxonomy_category,
)

__all__ = ["ItemCollector", "permutation", "shuffle_item"]

log = logging.getLogger(__name__)


class ItemCollector:
    """Accumulates a loader's items; resolves sample-id collisions order-independently."""

    def __init__(self, benchmark: str) -> None:
        self.benchmark = benchmark
        self._items: list[tuple[Item, bool]] = []
        self.skipped = 0

    def add(
        self,
        *,
        sample_id: str | None,
        hash_of: tuple[str, Sequence[str] | None, str | None],
        question: str,
        choices: Sequence[str] | None,
        gold_index: int | None,
        gold: str | None = None,
        context: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        explicit = sample_id is not None and str(sample_id).strip() != ""
        sid = str(sample_id).strip() if explicit else content_hash(*hash_of)
        if choices is not None:
            assert gold_index is not None
            gold = LETTERS[gold_index]
        assert gold is not None
        item = Item(
            benchmark=self.benchmark,
            sample_id=sid,
            question=question,
            choices=None if choices is None else tuple(choices),
            gold=gold,
            gold_index=gold_index,
            category=taxonomy_category(self.benchmark),
            context=context,
            metadata=metadata or {},
        )
        self._items.append((item, explicit))

    def skip(self, where: str, why: str) -> None:
        self.skipped += 1
        log.warning("%s: row skipped: %s", where, why)

    def finish(self, *, seed: int, shuffle: bool) -> list[Item]:
        if self.skipped:
            log.warning("%s: %d row(s) skipped", self.benchmark, self.skipped)
        groups: dict[str, list[int]] = {}
        for pos, (item, _) in enumerate(self._items):
            groups.setdefault(item.sample_id, []).append(pos)
        items = [item for item, _ in self._items]
        for sid, positions in groups.items():
            if len(positions) < 2:
                continue
            if any(self._items[p][1] for p in positions):
                raise BenchmarkError(
                    f"{self.benchmark}: the dataset id {sid!r} occurs {len(positions)} times"
                )
            ordered = sorted(positions, key=lambda p: _content_key(items[p]))
            for n, p in enumerate(ordered[1:], start=2):
                items[p] = replace(items[p], sample_id=f"{sid}~{n}")
            log.warning(
                "%s: %d rows share the content hash %s; ids suffixed ~2..",
                self.benchmark,
                len(positions),
                sid,
            )
        if shuffle:
            items = [shuffle_item(it, seed) for it in items]
        return items


def _content_key(item: Item) -> str:
    return json.dumps(
        [item.question, item.choices, item.gold, item.context, item.metadata],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )


# ---------------------------------------------------------------------------------------------
# Seeded option shuffle


def permutation(k: int, seed: int, sample_id: str) -> list[int]:
    """The seeded order of k options of one item: ``perm[i]`` = original index shown at ``i``."""

    def key(j: int) -> bytes:
        return hashlib.sha256(f"{seed}\0{sample_id}\0{j}".encode()).digest()

    return sorted(range(k), key=key)


def shuffle_item(item: Item, seed: int) -> Item:
    """``item`` with its options in the seeded order of ``permutation``; generative items as is.

    ``metadata["permutation"]`` maps shown positions to the dataset's option indices (composed if
    the item was already shuffled). With several gold letters, all are remapped and ``gold`` is
    the first of them in the new order.
    """
    if item.choices is None:
        return item
    assert item.gold_index is not None
    perm = permutation(len(item.choices), seed, item.sample_id)
    shown_at = {old: new for new, old in enumerate(perm)}
    choices = tuple(item.choices[p] for p in perm)
    metadata = dict(item.metadata)
    before = metadata.get("permutation")
    metadata["permutation"] = [before[p] for p in perm] if before else perm
    metadata["shuffle_seed"] = seed
    gold_index = shown_at[item.gold_index]
    if metadata.get("gold_letters"):
        golds = sorted(shown_at[LETTERS.index(x)] for x in metadata["gold_letters"])
        metadata["gold_letters"] = [LETTERS[g] for g in golds]
        gold_index = golds[0]
    return replace(
        item, choices=choices, gold=LETTERS[gold_index], gold_index=gold_index, metadata=metadata
    )
