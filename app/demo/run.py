"""`forgetmap demo`: build the zoo once, evaluate every pair through the real worker, serve.

Stages, each with a progress bar: building the zoo (cached under data/demo, rebuilt only when its
recipe or code changes), then the evaluation jobs (every model, and the checkpoints of the two SFT
runs, which become two checkpoint series over the base) and two recoverability jobs (narrow SFT and
SFT with replay, on the zoo's pretraining text; app + a local worker on the embedded queue,
transformers engine), then the dashboard keeps serving until Ctrl-C.
"""

from __future__ import annotations

import json
import os
import time
from itertools import chain, zip_longest
from pathlib import Path
from typing import Any

from forgetmap.contract.jobs import EvalConfigIn, EvaluateJobIn, Mode, ModelIn, Prompting
from forgetmap.contract.recovery import CorpusIn, RecoverJobIn, RecoveryOptionsIn
from forgetmap.core.recoverability_names import CONTROLS
from forgetmap.db import open_store
from forgetmap.db import series as series_db
from forgetmap.db.pairing import add_pair
from forgetmap.demo import suite
from forgetmap.demo.manifest import DEFAULT_RECIPE, Recipe
from forgetmap.demo.zoo import build_zoo, stage_names
from forgetmap.runtime.paths import check_model_path
from forgetmap.runtime.progress import LineProgress
from forgetmap.services.job_view import job_detail
from forgetmap.services.jobs import create_job
from forgetmap.services.recovery import create_recovery_job
from forgetmap.web.up import run_up
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

console = Console(stderr=True)


def _bar() -> Progress:
    return Progress(
        TextColumn("{task.description:<34}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
    )


def build(zoo_dir: Path, recipe: Recipe = DEFAULT_RECIPE):
    started = time.monotonic()
    if not console.is_terminal:  # a log: plain progress lines instead of a bar
        manifest = build_zoo(
            zoo_dir, recipe=recipe, progress=LineProgress("demo: build", console.file)
        )
    else:
        manifest = _build_with_bars(zoo_dir, recipe)
    how = "cached" if manifest.cached else "built"
    console.print(
        f"zoo {how} in {time.monotonic() - started:.1f}s: {len(manifest.models)} models, "
        f"{len(manifest.benchmarks)} benchmarks, {len(manifest.pairs)} pairs ({manifest.root})"
    )
    return manifest


def _build_with_bars(zoo_dir: Path, recipe: Recipe):
    with _bar() as bar:
        tasks = {name: bar.add_task(f"build {name}", total=None) for name in stage_names(recipe)}

        def progress(stage: str, done: int, total: int) -> None:
            if stage in tasks:
                bar.update(tasks[stage], completed=done, total=total)

        manifest = build_zoo(zoo_dir, recipe=recipe, progress=progress)
        for task in tasks.values():
            bar.update(task, completed=1, total=1) if bar.tasks[task].total is None else None
    return manifest


def model_root(manifest) -> Path:
    return manifest.root / "models"


def job_requests(manifest) -> list:
    """The evaluations the demo's pairs and series need: few-shot base prompting scores the
    options by log-likelihood and generates for numeric items; the chat model generates
    everywhere. A series checkpoint is evaluated like the zoo's other models of its prompting."""
    seeds = list(manifest.eval.get("seeds", [0, 1, 2]))
    mc = [f"local:{b.path.name}" for b in manifest.benchmarks if not b.generative]
    gen = [f"local:{b.path.name}" for b in manifest.benchmarks if b.generative]
    models = [*manifest.models, *manifest.checkpoint_models()]
    roots = [model_root(manifest)]
    base_models = [
        ModelIn(name=m.name, path=check_model_path(str(m.path), roots), prompting=Prompting.base)
        for m in models
        if m.prompting == "base"
    ]
    chat_models = [
        ModelIn(name=m.name, path=check_model_path(str(m.path), roots), prompting=Prompting.chat)
        for m in models
        if m.prompting == "chat"
    ]
    greedy: dict[str, Any]
    greedy = {
        "engine": "transformers",
        "temperature": 0.0,
        "top_p": 1.0,
        "max_tokens": int(manifest.eval.get("max_tokens", 8)),
        "shots": int(manifest.eval.get("shots", 3)),
    }

    def job(models: list[ModelIn], benchmarks: list[str], mode: Mode) -> EvaluateJobIn:
        return EvaluateJobIn(
            models=models,
            benchmarks=benchmarks,
            seeds=seeds,
            config=EvalConfigIn(mode=mode, **greedy),
        )

    requests = [job(base_models, mc, Mode.loglik), job(base_models, gen, Mode.generate)]
    if chat_models:
        requests.append(job(chat_models, mc + gen, Mode.generate))
    return requests


CORPUS = "pretrain.jsonl"
# narrow SFT (with the three controls) against SFT with replay (with the noise control only: the
# controls depend on the base, corpus and seed alone, so the other two would be repeated work)
RECOVERY_CONTROLS = {"sft": CONTROLS, "sft+replay": ("weight_noise",)}
RECOVERY_DOCS = 120


def corpus_dir(manifest) -> Path:
    return manifest.root / "corpora"


def write_corpus(manifest) -> Path:
    """The zoo's pretraining documents, categories interleaved, as a JSONL corpus for the
    recoverability analysis (the text whose loss post-training raised)."""
    path = corpus_dir(manifest) / CORPUS
    if not path.exists():
        per_category = [
            suite.corpus(
                c,
                manifest.recipe.seed,
                kind="pretrain",
                copies=1,
                scale=manifest.recipe.suite_scale,
            )
            for c in suite.CATEGORIES
        ]
        docs = [d for d in chain.from_iterable(zip_longest(*per_category)) if d]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
        tmp.replace(path)
    return path


def recovery_requests(manifest) -> list:
    """Recoverability of the first narrow-SFT pair and the first SFT-with-replay pair, on the
    pretraining corpus."""
    requests = []
    for stage, controls in RECOVERY_CONTROLS.items():
        pair = next((p for p in manifest.pairs if p.stage == stage), None)
        if pair is None:
            continue
        base, post = manifest.model(pair.base), manifest.model(pair.post)
        requests.append(
            RecoverJobIn(
                kind="recover",
                base=ModelIn(name=base.name, path=str(base.path), prompting=base.prompting),
                post=ModelIn(name=post.name, path=str(post.path), prompting=post.prompting),
                corpus=CorpusIn(source=f"local:{CORPUS}", max_docs=RECOVERY_DOCS),
                options=RecoveryOptionsIn(max_tokens=512, controls=list(controls)),
                label=pair.label,
                stage=pair.stage,
            )
        )
    return requests


def submit(db_path: Path, manifest) -> list[int]:
    """The demo's jobs, its pairs and its two checkpoint series (narrow SFT and SFT with replay,
    each over the base: the pairs of their checkpoints fill in as the jobs finish)."""
    store = open_store(db_path)
    try:
        job_ids = []
        with store.transaction() as conn:
            for request in job_requests(manifest):
                job_id, _ = create_job(conn, request)  # sent by the app's reconciler once it runs
                job_ids.append(job_id)
            for pair in manifest.pairs:
                add_pair(conn, pair.base, pair.post, label=pair.label, stage=pair.stage)
            for run in manifest.series:
                series_db.add_checkpoints(
                    conn, run.name, run.base, [(c.model, c.step) for c in run.checkpoints]
                )
            write_corpus(manifest)
            for request in recovery_requests(manifest):
                job_id, _ = create_recovery_job(conn, request)
                job_ids.append(job_id)
        return job_ids
    finally:
        store.close()


def _job(conn, job_id: int) -> dict:
    """``job_detail`` of a job the demo submitted (so there is one)."""
    detail = job_detail(conn, job_id)
    assert detail is not None
    return detail


def watch(app, job_ids: list[int], url: str, started: float) -> None:
    """Progress bars for the evaluation jobs, read from the app's own store."""
    store = app.state.store
    with _bar() as bar:
        with store.read() as conn:
            kinds = {job_id: _job(conn, job_id)["kind"] for job_id in job_ids}
        lines = (
            {}
            if console.is_terminal
            else {job_id: LineProgress(f"demo: job {job_id}", console.file) for job_id in job_ids}
        )
        tasks = {
            job_id: bar.add_task(
                f"{'recoverability' if kinds[job_id] == 'recover' else 'evaluate'} (job {job_id})",
                total=None,
            )
            for job_id in job_ids
        }
        while True:
            states = []
            with store.read() as conn:
                for job_id, task in tasks.items():
                    job = _job(conn, job_id)
                    finished = sum(
                        s["status"] in ("done", "reused", "failed", "cancelled")
                        for s in job["shards"]
                    )
                    bar.update(task, completed=finished, total=len(job["shards"]))
                    if job_id in lines:
                        lines[job_id](f"{job['kind']} shards", finished, len(job["shards"]))
                    states.append(job["status"])
            if all(s in ("done", "failed", "cancelled") for s in states):
                break
            time.sleep(1)
    verdict = (
        "ready"
        if all(s == "done" for s in states)
        else f"finished with problems ({', '.join(states)}; see /jobs)"
    )
    console.print(f"demo {verdict} in {time.monotonic() - started:.0f}s: open {url} (Ctrl-C stops)")


def run_demo(
    db_path: Path, host: str, port: int, zoo_dir: Path, recipe: Recipe = DEFAULT_RECIPE
) -> None:
    started = time.monotonic()
    try:
        from huggingface_hub.utils import disable_progress_bars
        from transformers.utils import logging as hf_logging

        disable_progress_bars()
        hf_logging.disable_progress_bar()
    except ImportError:
        pass
    manifest = build(zoo_dir, recipe)
    job_ids = submit(db_path, manifest)
    url = f"http://{host}:{port}"
    run_up(
        db_path,
        host,
        port,
        on_started=lambda app: watch(app, job_ids, url, started),
        settings=demo_settings(manifest),
    )


def demo_settings(manifest) -> dict[str, str]:
    """The settings the demo's app and worker run with: the zoo's folders, a reconciler that sends
    the jobs within a second, the worker's engine on one thread (two trained 4x slower on two
    shared cores; a user's own setting of either wins) and no download progress bars."""
    return {
        "FORGETMAP_TORCH_THREADS": os.environ.get("FORGETMAP_TORCH_THREADS") or "1",
        "FORGETMAP_RECONCILE_SECONDS": os.environ.get("FORGETMAP_RECONCILE_SECONDS") or "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") or "1",
        "FORGETMAP_MODEL_ROOTS": str(model_root(manifest)),
        "FORGETMAP_BENCHMARK_DIRS": str(manifest.benchmark_dir),
        "FORGETMAP_CORPUS_DIRS": str(corpus_dir(manifest)),
    }
