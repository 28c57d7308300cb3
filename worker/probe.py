"""Asking the model again on the worker: one engine scores every probe item's options after its
forced-answer context (``forgetmap.analysis.probe``), in batches, one forward pass per item (the
options of an item share its context, so an engine with prefix caching reads it once).
``run_probe_shard`` runs a probe job's shard: the items come from the app
(``GET /api/shards/{id}/probe``), the outcomes go back to it (``POST``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from forgetmap.analysis.probe import (
    FORCED_ANSWER,
    ProbeItem,
    ProbeOutcome,
    option_labels,
    outcome_of,
    probe_context,
)
from forgetmap.contract.jobs import Engine, ShardStatus
from forgetmap.contract.probe import ProbeIn, ProbeOutcomeIn, ProbeShardSpec
from forgetmap.contract.shards import ClaimedShard, ShardModel
from forgetmap.runtime.paths import ModelPathError, ModelRules
from forgetmap.worker.client import AppClient
from forgetmap.worker.engines import base
from forgetmap.worker.evaluate import EngineCache, ShardFailed, engine_options, shard_spec
from forgetmap.worker.fingerprint import model_fingerprint
from forgetmap.worker.settings import WorkerSettings

log = logging.getLogger("forgetmap.worker")

PROBE_BATCH = 64
"""Items scored per engine call."""


def run_probe(
    engine: base.Engine,
    items: Sequence[ProbeItem],
    *,
    prefix: str = FORCED_ANSWER,
    batch: int = PROBE_BATCH,
) -> list[ProbeOutcome]:
    """Each item's outcome, in item order: its options' letters scored after ``probe_context``."""
    outcomes: list[ProbeOutcome] = []
    for start in range(0, len(items), batch):
        chunk = items[start : start + batch]
        scores = engine.choice_logprobs(
            [probe_context(item, prefix) for item in chunk],
            [option_labels(item.num_choices) for item in chunk],
        )
        outcomes += [outcome_of(item, s) for item, s in zip(chunk, scores, strict=True)]
    return outcomes


def checked_paths(settings: WorkerSettings, models: dict[str, ShardModel]) -> dict[str, str]:
    """Each model's path as the worker loads it, checked again here against the model roots (a
    job row that reached the queue another way loads nothing outside them)."""
    paths = {}
    for role, model in models.items():
        try:
            paths[role] = ModelRules.of(settings).check(model.path)
        except ModelPathError as exc:
            raise ShardFailed(str(exc)) from exc
    return paths


def load_engine(
    engines: EngineCache, settings: WorkerSettings, name: Engine, model: ShardModel, path: str
) -> base.Engine:
    """The engine for ``model`` (the worker's cached one when it is the same); ShardFailed for a
    model that does not load (nothing to retry)."""
    try:
        return engines.get(name.value, path, **engine_options(settings, name, model.revision))
    except Exception as exc:
        raise ShardFailed(
            f"cannot load model {model.path!r} with {name}: {type(exc).__name__}: {exc}"
        ) from exc


def run_probe_shard(
    shard: ClaimedShard, *, client: AppClient, engines: EngineCache, settings: WorkerSettings
) -> str:
    """Run a claimed probe shard and report it: fetch its items, score the post model's arms
    (the flips, the shuffled and kept controls) on one engine, then the base control on the
    base's, upload one outcome per item. Returns 'done' or 'cancelled'; raises ShardFailed."""
    spec = shard_spec(shard, ProbeShardSpec)
    options = spec.options
    paths = checked_paths(settings, {"post": spec.post, "base": spec.base})
    fetched = client.probe_items(shard.id)
    by_model = {
        "post": [i for i in fetched.items if i.arm != "base"],
        "base": [i for i in fetched.items if i.arm == "base"],
    }
    total = len(fetched.items)
    log.info(
        "shard %d: probe of %s -> %s: %d flips, %d items in all (%s)",
        shard.id,
        spec.base.name,
        spec.post.name,
        sum(i.arm == "flips" for i in fetched.items),
        total,
        ", ".join(f"{why}: {n}" for why, n in fetched.left_out.items()) or "nothing left out",
    )
    if client.progress(shard.id, 0, total) == ShardStatus.cancelled:
        return ShardStatus.cancelled
    outcomes: list[ProbeOutcomeIn] = []
    timing: dict[str, float] = {}
    engine_name = Engine(options.engine)
    for role, items in by_model.items():
        if not items:
            continue
        model = spec.post if role == "post" else spec.base
        started = time.monotonic()
        engine = load_engine(engines, settings, engine_name, model, paths[role])
        timing[f"{role}_load_s"] = time.monotonic() - started
        started = time.monotonic()
        probe = [
            ProbeItem(str(n), i.prompt, i.answer, i.num_choices, i.gold)
            for n, i in enumerate(items)
        ]
        for start in range(0, len(probe), PROBE_BATCH):
            chunk = probe[start : start + PROBE_BATCH]
            for outcome in run_probe(engine, chunk, prefix=fetched.prefix):
                item = items[int(outcome.key)]
                outcomes.append(
                    ProbeOutcomeIn(
                        arm=item.arm,
                        benchmark=item.benchmark,
                        seed=item.seed,
                        sample_id=item.sample_id,
                        num_choices=item.num_choices,
                        gold=item.gold,
                        chosen=outcome.chosen,
                    )
                )
            if client.progress(shard.id, len(outcomes), total) == ShardStatus.cancelled:
                return ShardStatus.cancelled
        timing[f"{role}_probe_s"] = time.monotonic() - started
    client.probe(shard.id, ProbeIn(outcomes=outcomes, timing=timing))
    return client.finish(shard.id, model_fingerprint(paths["post"], spec.post.revision))
