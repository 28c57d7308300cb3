"""Running one shard: (model, benchmark, seed) -> graded per-sample rows uploaded to the app.

Two eval modes: ``generate`` (prompt -> sampled response -> extracted answer -> graded) and
``loglik`` (score each option's continuation; the most likely option is the answer). Rows go to
the app in batches as they are graded, so a killed worker loses at most one batch; the app keeps
the first row stored per sample, so a re-run never duplicates.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from forgetmap.contract.base import problem_text
from forgetmap.contract.jobs import Engine, Mode, Prompting, ShardStatus
from forgetmap.contract.results import ResultRow
from forgetmap.contract.shards import ClaimedShard, EvaluationShardSpec, ShardConfig, ShardData
from forgetmap.core.answer_status import ANSWERED, NO_ANSWER, TRUNCATED
from forgetmap.runtime.paths import ModelPathError, ModelRules
from forgetmap.worker.adaptive_slice import slice_items
from forgetmap.worker.benchmarks.grading import grade, grade_choice_logprobs
from forgetmap.worker.benchmarks.items import BenchmarkError, Item
from forgetmap.worker.benchmarks.prompts import build_prompt, choice_continuations, select_shots
from forgetmap.worker.benchmarks.registry import load_benchmark
from forgetmap.worker.client import AppClient
from forgetmap.worker.engines.base import Engine as InferenceEngine
from forgetmap.worker.engines.base import GenerationParams
from forgetmap.worker.fingerprint import model_fingerprint
from forgetmap.worker.settings import WorkerSettings
from pydantic import BaseModel, ValidationError

log = logging.getLogger("forgetmap.worker")
Spec = TypeVar("Spec", bound=BaseModel)


class ShardFailed(RuntimeError):
    """The shard cannot succeed as specified (bad model, bad benchmark, engine error)."""


def shard_spec(shard: ClaimedShard, spec_model: type[Spec]) -> Spec:
    """The claimed shard's spec as ``spec_model`` (app/contract); a spec it refuses fails the
    shard before anything is loaded."""
    try:
        return spec_model.model_validate(shard.spec)
    except ValidationError as exc:
        raise ShardFailed(f"the shard's spec is not valid: {problem_text(exc)}") from exc


@dataclass
class EngineCache:
    """One loaded engine per worker process; loading another model closes the previous one."""

    factory: Callable[..., InferenceEngine]
    key: tuple | None = None
    engine: InferenceEngine | None = None

    def get(self, name: str, path: str, **options):
        key = (name, path, json.dumps(options, sort_keys=True, default=str))
        if key != self.key:
            self.close()
            log.info("loading %s engine for %s", name, path)
            started = time.monotonic()
            self.engine = self.factory(name, path, **options)
            self.key = key
            log.info("engine ready in %.1fs", time.monotonic() - started)
        return self.engine

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
        self.engine, self.key = None, None


def engine_options(
    settings: WorkerSettings, engine: Engine, revision: str | None
) -> dict[str, Any]:
    """What the worker's settings say of an engine it loads (``make_engine``'s options)."""
    options: dict[str, Any] = {
        "trust_remote_code": settings.trust_remote_code,
        "revision": revision,
    }
    if engine == Engine.transformers and settings.torch_threads:
        # on a shared CPU node torch's default (every core) slowed generation 6-20x (bench/engine)
        options["num_threads"] = settings.torch_threads
    if engine == Engine.vllm:
        options.update(
            tensor_parallel_size=settings.tensor_parallel_size,
            gpu_memory_utilization=settings.gpu_memory_utilization,
            batch_invariant=settings.batch_invariant,
        )
    return options


def run_shard(
    shard: ClaimedShard,
    *,
    client: AppClient,
    engines: EngineCache,
    settings: WorkerSettings,
    model_path: str | None = None,
) -> str:
    """Evaluate a claimed shard and report it. Returns 'done' or 'cancelled'; raises ShardFailed.
    ``model_path``: the checkpoint this worker built for the shard (a merge shard's evaluation),
    loaded instead of the spec's path."""
    checked = shard_spec(shard, EvaluationShardSpec)
    model, cfg = checked.model, checked.config
    shard_id, seed = shard.id, shard.seed
    try:  # checked again here: a job row that reached the queue another way loads nothing outside
        path = model_path or ModelRules.of(settings).check(model.path)
    except ModelPathError as exc:
        raise ShardFailed(str(exc)) from exc
    if shard.benchmark.startswith("local:") and not settings.benchmark_dirs:
        raise ShardFailed(
            f"local benchmark {shard.benchmark!r} refused: no benchmark folders configured "
            "(set FORGETMAP_BENCHMARK_DIRS on the worker)"
        )
    try:
        loaded = load_benchmark(
            shard.benchmark,
            local_dirs=settings.benchmark_dirs,
            limit=cfg.limit,
            seed=seed,
        )
    except BenchmarkError as exc:
        raise ShardFailed(str(exc)) from exc
    items = loaded.items  # the few-shot pool: the whole benchmark, also for a slice
    todo = slice_items(items, checked.slice)
    options = engine_options(settings, cfg.engine, model.revision)
    try:
        engine = engines.get(cfg.engine.value, path, **options)
    except Exception as exc:  # unreachable or unloadable model: nothing to retry
        raise ShardFailed(
            f"cannot load model {model.path!r} with {cfg.engine}: {type(exc).__name__}: {exc}"
        ) from exc

    total = len(todo)
    log.info(
        "shard %d: %s on %s seed %d, %d items (%s, %s prompting)",
        shard_id,
        model.name,
        shard.benchmark,
        seed,
        total,
        cfg.mode,
        cfg.prompting,
    )
    if client.progress(shard_id, 0, total) == ShardStatus.cancelled:
        return ShardStatus.cancelled
    started = time.monotonic()
    done = 0
    for start in range(0, total, settings.upload_batch):
        batch = todo[start : start + settings.upload_batch]
        try:
            rows = _evaluate(engine, batch, items, cfg, seed)
        except Exception as exc:
            raise ShardFailed(f"evaluation failed: {type(exc).__name__}: {exc}") from exc
        client.results(shard_id, rows)
        done += len(batch)
        rate = done / max(time.monotonic() - started, 1e-9)
        log.info("shard %d: %d/%d items (%.1f items/s)", shard_id, done, total, rate)
        # after the last batch the finish reports (and says whether it was cancelled): one
        # round trip less per shard
        if done < total and client.progress(shard_id, done, total) == ShardStatus.cancelled:
            log.info("shard %d cancelled; stopping", shard_id)
            return ShardStatus.cancelled
    status = client.finish(
        shard_id,
        model_fingerprint(path, model.revision),
        ShardData.model_validate(loaded.data_record()),
        full_size=len(items),
    )
    if status == ShardStatus.cancelled:
        log.info("shard %d was cancelled while its last batch ran", shard_id)
        return ShardStatus.cancelled
    log.info("shard %d done in %.1fs", shard_id, time.monotonic() - started)
    return ShardStatus.done


def _evaluate(
    engine, batch: list[Item], pool: list[Item], cfg: ShardConfig, seed: int
) -> list[ResultRow]:
    base = cfg.prompting == Prompting.base
    shots = {
        item.sample_id: select_shots(item, pool, cfg.shots, seed=seed) if base else []
        for item in batch
    }
    if cfg.mode == Mode.loglik:
        contexts, continuations = [], []
        for item in batch:
            context, options = choice_continuations(item, shots=shots[item.sample_id])
            contexts.append(context)
            continuations.append(list(options))
        scores = engine.choice_logprobs(contexts, continuations)
        graded = [grade_choice_logprobs(item, s) for item, s in zip(batch, scores, strict=True)]
        responses = [json.dumps([round(x, 6) for x in s]) for s in scores]
        prompts = contexts
        tokens: list[tuple[int, int] | None] = [None] * len(batch)
    else:
        built = [
            build_prompt(item, mode="base" if base else "chat", shots=shots[item.sample_id])
            for item in batch
        ]
        prompts = [p.render(engine.apply_chat_template) for p in built]
        params = GenerationParams(
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            max_tokens=cfg.max_tokens,
            seed=seed,
            stop=tuple(built[0].stop),
        )
        generations = engine.generate(prompts, params)
        responses = [g.text for g in generations]
        graded = [grade(item, g.text) for item, g in zip(batch, generations, strict=True)]
        tokens = [(g.prompt_tokens, g.completion_tokens) for g in generations]
    if cfg.mode == Mode.loglik:
        statuses = [ANSWERED] * len(batch)  # a choice is always taken
    else:
        statuses = [
            generated_status(g.finish_reason, g.completion_tokens, cfg.max_tokens, r.prediction)
            for g, r in zip(generations, graded, strict=True)
        ]
    return [
        ResultRow(
            sample_id=item.sample_id,
            correct=bool(g.correct),
            num_choices=len(item.choices) if item.choices else None,
            category=item.category,
            prompt=prompt,
            response=response,
            prediction=g.prediction,
            gold=item.gold,
            choices=list(item.choices) if item.choices else None,
            prompt_tokens=tok[0] if tok else None,
            completion_tokens=tok[1] if tok else None,
            answer_status=status,
        )
        for item, prompt, response, g, tok, status in zip(
            batch, prompts, responses, graded, tokens, statuses, strict=True
        )
    ]


def generated_status(
    finish_reason: str | None,
    completion_tokens: int | None,
    max_tokens: int,
    prediction: str | None,
) -> str:
    """A generated answer's status (``forgetmap.core.answer_status``): ``truncated`` where the
    engine says the token limit ended it (finish reason ``length``), or, where it does not say,
    where it used every token allowed; else ``no_answer`` where the grader extracted nothing
    from the text; else ``answered``."""
    if finish_reason is not None:
        cut = finish_reason == "length"
    else:
        cut = completion_tokens is not None and completion_tokens >= max_tokens
    if cut:
        return TRUNCATED
    return ANSWERED if prediction and prediction.strip() else NO_ANSWER
