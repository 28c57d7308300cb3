"""A merge shard on its worker (issue 54, forgetmap.services.merge): build one merged checkpoint (a
pair's mix, or a soup of a run's last checkpoints), run the evaluation shards the app wrote for
it, remove it unless kept.

The checkpoint goes to ``FORGETMAP_MERGE_DIR`` (default: ``forgetmap-merges`` under the first
model root) as ``FOLDER``, built aside and renamed into place (``forgetmap.worker.merge``), with a
``forgetmap-merge.json`` beside its weights naming the recipe. A folder already there with the same
recipe is used as it is (a kept merge, or the build of an earlier delivery of this shard whose
worker died); one with another recipe fails the shard rather than evaluate the wrong weights.

The evaluation shards are claimed one by one by this worker under the merge shard's delivery,
run as any evaluation shard (progress, batches of rows, finish), and their progress keeps the
merge shard alive. One that fails is marked failed and the others go on; the merge shard then
fails naming them, and a retry of the job runs it again (the build is skipped when kept).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from forgetmap.contract.jobs import ShardStatus
from forgetmap.contract.merge import MERGE_FOLDER, MergeShardSpec
from forgetmap.contract.shards import ClaimedShard
from forgetmap.runtime.paths import ModelPathError, ModelRules
from forgetmap.worker.client import AppClient
from forgetmap.worker.evaluate import EngineCache, ShardFailed, run_shard, shard_spec
from forgetmap.worker.merge import build_merge, pair_config, soup_config
from forgetmap.worker.settings import WorkerSettings

log = logging.getLogger("forgetmap.worker")
RECIPE_FILE = "forgetmap-merge.json"


def merge_dir(settings: WorkerSettings) -> Path:
    """Where this worker builds merges; a ShardFailed naming the setting when it has nowhere."""
    if settings.merge_dir is not None:
        return Path(settings.merge_dir)
    if not settings.model_roots:
        raise ShardFailed(
            "a merge needs a folder to build in: set FORGETMAP_MERGE_DIR or FORGETMAP_MODEL_ROOTS "
            "on the worker"
        )
    return Path(settings.model_roots[0]) / MERGE_FOLDER


def _recipe(spec: MergeShardSpec) -> dict:
    return {**spec.recipe(), "keep": spec.keep}


def _merge_config(spec: MergeShardSpec, rules: ModelRules) -> tuple[dict, str]:
    """mergekit's configuration of ``spec`` (each model's path checked against the roots) and
    the folder whose tokenizer the merge takes: the post model's, or the run's last
    checkpoint's."""
    try:
        if spec.method == "soup":
            paths = [rules.check(c.path) for c in spec.checkpoints]
            return soup_config(paths), paths[-1]
        if spec.base is None or spec.post is None:
            raise ShardFailed("the merge shard's spec names no pair")
        base, post = rules.check(spec.base.path), rules.check(spec.post.path)
    except ModelPathError as exc:
        raise ShardFailed(str(exc)) from exc
    return pair_config(spec.method, base, post, spec.mix, density=spec.density), post


def built_merge(spec: MergeShardSpec, settings: WorkerSettings) -> Path:
    """The merged checkpoint of ``spec``: found (same recipe) or built now."""
    config, tokenizer_from = _merge_config(spec, ModelRules.of(settings))
    folder = merge_dir(settings) / spec.folder
    recipe_file = folder / RECIPE_FILE
    if folder.exists():
        found = json.loads(recipe_file.read_text()) if recipe_file.is_file() else None
        if found is None or {k: v for k, v in found.items() if k != "keep"} != spec.recipe():
            raise ShardFailed(
                f"{folder} holds another model than this merge; move it away or give the "
                "sweep another series name"
            )
        log.info("merge %s: using the checkpoint already at %s", spec.model, folder)
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        build_merge(
            config,
            folder,
            tokenizer_from=tokenizer_from,
            notes={RECIPE_FILE: json.dumps(_recipe(spec), sort_keys=True)},
        )
    except ImportError as exc:
        raise ShardFailed(
            f"mergekit is not installed on this worker ({exc}): pip install 'forgetmap[merge]'"
        ) from exc
    except (OSError, ValueError, RuntimeError) as exc:
        raise ShardFailed(f"the merge failed: {type(exc).__name__}: {exc}") from exc
    return folder


def _remove(folder: Path, spec: MergeShardSpec) -> None:
    """Remove a merge after its evaluations unless this sweep or the one that built it keeps it."""
    recipe_file = folder / RECIPE_FILE
    kept = spec.keep or (
        recipe_file.is_file() and json.loads(recipe_file.read_text()).get("keep", False)
    )
    if not kept and folder.exists():
        shutil.rmtree(folder, ignore_errors=True)
        log.info("merge %s: removed %s", spec.model, folder)


def run_merge_shard(
    shard: ClaimedShard,
    *,
    client: AppClient,
    engines: EngineCache,
    settings: WorkerSettings,
    delivery: str | None,
) -> str:
    """Build, evaluate, remove (module docstring). Returns 'done' or 'cancelled'; raises
    ShardFailed."""
    spec = shard_spec(shard, MergeShardSpec)
    total = len(spec.evaluations)
    if client.progress(shard.id, 0, total) == ShardStatus.cancelled:
        return ShardStatus.cancelled
    engines.close()  # the merge holds two models in memory; the engine's model is not needed
    folder = built_merge(spec, settings)
    failed: list[str] = []
    try:
        for done, child_id in enumerate(spec.evaluations, start=1):
            child = client.start(child_id, settings.name, delivery)
            if child is not None:
                try:
                    status = run_shard(
                        child,
                        client=client,
                        engines=engines,
                        settings=settings,
                        model_path=str(folder),
                    )
                except ShardFailed as exc:
                    log.error("shard %d (of merge %d) failed: %s", child_id, shard.id, exc)
                    client.fail(child_id, str(exc))
                    failed.append(f"shard {child_id}: {exc}")
                    status = ShardStatus.failed
                if status == ShardStatus.cancelled:
                    return ShardStatus.cancelled
            if client.progress(shard.id, done, total) == ShardStatus.cancelled:
                return ShardStatus.cancelled
    finally:
        engines.close()  # its files go next
        _remove(folder, spec)
    if failed:
        raise ShardFailed(
            f"{len(failed)} of the {total} evaluations of {spec.model} failed; the first: "
            f"{failed[0]}"
        )
    return client.finish(shard.id, None)  # its evaluations recorded the merge's fingerprint
