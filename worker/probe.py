"""Asking the model again on the worker: one engine scores every probe item's options after its
forced-answer context (``forgetmap.analysis.probe``), in batches, one forward pass per item (the
options of an item share its context, so an engine with prefix caching reads it once); a
generative item's short answer is generated again and graded.
``run_probe_shard`` runs a probe job's shard: the items come from the app
(``GET /api/shards/{id}/probe``), the outcomes go back to it (``POST``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from forgetmap.analysis.probe import (
    FINAL_ANSWER,
    FORCED_ANSWER,
    ProbeItem,
    ProbeOutcome,
    option_labels,
    outcome_of,
    probe_context,
    regenerated_outcome,
    regeneration_context,
)
from forgetmap.contract.jobs import Engine, ShardStatus
from forgetmap.contract.probe import ProbeIn, ProbeOutcomeIn, ProbeShardSpec
from forgetmap.contract.shards import ClaimedShard, ShardModel
from forgetmap.core.recoverability_names import ANSWER_TOKENS
from forgetmap.runtime.paths import ModelPathError, ModelRules
from forgetmap.worker.benchmarks.grading import grade
from forgetmap.worker.benchmarks.items import Item
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
    answer_prefix: str = FINAL_ANSWER,
    answer_tokens: int = ANSWER_TOKENS,
    batch: int = PROBE_BATCH,
) -> list[ProbeOutcome]:
    """Each item's outcome, in item order: a multiple-choice item's option letters scored after
    ``probe_context``; a generative item's short answer generated (greedy, at most
    ``answer_tokens``, ending at a line break) after ``regeneration_context`` and graded against
    its gold answer as the evaluation grades one (``grading.grade``)."""
    outcomes: dict[int, ProbeOutcome] = {}
    choice = [i for i, item in enumerate(items) if not item.generative]
    generative = [i for i, item in enumerate(items) if item.generative]
    for start in range(0, len(choice), batch):
        chunk = choice[start : start + batch]
        scores = engine.choice_logprobs(
            [probe_context(items[i], prefix) for i in chunk],
            [option_labels(items[i].num_choices) for i in chunk],
        )
        for i, s in zip(chunk, scores, strict=True):
            outcomes[i] = outcome_of(items[i], s)
    params = base.GenerationParams(temperature=0.0, max_tokens=answer_tokens, seed=0, stop=("\n",))
    for start in range(0, len(generative), batch):
        chunk = generative[start : start + batch]
        generated = engine.generate(
            [regeneration_context(items[i], answer_prefix) for i in chunk], params
        )
        for i, g in zip(chunk, generated, strict=True):
            right = grade(_gradable(items[i]), g.text).correct
            outcomes[i] = regenerated_outcome(items[i], right)
    return [outcomes[i] for i in range(len(items))]


def _gradable(item: ProbeItem) -> Item:
    """A generative probe item as the evaluation's grader takes it (only its gold answer counts)."""
    assert item.gold_answer is not None
    return Item(
        benchmark="probe",
        sample_id=item.key,
        question="",
        choices=None,
        gold=item.gold_answer,
        gold_index=None,
        category=None,
    )


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
            ProbeItem(str(n), i.prompt, i.answer, i.num_choices, i.gold, i.gold_answer)
            for n, i in enumerate(items)
        ]
        for start in range(0, len(probe), PROBE_BATCH):
            chunk = probe[start : start + PROBE_BATCH]
            asked = run_probe(
                engine,
                chunk,
                prefix=fetched.prefix,
                answer_prefix=fetched.answer_prefix,
                answer_tokens=fetched.answer_tokens,
            )
            for outcome in asked:
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
