"""Merge sweeps and soups (issue 54): mixing a pair's base back into its post model at several
mixes, or averaging a training run's last checkpoints, each merged checkpoint built and evaluated
by the workers, the whole stored as a series along the mix (or the soup's size).

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

A soup (``SoupJobIn``) is the same machinery on a stored training run: per size N a merge shard
averaging its last N checkpoints (mergekit's ``linear``, equal weights) with its evaluation
shards, the last checkpoint's own evaluations reused, and the series ``RUN soups`` whose axis is
the size (``soup``: the last checkpoint at 1, each soup at N).
"""

from __future__ import annotations

from forgetmap.analysis.merge_choice import MixScore, Objective, best_mix
from forgetmap.contract.jobs import MAX_SHARDS_PER_JOB, EvalConfigIn, ModelIn, Prompting, ShardKind
from forgetmap.contract.merge import (
    DEFAULT_SOUPS,
    DENSITY_METHODS,
    MERGE_FOLDER,
    MIX_STEPS,
    MergeJobIn,
    MergeShardSpec,
    SoupJobIn,
    folder_name,
    mix_step,
)
from forgetmap.contract.shards import ShardModel
from forgetmap.core.errors import InputError
from forgetmap.db import jobs as jobs_db
from forgetmap.db import merge as merge_db
from forgetmap.db import queries
from forgetmap.db import series as series_db
from forgetmap.db.queries import pair_id_by_names
from forgetmap.db.store import Connection
from forgetmap.services.jobs import (
    config_hash,
    evaluation_shards,
    register_models,
    update_job_status,
)

Evaluation = tuple[list[str], list[int], EvalConfigIn]
"""What merges are evaluated on: benchmarks, seeds and one eval config."""


def what_to_evaluate(
    conn: Connection, request: MergeJobIn | SoupJobIn, model: str
) -> list[Evaluation]:
    """What a sweep's or soup's merges are evaluated on, like ``model`` (the post model, the
    run's last checkpoint): with none of ``benchmarks``, ``seeds``, ``config`` given, every eval
    config the workers evaluated ``model`` under, each with its benchmarks and seeds (a base
    model's multiple-choice benchmarks by likelihood and its generative ones by generation are
    two); else one, the request's, with what it leaves out taken from the newest of them."""
    stored = merge_db.worker_evaluations(conn, model)
    groups = [
        (
            benchmarks,
            seeds,
            EvalConfigIn.model_validate(
                {k: config[k] for k in EvalConfigIn.model_fields if k in config}
            ),
        )
        for config, benchmarks, seeds in stored
    ]
    if request.benchmarks is None and request.seeds is None and request.config is None and groups:
        return groups
    if not groups and (request.benchmarks is None or request.seeds is None):
        raise InputError(
            f"{model} was never evaluated by the workers (its results were imported): give the "
            "merges their benchmarks and seeds"
        )
    newest = groups[0] if groups else ([], [], EvalConfigIn())
    return [
        (
            request.benchmarks or newest[0],
            request.seeds or newest[1],
            request.config or newest[2],
        )
    ]


def check_size(evaluations: list[Evaluation], models: int, what: str) -> None:
    """An InputError when ``models`` evaluated on ``evaluations`` pass a job's shard limit."""
    shards = models * sum(len(b) * len(s) for b, s, _ in evaluations)
    if shards > MAX_SHARDS_PER_JOB:
        raise InputError(
            f"{what} has {shards} evaluations (models x benchmarks x seeds), over the limit of "
            f"{MAX_SHARDS_PER_JOB}; ask for fewer merges or benchmarks"
        )


def evaluations_payload(evaluations: list[Evaluation]) -> list[dict]:
    return [
        {"benchmarks": b, "seeds": s, "config": c.model_dump(mode="json")}
        for b, s, c in evaluations
    ]


def evaluations_of(
    conn: Connection,
    job_id: int,
    model: ModelIn,
    evaluations: list[Evaluation],
    *,
    parent_id: int | None = None,
) -> list[int]:
    """``model``'s evaluation shards under each of ``evaluations``; the queued ones' ids."""
    return [
        shard
        for benchmarks, seeds, config in evaluations
        for shard in evaluation_shards(
            conn, job_id, model, benchmarks, seeds, config, parent_id=parent_id
        )
    ]


def merged_model(name: str, prompting: Prompting) -> ModelIn:
    """A merge's model: its folder under the worker's merge folder, prompted as ``prompting``."""
    return ModelIn(name=name, path=f"{MERGE_FOLDER}/{folder_name(name)}", prompting=prompting)


def merge_shard(
    conn: Connection,
    job_id: int,
    spec: MergeShardSpec,
    model: ModelIn,
    evaluations: list[Evaluation],
) -> list[int]:
    """Write one merge shard and its evaluation shards (never sent alone); returns the merge
    shard's id to send, or nothing when every evaluation is stored (it ends ``reused``)."""
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
    queued = evaluations_of(conn, job_id, model, evaluations, parent_id=merge_id)
    if not queued:
        merge_db.finish_reused(conn, merge_id)
        return []
    spec = spec.model_copy(update={"evaluations": queued})
    jobs_db.set_spec(conn, merge_id, spec.model_dump(mode="json"))
    return [merge_id]


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
    evaluations = what_to_evaluate(conn, request, request.post.name)
    check_size(evaluations, len(request.inner_mixes()) + 2, "this sweep")
    merged = {
        mix: merged_model(request.merged_name(mix), request.post.prompting)
        for mix in request.inner_mixes()
    }
    register_models(conn, [request.base, request.post, *merged.values()])
    payload = {
        **request.model_dump(mode="json"),
        "series": request.series_name(),
        "evaluations": evaluations_payload(evaluations),
        "pairs": [{"base": request.base.name, "post": request.post.name}],
    }
    job_id = jobs_db.insert_job(conn, ShardKind.merge, payload)
    to_send: list[int] = []
    for end in (request.base, request.post):
        to_send += evaluations_of(conn, job_id, end, evaluations)
    for mix, model in merged.items():
        spec = MergeShardSpec.model_validate(
            {
                "base": request.base.model_dump(mode="json"),
                "post": request.post.model_dump(mode="json"),
                "method": request.method,
                "mix": mix,
                "density": request.density if request.method in DENSITY_METHODS else 1.0,
                "model": model.name,
                "folder": folder_name(model.name),
                "keep": request.keep,
            }
        )
        to_send += merge_shard(conn, job_id, spec, model, evaluations)
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


# ------------------------------------------------------------------------------------ soups


def _stored_model(specs: dict, name: str, what: str) -> ModelIn:
    """A stored model as the workers evaluated it (its checkpoint and prompting)."""
    spec = specs.get(name) or {}
    if not spec.get("path"):
        raise InputError(
            f"{what} {name} has no stored checkpoint (its results were imported): a soup needs "
            "each checkpoint's folder"
        )
    return ModelIn.model_validate({k: spec[k] for k in ModelIn.model_fields if k in spec})


def create_soup_job(conn: Connection, request: SoupJobIn) -> tuple[int, list[int]]:
    """Write the soups of a stored training run (``SoupJobIn``): per size N one merge shard that
    averages the run's last N checkpoints, with its evaluation shards, and the series ``RUN
    soups`` along the size (the last checkpoint at 1). Returns (job id, shard ids to send)."""
    run = series_db.get_series(conn, name=request.series)
    if run is None:
        raise InputError(
            f"no series {request.series!r}: a soup averages a stored training run's last "
            "checkpoints (GET /api/series lists them)"
        )
    if run["axis"] != "step":
        raise InputError(f"series {request.series!r} is a merge sweep, not a training run")
    checkpoints = [c["post"] for c in run["checkpoints"]]
    if len(checkpoints) < 2:
        raise InputError(f"series {request.series!r} has fewer than two checkpoints to average")
    sizes = sorted(set(request.sizes or [n for n in DEFAULT_SOUPS if n <= len(checkpoints)]))
    too_long = [n for n in sizes if n > len(checkpoints)]
    if not sizes or too_long:
        raise InputError(
            f"series {request.series!r} has {len(checkpoints)} checkpoints: a soup averages 2 "
            f"to {len(checkpoints)} of them, not {', '.join(map(str, too_long))}"
        )
    specs = queries.model_specs(conn, checkpoints)
    stored = {name: _stored_model(specs, name, "checkpoint") for name in checkpoints[-sizes[-1] :]}
    last = stored[checkpoints[-1]]
    evaluations = what_to_evaluate(conn, request, last.name)
    check_size(evaluations, len(sizes) + 1, "these soups")
    soups = {n: merged_model(request.soup_name(n), last.prompting) for n in sizes}
    register_models(conn, list(soups.values()))
    payload = {
        **request.model_dump(mode="json"),
        "sizes": sizes,
        "evaluations": evaluations_payload(evaluations),
        "pairs": [{"base": run["base"], "post": soup.name} for soup in soups.values()],
    }
    job_id = jobs_db.insert_job(conn, ShardKind.merge, payload)
    to_send = evaluations_of(conn, job_id, last, evaluations)
    for n, soup in soups.items():
        spec = MergeShardSpec(
            method="soup",
            checkpoints=[
                ShardModel.model_validate(stored[c].model_dump()) for c in checkpoints[-n:]
            ],
            model=soup.name,
            folder=folder_name(soup.name),
            keep=request.keep,
        )
        to_send += merge_shard(conn, job_id, spec, soup, evaluations)
    name = request.soup_series()
    steps = [(soup.name, n) for n, soup in soups.items()]
    series_db.add_checkpoints(conn, name, run["base"], steps, stage="merge", axis="soup")
    series_db.add_checkpoints(conn, name, run["base"], [(last.name, 1)], axis="soup")
    update_job_status(conn, job_id)
    return job_id, sorted(to_send)
