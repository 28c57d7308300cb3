"""Forgetting along a training run: a series' records per (checkpoint, category).

A series is a base model and its checkpoints in step order; each checkpoint is scored as the pair
(base, checkpoint), so every number here is the map's own category record of that pair (same
macro/micro aggregation, same noise floor), taken from the map's cache and put in step order.
"""

from __future__ import annotations

from pathlib import Path

from forgetmap.contract.base import validated
from forgetmap.contract.jobs import (
    CheckpointSubmission,
    EvaluateJobIn,
    JobStatus,
    ModelIn,
    SeriesJobIn,
)
from forgetmap.core import metrics
from forgetmap.core.errors import InputError
from forgetmap.db import series as series_db
from forgetmap.db.queries import model_specs
from forgetmap.db.store import Store
from forgetmap.runtime.paths import ModelRules
from forgetmap.services import jobs
from forgetmap.services.map import MapQuery, category_sort_key
from forgetmap.services.map_cache import MapCache
from forgetmap.services.watch import step_of

SERIES_FIELDS = (
    "series",
    "step",
    "post",
    "category",
    "f_true",
    "f_true_std",
    "bt_true",
    "bt_true_std",
    "noise_floor",
    "n_benchmarks",
)
SERIES_EXTRA = ("seeds", "f", "bt", "f_max", "bt_max", "pair_id", "clears_noise")
SERIES_MARGINS = ("f_true_margin", "bt_true_margin")
"""The half-widths of the 95% t-interval across seeds that ``clears_noise`` tests and the series
page draws as bands (None with one seed)."""


def parse_checkpoint(text: str) -> tuple[str, int]:
    """``MODEL@STEP`` -> (model, step); the model name may itself contain '@'."""
    model, sep, step = text.rpartition("@")
    if not sep or not model.strip():
        raise InputError(f"checkpoint {text!r} must be MODEL@STEP, e.g. sft-run-ckpt500@500")
    try:
        value = int(step)
    except ValueError:
        raise InputError(f"step in {text!r} must be an integer, e.g. {model}@500") from None
    if value < 0:
        raise InputError(f"step in {text!r} must be >= 0")
    return model.strip(), value


def series_groups(cache: MapCache) -> list[dict]:
    """Every series with its (step, pair id) list: the map shows a series as one row."""

    def load() -> list[dict]:
        with cache.store.read() as conn:
            steps = series_db.pair_steps(conn)
        groups: dict[int, dict] = {}
        for pair_id, (series_id, name, step) in steps.items():
            group = groups.setdefault(series_id, {"id": series_id, "name": name, "steps": []})
            group["steps"].append({"step": step, "pair_id": pair_id})
        return list(groups.values())

    return cache.cache.get(("series-groups",), load)


def find_series(
    store: Store, *, series_id: int | None = None, name: str | None = None
) -> dict | None:
    with store.read() as conn:
        return series_db.get_series(conn, series_id=series_id, name=name)


def _by_pair(cache: MapCache, aggregate: str) -> dict[int, list[dict]]:
    """The map's category records grouped by pair (cached until the next write)."""

    def group() -> dict[int, list[dict]]:
        out: dict[int, list[dict]] = {}
        for r in cache.records(MapQuery(level="category", aggregate=aggregate)):
            out.setdefault(r["pair_id"], []).append(r)
        return out

    return cache.cache.get(("map-by-pair", aggregate), group)


def series_records(cache: MapCache, series: dict, aggregate: str = "macro") -> list[dict]:
    """One record per (checkpoint, category) and per checkpoint "Total", by step then category.

    ``clears_noise``: F_true lies above its noise floor beyond its 95% t-interval across seeds
    (None with one seed or no noise floor); ``f_true_margin`` and ``bt_true_margin``: that
    interval's half-width (None with one seed), which the page draws as bands."""
    by_pair = _by_pair(cache, aggregate)
    out = []
    for ck in series["checkpoints"]:
        rows = sorted(
            by_pair.get(ck["pair_id"], []), key=lambda r: category_sort_key(r["category"])
        )
        for r in rows:
            record = {"series": series["name"], "step": ck["step"], "post": ck["post"]}
            for name in SERIES_FIELDS[3:] + SERIES_EXTRA[:-1]:
                record[name] = r[name]
            record["clears_noise"] = metrics.clears_noise_floor(
                r["f_true"], r["f_true_std"], r["seeds"], r["noise_floor"]
            )
            for name in SERIES_MARGINS:  # the page's bands: the star's own interval
                mean = name.removesuffix("_margin")
                record[name] = metrics.t_margin(r[f"{mean}_std"], r["seeds"])
            out.append(record)
    return out


def first_clear_steps(records: list[dict]) -> dict[str, int]:
    """Per category, the first step whose F_true clears its noise floor beyond its CI."""
    first: dict[str, int] = {}
    for r in sorted(records, key=lambda r: r["step"]):
        if r["clears_noise"] and r["category"] not in first:
            first[r["category"]] = r["step"]
    return first


def series_view(cache: MapCache, series: dict, aggregate: str = "macro") -> dict:
    """Everything the series page and ``GET /api/series/{id}`` show, kept until the next write."""

    def build() -> dict:
        records = series_records(cache, series, aggregate)
        categories = sorted({r["category"] for r in records}, key=category_sort_key)
        return {
            "id": series["id"],
            "name": series["name"],
            "base": series["base"],
            "axis": series["axis"],
            "steps": [c["step"] for c in series["checkpoints"]],
            "checkpoints": [
                {k: c[k] for k in ("step", "post", "pair_id")} for c in series["checkpoints"]
            ],
            "categories": categories,
            "first_clear": first_clear_steps(records),
            "records": records,
        }

    return cache.cache.get(("series", series["id"], aggregate), build)


# ------------------------------------------------------------------------ submitting a checkpoint

MAX_ATTEMPTS = 3  # evaluations of one checkpoint folder before the watcher gives up on it


def checkpoint_model_name(series: str, step: int) -> str:
    return f"{series}/checkpoint-{step}"


def submit_checkpoint(
    conn, body: CheckpointSubmission, rules: ModelRules
) -> tuple[dict, list[int]]:
    """Evaluate a checkpoint folder once and place it in its series by step.

    A folder already submitted is not submitted again (the record is in the database, so this
    holds across watcher restarts); if its evaluation failed it is retried, up to MAX_ATTEMPTS.
    The base is left out of the job when its shards under the same eval config are already done
    or on their way. The folder and the base are checked by ``rules`` (forgetmap.runtime.paths).
    Returns (what happened, shard ids to send)."""
    folder = rules.check_folder(body.folder)
    found = series_db.get_series(conn, name=body.series)
    if found is not None:
        before = series_db.submission(conn, found["id"], folder)
        if before is not None:
            if before["job_status"] != JobStatus.failed:
                return {"status": "already", "job_id": before["job_id"], "step": body.step}, []
            if before["attempts"] >= MAX_ATTEMPTS:
                return {"status": "gave_up", "job_id": before["job_id"], "step": body.step}, []
            shard_ids = jobs.retry_failed(conn, before["job_id"])
            series_db.record_submission(
                conn,
                found["id"],
                folder,
                body.step,
                checkpoint_model_name(body.series, body.step),
                before["job_id"],
            )
            return {
                "status": "retried",
                "job_id": before["job_id"],
                "step": body.step,
                "attempt": before["attempts"] + 1,
            }, shard_ids
    base_path = body.base_path or model_specs(conn, [body.base]).get(body.base, {}).get("path")
    if not base_path:
        raise InputError(
            f"no checkpoint known for base {body.base!r}: give its path or Hub id (--base-path)"
        )
    base = validated(
        ModelIn,
        {"name": body.base, "path": rules.check(base_path), "prompting": body.base_prompting},
    )
    name = checkpoint_model_name(body.series, body.step)
    checkpoint = validated(ModelIn, {"name": name, "path": folder, "prompting": body.prompting})
    chash = jobs.config_hash(jobs.shard_config(base, body.config))
    names = [list({b, jobs.stored_benchmark_name(b)}) for b in body.benchmarks]
    base_pending = series_db.covered_by_shards(conn, body.base, names, body.seeds, chash)
    request = EvaluateJobIn(
        models=[checkpoint] if base_pending else [base, checkpoint],
        benchmarks=body.benchmarks,
        seeds=body.seeds,
        config=body.config,
    )
    job_id, shard_ids = jobs.create_job(conn, request)
    series_id, _, _ = series_db.add_checkpoints(
        conn, body.series, body.base, [(name, body.step)], stage=body.stage
    )
    series_db.record_submission(conn, series_id, folder, body.step, name, job_id)
    return {"status": "submitted", "job_id": job_id, "step": body.step, "model": name}, shard_ids


def submit_run(conn, run: SeriesJobIn, rules: ModelRules) -> tuple[dict, list[int]]:
    """A whole run at once (``POST /api/jobs`` with ``"kind": "series"``): a base plus a list of
    checkpoint folders or glob patterns (``/runs/sft/checkpoint-*``), each submitted as the watcher
    would (steps from the folder names or trainer_state.json; folders already submitted are not
    evaluated again; the base once). Patterns and folders are confined to the roots by ``rules``
    (forgetmap.runtime.paths.ModelRules.folders). Returns (summary, shard ids to send)."""
    folders: dict[str, int] = {}
    for entry in run.checkpoints:
        matches = rules.folders(entry)
        if not matches:
            raise InputError(f"no checkpoint folder matches {entry!r}")
        for match in matches:
            checkpoint = Path(match)
            if not checkpoint.is_dir():
                raise InputError(f"{match!r} is not a checkpoint folder")
            step = step_of(checkpoint)
            if step is None:
                raise InputError(
                    f"no step for {match!r}: name it checkpoint-<step> or add trainer_state.json"
                )
            folders[str(checkpoint)] = step
    answers, shard_ids = [], []
    for folder, step in sorted(folders.items(), key=lambda item: item[1]):
        fields = run.model_dump(exclude={"checkpoints", "kind"})
        answer, to_send = submit_checkpoint(
            conn, CheckpointSubmission(**fields, folder=folder, step=step), rules
        )
        answers.append(answer)
        shard_ids += to_send
    job_ids = list(dict.fromkeys(a["job_id"] for a in answers))
    return {"series": run.series, "jobs": job_ids, "checkpoints": answers}, shard_ids
