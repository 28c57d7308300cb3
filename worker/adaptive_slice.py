"""An adaptive round's slice of a benchmark (forgetmap.contract.shards.ShardSlice): the items a
shard evaluates, in the benchmark's shared evaluation order
(forgetmap.analysis.adaptive.evaluation_order, the same for every model, so a base's first n samples
serve every pair built on it)."""

from __future__ import annotations

from forgetmap.analysis.adaptive import evaluation_order
from forgetmap.contract.shards import ShardSlice
from forgetmap.worker.benchmarks.items import Item


def slice_items(items: list[Item], part: ShardSlice | None) -> list[Item]:
    """The items of ``part`` (samples start..end of the order, the end clipped at the
    benchmark's size); all items, in the loader's order, for a shard without a slice."""
    if part is None:
        return items
    by_id = {item.sample_id: item for item in items}
    order = evaluation_order(part.order, by_id)
    return [by_id[sample_id] for sample_id in order[part.start : part.end]]
