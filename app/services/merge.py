"""Merge sweeps (issue 54): mixing a pair's base back into its post model at several mixes, each
merged checkpoint built and evaluated by the workers, the whole stored as a series along the mix.

A sweep is one job. Its shards:

- the pair's own models, the ends of the sweep (mix 0 is the base, mix 1 the post model): one
  evaluation shard per (model, benchmark, seed) as any job writes them, ``reused`` where the
  model was evaluated there under the same eval config (the usual case: they were evaluated
  before the pair was made);
- per mix strictly between 0 and 1, one ``merge`` shard and its evaluation shards. The merge
  shard's worker builds the checkpoint (``forgetmap.worker.merge_job``), runs the evaluation
  shards itself (the checkpoint lies on its disk only, so they are never sent alone:
  ``shards.parent_id``) and removes it unless kept. A mix whose evaluations are all stored
  (a kept checkpoint evaluated before) is ``reused`` and not built.

The sweep's series (axis ``mix``) holds each merged model at its mix in thousandths and the post
model at 1000, each with its pair against the base (stage ``merge`` for the merged ones), so the
series page, the map and the drill-down read a sweep as they read a training run.
"""

from __future__ import annotations

from forgetmap.analysis.merge_choice import MixScore, Objective, best_mix
from forgetmap.contract.jobs import EvalConfigIn, ModelIn, ShardKind
from forgetmap.contract.merge import (
    MERGE_FOLDER,
    MIX_STEPS,
    MergeJobIn,
    MergeShardSpec,
    folder_name,
    mix_step,
)
from forgetmap.core.errors import InputError
from forgetmap.db import jobs as jobs_db
from forgetmap.db import merge as merge_db
from forgetmap.db import series as series_db
from forgetmap.db.queries import pair_id_by_names
from forgetmap.db.store import Connection
from forgetmap.services.jobs import (
    config_hash,
    evaluation_shards,
    register_models,
    update_job_status,
)


def what_to_evaluate(
    conn: Connection, request: MergeJobIn
) -> tuple[list[str], list[int], EvalConfigIn]:
    """The sweep's benchmarks, seeds and eval config: the request's, or for what it leaves out
    the post model's newest evaluation by the workers."""
    newest = merge_db.newest_evaluation(conn, request.post.name)
    if newest is None and (request.benchmarks is None or request.seeds is None):
        raise InputError(
            f"{request.post.name} was never evaluated by the workers (its results were "
            "imported): give the sweep its benchmarks and seeds"
        )
    stored_config, stored_benchmarks, stored_seeds = newest or ({}, [], [])
    config = request.config or EvalConfigIn.model_validate(
        {k: stored_config[k] for k in EvalConfigIn.model_fields if k in stored_config}
    )
    return (
        request.benchmarks or stored_benchmarks,
        request.seeds or stored_seeds,
        config,
    )


def create_merge_job(conn: Connection, request: MergeJobIn) -> tuple[int, list[int]]:
    """Write a sweep's job, shards and series (module docstring); returns (job id, shard ids to
    send). The pair must be stored: a sweep is read against its flips."""
    request.check()
    if request.base.revision or request.post.revision:
        raise InputError(
            "a merge reads each model at its folder or hub id as it is; a revision is not "
            "supported (download that revision into a folder under a model root)"
        )
    if pair_id_by_names(conn, request.base.name, request.post.name) is None:
        raise InputError(
            f"no pair {request.base.name} -> {request.post.name}: a sweep merges a stored pair "
            "back (evaluate both models and add the pair first)"
        )
    benchmarks, seeds, config = what_to_evaluate(conn, request)
    request.check_size(len(benchmarks), len(seeds))
    merged = {
        mix: ModelIn(
            name=request.merged_name(mix),
            path=f"{MERGE_FOLDER}/{folder_name(request.merged_name(mix))}",
            prompting=request.post.prompting,
        )
        for mix in request.inner_mixes()
    }
    register_models(conn, [request.base, request.post, *merged.values()])
    job_id = jobs_db.insert_job(conn, ShardKind.merge, request.payload(benchmarks, seeds, config))
    to_send: list[int] = []
    for end in (request.base, request.post):
        to_send += evaluation_shards(conn, job_id, end, benchmarks, seeds, config)
    for mix, model in merged.items():
        spec = MergeShardSpec.model_validate(
            {
                "base": request.base.model_dump(mode="json"),
                "post": request.post.model_dump(mode="json"),
                "method": request.method,
                "mix": mix,
                "model": model.name,
                "folder": folder_name(model.name),
                "keep": request.keep,
            }
        )
        merge_id = jobs_db.insert_shard(
            conn,
            job_id=job_id,
            model=model.name,
            benchmark="merge",
            seed=0,
            config_hash=config_hash(spec.recipe()),
            spec=spec.model_dump(mode="json"),
            status="queued",
            kind=ShardKind.merge,
        )
        queued = evaluation_shards(
            conn, job_id, model, benchmarks, seeds, config, parent_id=merge_id
        )
        if queued:
            spec = spec.model_copy(update={"evaluations": queued})
            jobs_db.set_spec(conn, merge_id, spec.model_dump(mode="json"))
            to_send.append(merge_id)
        else:
            merge_db.finish_reused(conn, merge_id)
    name = request.series_name()
    steps = [(model.name, mix_step(mix)) for mix, model in merged.items()]
    series_db.add_checkpoints(conn, name, request.base.name, steps, stage="merge", axis="mix")
    series_db.add_checkpoints(
        conn, name, request.base.name, [(request.post.name, MIX_STEPS)], axis="mix"
    )
    update_job_status(conn, job_id)
    return job_id, sorted(to_send)


# ------------------------------------------------------------------------------ the choice


def sweep_scores(records: list[dict], category: str = "Total") -> list[MixScore]:
    """A sweep's mixes scored against the base in ``category`` (its series' records,
    ``forgetmap.services.series.series_records``), with the base as mix 0. The F_true interval
    is the 95% t-interval across seeds (none with one seed: the mean itself)."""
    scores = [MixScore(0.0, 0.0, 0.0, 0.0, 0.0)]
    for r in records:
        if r["category"] != category:
            continue
        margin = r["f_true_margin"] or 0.0
        scores.append(
            MixScore(
                r["step"] / MIX_STEPS,
                r["f_true"],
                r["bt_true"],
                max(r["f_true"] - margin, 0.0),
                r["f_true"] + margin,
            )
        )
    return scores


def sweep_choice(
    records: list[dict],
    *,
    category: str = "Total",
    objective: Objective = "forget_least",
    keep_gains: float = 0.0,
) -> dict:
    """Which mix of a sweep ``objective`` picks in ``category`` (forgetmap.analysis.merge_choice),
    with every mix's scores; an InputError when the category has no score at mix 1."""
    scores = sweep_scores(records, category)
    if not any(s.mix == 1.0 for s in scores):
        raise InputError(
            f"the sweep has no score at mix 1 (the post model) in {category!r}: evaluate the "
            "post model, or name a category the sweep has"
        )
    choice = best_mix(scores, objective=objective, keep_gains=keep_gains)
    seeds = {r["seeds"] for r in records if r["category"] == category}
    return {
        "category": category,
        "objective": objective,
        "keep_gains": keep_gains,
        "mix": choice.mix,
        "beats_post": choice.beats_post,
        "reason": choice.reason,
        "one_seed": seeds == {1},
        "mixes": [
            {
                "mix": s.mix,
                "f_true": s.f_true,
                "bt_true": s.bt_true,
                "f_low": s.f_low,
                "f_high": s.f_high,
            }
            for s in scores
        ],
    }
