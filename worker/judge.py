"""A judge on the worker: the judge model reads each item (the question as the judged model saw
it, its answer, "which option does the answer commit to?") and its options' letters and "0"
(none) are scored after that context (``forgetmap.analysis.probe.judge_context``), one forward
pass per item. ``run_judge_shard`` runs a judge job's shard: the items come from the app
(``GET /api/shards/{id}/judge``), the readings go back to it (``POST``)."""

from __future__ import annotations

import logging
import time

from forgetmap.analysis.probe import judge_context, judge_labels
from forgetmap.contract.jobs import Engine, ShardStatus
from forgetmap.contract.judge import JudgeIn, JudgeItemOut, JudgeOutcomeIn, JudgeShardSpec
from forgetmap.contract.shards import ClaimedShard
from forgetmap.worker.client import AppClient
from forgetmap.worker.engines import base
from forgetmap.worker.evaluate import EngineCache, shard_spec
from forgetmap.worker.fingerprint import model_fingerprint
from forgetmap.worker.probe import PROBE_BATCH, checked_paths, load_engine
from forgetmap.worker.settings import WorkerSettings

log = logging.getLogger("forgetmap.worker")


def read_answers(engine: base.Engine, items: list[JudgeItemOut], template: str) -> list[int | None]:
    """The judge's reading of each item: the option index it ranks first (``num_choices``: none
    of them), None on a tie at the top."""
    scores = engine.choice_logprobs(
        [judge_context(i.prompt, i.answer, template) for i in items],
        [judge_labels(i.num_choices) for i in items],
    )
    readings: list[int | None] = []
    for values in scores:
        best = max(values)
        top = [n for n, v in enumerate(values) if v == best]
        readings.append(top[0] if len(top) == 1 else None)
    return readings


def run_judge_shard(
    shard: ClaimedShard, *, client: AppClient, engines: EngineCache, settings: WorkerSettings
) -> str:
    """Run a claimed judge shard and report it. Returns 'done' or 'cancelled'; raises
    ShardFailed."""
    spec = shard_spec(shard, JudgeShardSpec)
    paths = checked_paths(settings, {"judge": spec.judge})
    fetched = client.judge_items(shard.id)
    items, total = fetched.items, len(fetched.items)
    log.info(
        "shard %d: judge %s on %s -> %s: %d unread answers, %d audit rows (%s)",
        shard.id,
        spec.judge.name,
        spec.base,
        spec.post,
        sum(i.purpose == "no_answer" for i in items),
        sum(i.purpose == "audit" for i in items),
        ", ".join(f"{why}: {n}" for why, n in fetched.left_out.items()) or "nothing left out",
    )
    if client.progress(shard.id, 0, total) == ShardStatus.cancelled:
        return ShardStatus.cancelled
    started = time.monotonic()
    engine = load_engine(engines, settings, Engine(spec.options.engine), spec.judge, paths["judge"])
    timing = {"load_s": time.monotonic() - started}
    started = time.monotonic()
    outcomes: list[JudgeOutcomeIn] = []
    for start in range(0, total, PROBE_BATCH):
        chunk = items[start : start + PROBE_BATCH]
        for item, chosen in zip(chunk, read_answers(engine, chunk, fetched.template), strict=True):
            outcomes.append(
                JudgeOutcomeIn(
                    purpose=item.purpose,
                    model=item.model,
                    benchmark=item.benchmark,
                    seed=item.seed,
                    sample_id=item.sample_id,
                    num_choices=item.num_choices,
                    chosen=chosen,
                )
            )
        if client.progress(shard.id, len(outcomes), total) == ShardStatus.cancelled:
            return ShardStatus.cancelled
    timing["judge_s"] = time.monotonic() - started
    client.judge(shard.id, JudgeIn(outcomes=outcomes, timing=timing))
    return client.finish(shard.id, model_fingerprint(paths["judge"], spec.judge.revision))
