"""Evaluation jobs: what to evaluate, split into shards of (model, benchmark, seed).

A job is written to the database before anything is enqueued, so a broker outage loses nothing.
Each shard is one Celery task; workers report back over HTTP (start, progress, results, finish or
fail) and never open the database. A shard whose (model, benchmark, seed, eval config) was already
evaluated is marked ``reused`` and not run again: a base model shared by many pairs is evaluated
once.

Adaptive jobs (``adaptive`` set, app/analysis/adaptive.py, app/services/rounds.py) run per benchmark
in rounds: a round is one shard per (model, seed) for the next slice of the benchmark's shared
evaluation order, starting after what the model already has stored under the same eval config
(so a later job with a tighter target continues, and a base shared by pairs is evaluated once).
When a round's last shard finishes, the app looks at the paired interval
(forgetmap.analysis.adaptive) and stops the benchmark or writes the next round; the round state
lives in the job's payload (``rounds``). Rounds grow geometrically (app/services/rounds.py says
why). Two jobs on one model at the same time do not evaluate a slice twice: when a round would write
a shard whose first sample an unfinished shard of another job already evaluates (same model,
benchmark, seed and eval config), the round waits for that shard instead (``waiting`` in the round
state; the job counts as queued or running meanwhile). When the shard finishes the waiting job takes
its rows like any stored prefix; when it fails or is cancelled the waiting job writes its own.

Shard and job states: forgetmap.contract.jobs.ShardStatus and JobStatus.

Lost messages: a queued shard's broker message can vanish (a Redis restart without persistence,
a failover, FLUSHDB). The reconciler (forgetmap.services.queue) sends such a shard again and counts
it in ``resends``; a duplicate delivery is harmless because :func:`start_shard` lets one delivery
run a shard at a time.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from forgetmap.analysis.adaptive import evaluation_order
from forgetmap.contract.base import validated
from forgetmap.contract.imports import IMPORT_JOB_KIND
from forgetmap.contract.jobs import (
    TERMINAL,
    EvalConfigIn,
    EvaluateJobIn,
    JobStatus,
    ModelIn,
    PairSpecIn,
    ShardKind,
    ShardStatus,
)
from forgetmap.contract.results import ResultsIn
from forgetmap.core.errors import InputError
from forgetmap.core.taxonomy import canonical_name
from forgetmap.db import adaptive as adaptive_db
from forgetmap.db import jobs as jobs_db
from forgetmap.db import queries
from forgetmap.db.ingest import IngestSummary, ingest
from forgetmap.db.pairing import add_pair
from forgetmap.db.store import Connection, one_row
from forgetmap.importers.common import build_table, prepare
from forgetmap.runtime.paths import ModelRules
from forgetmap.services.rounds import PairLook, Stop, look, model_ends, rule_of
from pydantic import BaseModel

Body = TypeVar("Body", bound=BaseModel)


def shard_config(model: ModelIn, config: EvalConfigIn) -> dict:
    """The eval config of one shard (forgetmap.contract.shards.ShardConfig): the job's settings plus
    how this model is prompted."""
    return {
        **config.model_dump(mode="json"),
        "prompting": model.prompting.value,
        "revision": model.revision,
    }


def stored_benchmark_name(name: str) -> str:
    """The benchmark name results are stored under: ``local:dir/toy.jsonl`` -> ``toy``; the
    taxonomy's canonical name for the paper's benchmarks."""
    if name.startswith("local:"):
        return Path(name[len("local:") :]).stem
    return canonical_name(name)


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------ jobs


def with_checked_models(body: Body, rules: ModelRules) -> Body:
    """``body`` (any job kind) with each model's path replaced by what the worker will load,
    checked by ``rules`` (forgetmap.runtime.paths: inside a root, or a hub id where allowed); a
    ModelPathError for the first refused one. Every field holding a model (``models``, ``base``,
    ``post``, of whatever kind) passes here, so a new kind cannot skip the check."""
    update: dict[str, Any] = {}
    for field in type(body).model_fields:
        value = getattr(body, field)
        if isinstance(value, ModelIn):
            update[field] = value.model_copy(update={"path": rules.check(value.path)})
        elif isinstance(value, list) and any(isinstance(v, ModelIn) for v in value):
            update[field] = [v.model_copy(update={"path": rules.check(v.path)}) for v in value]
    return body.model_copy(update=update)


def register_models(conn: Connection, models: list[ModelIn]) -> None:
    """Make sure the models exist and remember the checkpoint each names (later forms prefill
    it)."""
    jobs_db.save_model_specs(conn, {m.name: m.model_dump(mode="json") for m in models})


def create_job(conn: Connection, request: EvaluateJobIn) -> tuple[int, list[int]]:
    """Write a job and its shards; returns (job id, ids of the shards to enqueue)."""
    request.check()
    register_models(conn, request.models)
    job_id = jobs_db.insert_job(conn, ShardKind.evaluate, request.payload())
    to_enqueue = []
    if request.adaptive is not None:
        _add_pairs(conn, request.pairs)
        for bench in dict.fromkeys(request.benchmarks):
            to_enqueue += _advance(conn, job_id, bench)
        update_job_status(conn, job_id)
        return job_id, to_enqueue
    for m in request.models:
        to_enqueue += evaluation_shards(
            conn, job_id, m, request.benchmarks, request.seeds, request.config
        )
    _add_pairs(conn, request.pairs)
    update_job_status(conn, job_id)
    return job_id, to_enqueue


def evaluation_shards(
    conn: Connection,
    job_id: int,
    model: ModelIn,
    benchmarks: list[str],
    seeds: list[int],
    config: EvalConfigIn,
    *,
    parent_id: int | None = None,
) -> list[int]:
    """Write one model's (benchmark, seed) shards of a job, each ``reused`` when the model was
    evaluated there under the same eval config; returns the queued ones' ids. ``parent_id``:
    the merge shard whose worker runs them."""
    model_id = jobs_db.model_id(conn, model.name)
    cfg = shard_config(model, config)
    chash = config_hash(cfg)
    done = {
        (stored_benchmark_name(b), seed) for b, seed in jobs_db.evaluated(conn, model_id, chash)
    }
    rows = [
        (
            bench,
            seed,
            ShardStatus.reused
            if (stored_benchmark_name(bench), seed) in done
            else ShardStatus.queued,
        )
        for bench in benchmarks
        for seed in seeds
    ]
    spec = {"model": model.model_dump(mode="json"), "config": cfg}
    ids = jobs_db.insert_evaluation_shards(
        conn,
        job_id=job_id,
        model_id=model_id,
        config_hash=chash,
        spec=spec,
        rows=rows,
        parent_id=parent_id,
    )
    return sorted(i for i, status in ids if status == ShardStatus.queued)


def _add_pairs(conn: Connection, pairs: list[PairSpecIn]) -> None:
    for pair in pairs:
        add_pair(conn, pair.base, pair.post, label=pair.label, stage=pair.stage)


def one_shard_job(
    conn: Connection,
    *,
    kind: ShardKind,
    payload: dict,
    spec: dict,
    model: str,
    benchmark: str,
    seed: int,
    pair_id: int,
) -> tuple[int, list[int]]:
    """A job of one shard that analyses a stored pair (a recoverability analysis, a probe, a
    judge): written, its shard ``reused`` when the pair holds a finished result of a shard with
    the same spec (``jobs_db.finished_result``). Returns (job id, shard ids to send)."""
    chash = config_hash(spec)
    job_id = jobs_db.insert_job(conn, kind, payload)
    reused = jobs_db.finished_result(conn, kind, pair_id, chash)
    shard_id = jobs_db.insert_shard(
        conn,
        job_id=job_id,
        model=model,
        benchmark=benchmark,
        seed=seed,
        config_hash=chash,
        spec=spec,
        status="reused" if reused else "queued",
        kind=kind,
    )
    update_job_status(conn, job_id)
    return job_id, [] if reused else [shard_id]


def job_status_of(counts: dict[str, int]) -> JobStatus:
    """A job's status from its shards' status counts."""
    pending = sum(v for k, v in counts.items() if k not in TERMINAL)
    if pending == 0:
        return JobStatus.failed if counts.get(ShardStatus.failed) else JobStatus.done
    if counts.get(ShardStatus.running) or any(counts.get(k) for k in TERMINAL):
        return JobStatus.running
    return JobStatus.queued


def update_job_status(conn: Connection, job_id: int) -> str:
    if jobs_db.job_status(conn, job_id) == JobStatus.cancelled:
        return JobStatus.cancelled
    counts = jobs_db.shard_status_counts(conn, job_id)
    waits = _open_waits(conn, _payload(conn, job_id))
    if waits:  # an adaptive round waiting for another job's shard is still to do
        counts[ShardStatus.queued] = counts.get(ShardStatus.queued, 0) + waits
    status = job_status_of(counts)
    jobs_db.set_job_status(conn, job_id, status)
    return status


def start_shard(
    conn: Connection,
    shard_id: int,
    worker: str,
    delivery: str | None = None,
    stale_seconds: float = 1800.0,
) -> dict | None:
    """Claim a shard for a worker. Returns the shard to run, or None if there is nothing to do.

    ``delivery`` identifies the broker message (Celery's task id: a message re-delivered after
    its worker died keeps it, a re-send gets a new one). A running shard is taken over by a
    re-delivery of the message that claimed it, or by any delivery once its worker has been
    silent for ``stale_seconds``; another delivery of a live shard (a duplicate of a re-sent
    message) gets None, so nothing runs twice at once.
    """
    s = jobs_db.shard(conn, shard_id)
    if s is None or s["status"] in TERMINAL:
        return None
    if s["status"] == ShardStatus.running and delivery is not None:
        claimed_by, silent = jobs_db.claim(conn, shard_id, stale_seconds)
        if claimed_by is not None and claimed_by != delivery and not silent:
            return None
    jobs_db.mark_running(conn, shard_id, worker, delivery)
    update_job_status(conn, s["job_id"])
    return jobs_db.shard(conn, shard_id)


def shard_progress(conn: Connection, shard_id: int, done: int, total: int | None) -> str:
    """Record progress; returns the shard's status (a worker stops when it reads 'cancelled')."""
    jobs_db.record_progress(conn, shard_id, done, total)
    return jobs_db.shard_status(conn, shard_id) or "missing"


def _existing_shard(conn: Connection, shard_id: int) -> dict:
    s = jobs_db.shard(conn, shard_id)
    if s is None:
        raise InputError(f"shard {shard_id} does not exist")
    return s


def finish_shard(
    conn: Connection,
    shard_id: int,
    *,
    fingerprint: str | None = None,
    data: dict | None = None,
    full_size: int | None = None,
) -> list[int]:
    """Mark a shard done. ``data`` (the worker's ``{source, file, sha256}``) goes into the shard's
    eval config, so the results name the exact benchmark copy they were computed on;
    ``full_size`` (the samples the worker's loader saw) into its spec and the benchmark's row.
    Returns the shards to send: an adaptive round's next one, when this shard ended a round."""
    s = _existing_shard(conn, shard_id)
    spec = s["spec"]
    if spec.get("slice") and full_size is None:
        # without the benchmark's size the rounds could not tell its end
        raise InputError(
            f"shard {shard_id} is an adaptive round's: its finish needs full_size "
            "(the samples the benchmark has); update the worker"
        )
    if data:
        spec = {**spec, "config": {**spec["config"], "data": data}}
    if full_size is not None:
        spec = {**spec, "full_size": full_size}
        adaptive_db.set_full_size(conn, stored_benchmark_name(s["benchmark"]), full_size)
    if spec is not s["spec"]:
        jobs_db.set_spec(conn, shard_id, spec)
    jobs_db.mark_done(conn, shard_id)
    if fingerprint:
        jobs_db.set_fingerprint(conn, s["model"], fingerprint)
    to_send = _after_round(conn, s) if spec.get("slice") else []
    update_job_status(conn, s["job_id"])
    return to_send + _wake_waiting(conn, shard_id)


def fail_shard(conn: Connection, shard_id: int, error: str) -> list[int]:
    """Mark a shard failed. Returns the shards to send: those of adaptive jobs that waited for
    it and now evaluate its slice themselves."""
    s = _existing_shard(conn, shard_id)
    jobs_db.mark_failed(conn, shard_id, error[:4000])
    update_job_status(conn, s["job_id"])
    return _wake_waiting(conn, shard_id)


def retry_failed(conn: Connection, job_id: int) -> list[int]:
    """Put a job's failed shards back in the queue; returns the shards to send.

    An adaptive round's failed shard does not run again when another shard took its slice over
    (a job that waited for it writes its own shard for the slice at once): that shard's rows
    are stored, or it still runs. The failed one becomes ``reused`` (its spec's ``reused_from``
    says from what), the round waits for the running one, and when nothing else is missing the
    round's look is taken and the next round written."""
    payload = _payload(conn, job_id)
    touched: set[str] = set()
    for shard_id in jobs_db.failed_shard_ids(conn, job_id) if payload.get("adaptive") else []:
        s = jobs_db.shard(conn, shard_id)
        assert s is not None  # one of the job's failed shards
        part = s["spec"].get("slice")
        state = (payload.get("rounds") or {}).get(s["benchmark"])
        if part is None or state is None or part.get("round") != state["round"]:
            continue
        _, _, chash, mid = _shard_target(conn, payload, s["model"])
        prefix, whole = adaptive_db.stored_prefix(conn, mid, s["benchmark"], s["seed"], chash)
        stored = whole or prefix >= part["end"]
        cover = (
            None
            if stored
            else adaptive_db.unfinished_cover(
                conn, mid, s["benchmark"], s["seed"], chash, part["start"]
            )
        )
        if not stored and cover is None:
            continue
        jobs_db.set_spec(conn, shard_id, {**s["spec"], "reused_from": cover or "stored rows"})
        jobs_db.mark_reused(conn, shard_id)
        if cover is not None:
            state.setdefault("waiting", []).append(
                {
                    "shard": cover,
                    "model": s["model"],
                    "seed": s["seed"],
                    "start": part["start"],
                    "end": part["end"],
                }
            )
        touched.add(s["benchmark"])
    to_send: list[int] = []
    if touched:
        adaptive_db.set_payload(conn, job_id, payload)
        for benchmark in sorted(touched):
            if _round_complete(conn, job_id, benchmark, payload["rounds"][benchmark]):
                to_send += _advance(conn, job_id, benchmark, payload)
    to_send += jobs_db.requeue_failed(conn, job_id)
    if to_send or touched:
        update_job_status(conn, job_id)
    return to_send


def cancel_job(conn: Connection, job_id: int) -> tuple[int, list[int]]:
    """Cancel a job: queued shards will not run, running ones stop at their next progress report.
    Returns (shards stopped, shards to send: those of adaptive jobs that waited for a stopped
    shard and now evaluate its slice themselves). An import is not cancelled: it runs in the app
    as one transaction, and ends by itself in success or in nothing."""
    if jobs_db.job_kind(conn, job_id) == IMPORT_JOB_KIND:
        return 0, []
    stopped = jobs_db.cancel_job(conn, job_id)
    return len(stopped), [i for shard_id in stopped for i in _wake_waiting(conn, shard_id)]


def results_target(conn: Connection, shard_id: int) -> dict:
    """Where a shard's uploaded rows go: its model, benchmark, seed and eval config."""
    s = _existing_shard(conn, shard_id)
    if s["status"] == ShardStatus.cancelled:
        raise InputError(f"shard {shard_id} was cancelled; its results are not stored")
    if s["kind"] != ShardKind.evaluate:
        raise InputError(
            f"shard {shard_id} is a {s['kind']} shard: per-sample results belong to evaluation "
            f"shards (recoverability results go to /api/shards/{shard_id}/recovery)"
        )
    return {**s, "benchmark": stored_benchmark_name(s["benchmark"])}


def store_results(conn: Connection, body: ResultsIn) -> tuple[IngestSummary, bool]:
    """Keep a batch of a shard's per-sample results under its model, benchmark, seed and eval
    config. Idempotent: a sample already stored is kept as it is. Returns what the ingest did and
    whether a read page can show it: not when no pair holds the model (no count moved) and the
    benchmark was known before (the lists are unchanged), the case of most batches of a job."""
    target = results_target(conn, body.shard_id)
    known = bool(queries.benchmark_ids(conn, name=target["benchmark"]))
    n = len(body.rows)
    table = build_table(
        {
            "model": [target["model"]] * n,
            "benchmark": [target["benchmark"]] * n,
            "seed": [target["seed"]] * n,
            **body.columns(),
        }
    )
    table, benchmarks = prepare(table, source=f"shard {body.shard_id}")
    config = {"source": "worker", **target["spec"]["config"]}
    summary = ingest(conn, table, benchmarks, config=config, on_conflict="keep")
    return summary, bool(summary.pairs_refreshed) or not known


# ------------------------------------------------------------------------- adaptive rounds


def _payload(conn: Connection, job_id: int) -> dict:
    return json.loads(one_row(jobs_db.job_row(conn, job_id))[3])


def _pair_look(
    conn: Connection, rule, pair: dict, stored: str, seeds: list[int], full_size: int | None
) -> PairLook:
    """One pair's look at its paired samples (all seeds), put in evaluation order."""
    rows = adaptive_db.paired_correctness(conn, pair["base"], pair["post"], stored, seeds)
    by_id: dict[str, dict[int, tuple]] = {}
    for sample_id, seed, base_ok, post_ok, options in rows:
        by_id.setdefault(sample_id, {})[seed] = (base_ok, post_ok, options or 0)
    order = evaluation_order(
        stored, [s for s, by_seed in by_id.items() if len(by_seed) == len(seeds)]
    )
    pre = np.array([[by_id[s][seed][0] for s in order] for seed in seeds], dtype=np.int8)
    post = np.array([[by_id[s][seed][1] for s in order] for seed in seeds], dtype=np.int8)
    k = np.array([by_id[s][seeds[0]][2] for s in order], dtype=np.int64)
    return look(
        rule,
        pair["base"],
        pair["post"],
        pre.reshape(len(seeds), -1),
        post.reshape(len(seeds), -1),
        k,
        full_size,
    )


def _advance(
    conn: Connection, job_id: int, benchmark: str, payload: dict | None = None
) -> list[int]:
    """Look at every pair of an adaptive job on one benchmark and write its next round: one shard
    per (model, seed) whose stored prefix ends before what its pairs need, unless an unfinished
    shard of another job already evaluates its first sample: then the round waits for that one.
    Returns the ids written (none: every pair stopped, or the round only waits). Samples a model
    already has are not evaluated again: when they already cover a round, the next look is taken
    at once."""
    payload = payload or _payload(conn, job_id)
    rule = rule_of(payload["adaptive"])
    stored = stored_benchmark_name(benchmark)
    seeds = list(payload["seeds"])
    state = payload.setdefault("rounds", {}).get(benchmark) or {"round": -1, "full_size": None}
    sizes = [
        sp["full_size"]
        for _, sp in adaptive_db.round_shards(conn, job_id, benchmark)
        if sp.get("full_size") is not None
    ]
    full = min(sizes) if sizes else state["full_size"] or adaptive_db.full_size(conn, stored)
    last_n: list[int] | None = None
    while True:
        looks = [_pair_look(conn, rule, p, stored, seeds, full) for p in payload["pairs"]]
        planned = []  # (model, seed, start, end)
        for name, end in model_ends(looks).items():
            _, _, chash, mid = _shard_target(conn, payload, name)
            for seed in seeds:
                start, whole = adaptive_db.stored_prefix(conn, mid, benchmark, seed, chash)
                end_here = end if full is None else min(end, full)
                if not whole and start < end_here:
                    planned.append((name, seed, start, end_here))
        if planned or all(p.stopped for p in looks):
            break
        n_now = [p.n for p in looks]
        if n_now == last_n:  # stored prefixes cover the round, yet no paired sample came: the end
            looks = [
                p
                if p.stopped
                else PairLook(
                    p.base, p.post, p.n, Stop.end, None, p.f_half_points, p.bt_half_points
                )
                for p in looks
            ]
            break
        last_n = n_now
    number = state["round"] + 1 if planned else state["round"]
    ids, waiting = [], []
    for name, seed, start, end in planned:
        shard_id, wait = _write_or_wait(
            conn, job_id, benchmark, payload, name, seed, start, end, number
        )
        ids += [shard_id] if shard_id is not None else []
        waiting += [wait] if wait is not None else []
    payload["rounds"][benchmark] = {
        "round": number,
        "full_size": full,
        "pairs": [p.to_dict() for p in looks],
    }
    if waiting:
        payload["rounds"][benchmark]["waiting"] = waiting
    adaptive_db.set_payload(conn, job_id, payload)
    return sorted(ids)


def _shard_target(conn: Connection, payload: dict, name: str) -> tuple[ModelIn, dict, str, int]:
    """A model of an adaptive job as its shards evaluate it: (model, shard config, config hash,
    model id); the hash is what stored prefixes and other jobs' shards are matched on."""
    model = validated(
        ModelIn, next(m for m in payload["models"] if m["name"] == name), strict=False
    )
    cfg = shard_config(model, validated(EvalConfigIn, payload["config"], strict=False))
    return model, cfg, config_hash(cfg), jobs_db.model_id(conn, name)


def _write_or_wait(
    conn: Connection,
    job_id: int,
    benchmark: str,
    payload: dict,
    name: str,
    seed: int,
    start: int,
    end: int,
    number: int,
) -> tuple[int | None, dict | None]:
    """Round ``number``'s slice [start, end) of one model and seed: (the id of the shard
    written, None), or (None, the wait) when an unfinished shard of another job already
    evaluates its first sample (its rows will be the stored prefix the next look reads)."""
    model, cfg, chash, model_id = _shard_target(conn, payload, name)
    cover = adaptive_db.unfinished_cover(conn, model_id, benchmark, seed, chash, start)
    if cover is not None:
        return None, {"shard": cover, "model": name, "seed": seed, "start": start, "end": end}
    spec = {
        "model": model.model_dump(mode="json"),
        "config": cfg,
        "slice": {
            "start": start,
            "end": end,
            "order": stored_benchmark_name(benchmark),
            "round": number,
        },
    }
    [(shard_id, _)] = jobs_db.insert_evaluation_shards(
        conn,
        job_id=job_id,
        model_id=model_id,
        config_hash=chash,
        spec=spec,
        rows=[(benchmark, seed, ShardStatus.queued)],
    )
    return shard_id, None


def _round_complete(conn: Connection, job_id: int, benchmark: str, state: dict) -> bool:
    """Whether the current round of the job on the benchmark is over: its own shards done and
    the shards it waits for finished one way or another."""
    own = [
        st
        for st, sp in adaptive_db.round_shards(conn, job_id, benchmark)
        if (sp.get("slice") or {}).get("round") == state["round"]
    ]
    waited = [jobs_db.shard_status(conn, w["shard"]) for w in state.get("waiting", ())]
    finished = (ShardStatus.done, ShardStatus.reused)  # reused: another shard evaluated it
    return all(st in finished for st in own) and all(st in TERMINAL for st in waited)


def _open_waits(conn: Connection, payload: dict) -> int:
    """How many shards of other jobs an adaptive job's current rounds still wait for."""
    return sum(
        jobs_db.shard_status(conn, w["shard"]) not in TERMINAL
        for state in (payload.get("rounds") or {}).values()
        for w in state.get("waiting", ())
    )


def _wake_waiting(conn: Connection, shard_id: int) -> list[int]:
    """After a shard finished, failed or was cancelled: each adaptive job whose round waited for
    it. A failed or cancelled shard's slice is written again at once, for the waiting job
    (or waited for again, when yet another job's unfinished shard evaluates it); when the
    round is then over, the next look and round (a finished shard's rows are in the stored
    prefix the look reads). Returns the shards to send."""
    ids = []
    ended = jobs_db.shard_status(conn, shard_id)
    for job_id, benchmark in adaptive_db.jobs_waiting_on(conn, shard_id):
        payload = _payload(conn, job_id)
        state = payload["rounds"][benchmark]
        if ended != ShardStatus.done:
            waiting = []
            for w in state["waiting"]:
                if w["shard"] != shard_id:
                    waiting.append(w)
                    continue
                new_id, wait = _write_or_wait(
                    conn,
                    job_id,
                    benchmark,
                    payload,
                    w["model"],
                    w["seed"],
                    w["start"],
                    w["end"],
                    state["round"],
                )
                ids += [new_id] if new_id is not None else []
                waiting += [wait] if wait is not None else []
            state["waiting"] = waiting
            adaptive_db.set_payload(conn, job_id, payload)
        if _round_complete(conn, job_id, benchmark, state):
            ids += _advance(conn, job_id, benchmark, payload)
        update_job_status(conn, job_id)
    return ids


def _after_round(conn: Connection, shard: dict) -> list[int]:
    """After an adaptive shard finished: when it was the last of its round (and the job goes
    on), the next look and round. A repeated finish of an earlier round's shard does nothing."""
    if jobs_db.job_status(conn, shard["job_id"]) == JobStatus.cancelled:
        return []
    payload = _payload(conn, shard["job_id"])
    state = payload.get("rounds", {}).get(shard["benchmark"])
    number = shard["spec"]["slice"].get("round", 0)
    if not payload.get("adaptive") or state is None or state["round"] != number:
        return []
    if not _round_complete(conn, shard["job_id"], shard["benchmark"], state):
        return []
    return _advance(conn, shard["job_id"], shard["benchmark"], payload)
