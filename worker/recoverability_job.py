"""Running a recoverability shard: a pair and a corpus -> per-document loss sums uploaded to the
app.

The corpus is read (local files under the corpus folders, or a Hugging Face dataset), tokenized
with the base model's tokenizer and truncated to ``max_tokens``; ``run_recoverability`` scores the
base, its three controls and the post model with full logits (transformers), fits every correction
on FIT and sums the losses per document. The worker uploads that table with the fitted corrections;
the app recomputes the shares from it. Progress is reported per scored document of each model, and a
cancelled job stops at the next report.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from forgetmap.analysis.recoverability_fitting import LOG_BETA_GRID
from forgetmap.contract.jobs import ShardStatus
from forgetmap.contract.recovery import CorpusIn, RecoveryIn, RecoveryShardSpec
from forgetmap.contract.shards import ClaimedShard
from forgetmap.runtime.paths import ModelPathError, ModelRules, confined
from forgetmap.worker.client import AppClient
from forgetmap.worker.evaluate import ShardFailed, shard_spec
from forgetmap.worker.fingerprint import model_fingerprint
from forgetmap.worker.recoverability_scoring import (
    FULL_VOCAB_MAX,
    load_model,
    prepare_documents,
    read_corpus,
    run_recoverability,
)
from forgetmap.worker.settings import WorkerSettings

log = logging.getLogger("forgetmap.worker")
CORPUS_SUFFIXES = (".txt", ".jsonl", ".json")
PROGRESS_SECONDS = 2.0


class Cancelled(RuntimeError):
    """The job was cancelled while the analysis ran."""


def corpus_files(source: str, corpus_dirs: list[Path]) -> list[Path]:
    """The files of ``local:NAME``: a file, or the corpus files of a folder (sorted), directly
    inside one of the corpus folders. Symlinks and ``..`` cannot lead outside them."""
    name = source[len("local:") :]
    if not corpus_dirs:
        raise ShardFailed(
            f"local corpus {source!r} refused: no corpus folders configured "
            "(set FORGETMAP_CORPUS_DIRS, or FORGETMAP_BENCHMARK_DIRS, on the worker)"
        )
    for root in (Path(d).expanduser().resolve() for d in corpus_dirs):
        path = confined(root / name, [root])
        if path is None:
            raise ShardFailed(f"local corpus {source!r} points outside the corpus folders")
        if path.is_file():
            return [path]
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in CORPUS_SUFFIXES and p.is_file())
            if not files:
                raise ShardFailed(f"corpus folder {name!r} has no .txt or .jsonl files")
            return files
    where = ", ".join(str(d) for d in corpus_dirs)
    raise ShardFailed(f"local corpus {name!r} not found in the corpus folders ({where})")


def read_documents(corpus: CorpusIn, corpus_dirs: list[Path]) -> tuple[list[str], list[str]]:
    """(doc_ids, texts) of a corpus, its first ``max_docs``."""
    source = corpus.source
    if source.startswith("local:"):
        try:
            ids, texts = read_corpus(
                corpus_files(source, corpus_dirs),
                text_field=corpus.text_field,
                txt_separator=corpus.separator,
            )
        except (ValueError, UnicodeDecodeError) as exc:
            raise ShardFailed(f"cannot read corpus {source!r}: {exc}") from exc
    elif source.startswith("hf:"):
        ids, texts = _hub_documents(source[3:], corpus)
    else:
        raise ShardFailed(f"unknown corpus source {source!r}")
    limit = corpus.max_docs
    if limit:
        ids, texts = ids[:limit], texts[:limit]
    return ids, texts


def _hub_documents(dataset_id: str, corpus: CorpusIn) -> tuple[list[str], list[str]]:
    field, split, limit = corpus.text_field, corpus.split, corpus.max_docs
    try:
        import datasets

        ds = datasets.load_dataset(
            dataset_id, corpus.config, split=f"{split}[:{limit}]" if limit else split
        )
    except Exception as exc:  # no network, unknown id, gated dataset...
        raise ShardFailed(
            f"cannot load corpus {dataset_id} [{split}] from the Hugging Face hub: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from exc
    if field not in ds.column_names:
        raise ShardFailed(
            f"corpus {dataset_id} has no column {field!r} (columns: {', '.join(ds.column_names)})"
        )
    texts = [t for t in ds[field] if isinstance(t, str) and t.strip()]
    return [f"{dataset_id}:{i}" for i in range(len(texts))], texts


def run_recover_shard(shard: ClaimedShard, *, client: AppClient, settings: WorkerSettings) -> str:
    """Run a claimed recoverability shard and report it. Returns 'done' or 'cancelled'; raises
    ShardFailed when the shard cannot succeed as specified."""
    spec = shard_spec(shard, RecoveryShardSpec)
    shard_id, options = shard.id, spec.options
    models = {"base": spec.base, "post": spec.post}
    paths = {}
    for role, model in models.items():
        try:
            # checked again here: a job row that reached the queue another way loads nothing
            # outside the roots
            paths[role] = ModelRules.of(settings).check(model.path)
        except ModelPathError as exc:
            raise ShardFailed(str(exc)) from exc
    corpus_dirs = list(settings.corpus_dirs or settings.benchmark_dirs)
    doc_ids, texts = read_documents(spec.corpus, corpus_dirs)
    torch = _torch(settings)
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(
            paths["base"], revision=spec.base.revision, trust_remote_code=settings.trust_remote_code
        )
    except Exception as exc:
        raise ShardFailed(f"cannot load the tokenizer of {spec.base.path!r}: {exc}") from exc
    docs, kept = prepare_documents(tokenizer, texts, max_tokens=options.max_tokens)
    if len(docs) < 3:
        raise ShardFailed(
            f"corpus {spec.corpus.source!r} gave {len(docs)} documents with text to score; "
            "a recoverability analysis needs at least 3 (10+ for useful intervals)"
        )
    doc_ids = [doc_ids[i] for i in kept]
    stages = ["base", *options.controls, "post"]
    total = len(stages) * len(docs)
    n_tokens = sum(len(d) - 1 for d in docs)
    log.info(
        "shard %d: recoverability of %s -> %s on %s: %d documents, %d tokens, K=%d, controls %s",
        shard_id,
        spec.base.name,
        spec.post.name,
        spec.corpus.source,
        len(docs),
        n_tokens,
        options.k,
        ", ".join(options.controls) or "none",
    )
    if client.progress(shard_id, 0, total) == ShardStatus.cancelled:
        return ShardStatus.cancelled
    last = {"t": 0.0}
    started = time.monotonic()

    def progress(what: str, done: int, _total: int) -> None:
        stage = what.split(":", 1)[0]
        now = time.monotonic()
        finished = done == _total
        if not finished and now - last["t"] < PROGRESS_SECONDS:
            return
        last["t"] = now
        overall = stages.index(stage) * len(docs) + done if stage in stages else done
        if finished:
            log.info(
                "shard %d: %s scored (%d documents, %.0fs so far)",
                shard_id,
                stage,
                done,
                now - started,
            )
        if client.progress(shard_id, overall, total) == ShardStatus.cancelled:
            raise Cancelled

    device = "cuda" if torch.cuda.is_available() else "cpu"

    def load(role: str):
        try:
            return load_model(
                paths[role],
                device=device,
                revision=models[role].revision,
                trust_remote_code=settings.trust_remote_code,
            )
        except Exception as exc:
            raise ShardFailed(
                f"cannot load {role} model {models[role].path!r}: {type(exc).__name__}: {exc}"
            ) from exc

    per_model = statistics_bytes(n_tokens, len(tokenizer), options.k)
    scratch = None
    if per_model > settings.recover_memory_gb * 2**30:
        scratch = tempfile.mkdtemp(
            prefix=f"forgetmap-recover-{shard_id}-", dir=settings.scratch_dir
        )
        log.info(
            "shard %d: %.1f GB of token statistics per model: kept in memory maps under %s",
            shard_id,
            per_model / 2**30,
            scratch,
        )
    try:
        result = run_recoverability(
            "base",
            "post",
            docs,
            doc_ids=doc_ids,
            k=options.k,
            eval_fraction=options.eval_fraction,
            select_fraction=options.select_fraction,
            seed=options.seed,
            controls=options.controls,
            n_boot=200,
            load=load,
            progress=progress,
            scratch_dir=scratch,
        )
    except Cancelled:
        log.info("shard %d cancelled; stopping", shard_id)
        return ShardStatus.cancelled
    except ShardFailed:
        raise
    except (ValueError, RuntimeError) as exc:
        raise ShardFailed(f"recoverability analysis failed: {type(exc).__name__}: {exc}") from exc
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    if client.progress(shard_id, total, total) == ShardStatus.cancelled:
        return ShardStatus.cancelled
    client.recovery(shard_id, upload_body(result))
    client.finish(shard_id, model_fingerprint(paths["post"], spec.post.revision))
    log.info("shard %d done in %.1fs", shard_id, time.monotonic() - started)
    return ShardStatus.done


def statistics_bytes(n_tokens: int, vocab_size: int, k: int) -> int:
    """Memory of one model's token statistics (module doc of
    forgetmap.analysis.recoverability_fitting): the full vocabulary in float32 for small
    vocabularies, else K float16 logits plus the complement grid."""
    if vocab_size <= FULL_VOCAB_MAX:
        return n_tokens * (vocab_size * 4 + 8)
    return n_tokens * (min(k, vocab_size) * 2 + 8 + 2 * len(LOG_BETA_GRID) * 4)


def upload_body(result: Any) -> RecoveryIn:
    """The body the app's /api/shards/{id}/recovery takes, from a RecoverabilityResult."""
    d = result.to_dict()
    table = dict(d["table"])
    table["doc_id"] = [str(x) for x in table["doc_id"]]
    return RecoveryIn(
        table=table,
        corrections=d["corrections"],
        controls=d["controls"],
        timing=d["timing"],
        config=d["config"],
    )


def _torch(settings: WorkerSettings):
    import torch

    if settings.torch_threads:
        torch.set_num_threads(settings.torch_threads)
    return torch
