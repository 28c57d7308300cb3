"""Recoverability benchmark: tokens/s of scoring and of fitting the corrections, on this machine.

    .venv/bin/python bench/recover.py              # full: two model sizes, ~3 min on 2 cores
    .venv/bin/python bench/recover.py --quick      # tiny model only, fewer documents
    .venv/bin/python bench/recover.py --json out.json

Models: random-initialized Llamas built by app/demo/tiny_model.py, fp32, vocabulary 501: "tiny"
(hidden 128, 2 layers) and "larger" (hidden 256, 4 layers, 4 heads). Documents: --docs x --tokens
tokens sampled from each model (as the integration tests do). Threads: --threads (default 1; with
2 shared cores more threads are slower).

Part 1, scoring: scored tokens / wall time, median of --repeats after one warm-up, same batching
(--batch-tokens padded positions per forward pass) for every row:
- baseline: the plain forward pass, logits computed and dropped (nothing kept);
- plain nll: forward + cross-entropy (per-token nll only, ``plain_nll``);
- score full: ``score_documents`` keeping the whole vocabulary's logits in float32 (tiny models);
- score top-K + grid: ``score_documents`` keeping K = --k logits in float16 and summarizing the
  other tokens on the 97-point temperature grid (the real-vocabulary path).

Part 2, fitting (numpy/scipy, the scored statistics of part 1): FIT_train tokens / wall time for
each correction (``bias`` and ``bias_temp`` include the 5-value L2 path and its selection), and the
throughput of one pass (token-passes/s = FIT_train tokens x function evaluations / fit time).
Medians of --repeats.
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

MODELS = {
    "tiny": dict(hidden_size=128, num_layers=2, num_heads=2),
    "larger": dict(hidden_size=256, num_layers=4, num_heads=4),
}


def _median_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_model(label: str, sizes: dict, args, root: Path) -> dict:
    import numpy as np
    import torch
    from forgetmap.analysis.recoverability_fitting import (
        closed_form_bias,
        fit_correction,
        split_documents,
        top_k_tokens,
    )
    from forgetmap.demo.tiny_model import build_tiny_model
    from forgetmap.worker import recoverability_scoring as scoring

    path = build_tiny_model(root / label, seed=0, **sizes)
    model = scoring.load_model(path, device="cpu")
    n_params = sum(p.numel() for p in model.parameters())
    docs = scoring.sample_documents(
        model, args.docs, args.tokens, start_id=model.config.bos_token_id, seed=0
    )
    n_tok = sum(len(d) - 1 for d in docs)
    splits = split_documents(len(docs), seed=0)
    fit_targets = np.concatenate([d[1:] for d, s in zip(docs, splits, strict=True) if s != "eval"])
    s_tokens = top_k_tokens(fit_targets, 4096)
    kept = np.sort(top_k_tokens(fit_targets, args.k))

    def forward_only():
        with torch.inference_mode():
            for batch in scoring._batches([len(d) for d in docs], args.batch_tokens):
                scoring._forward(model, docs, batch)

    score_rows = {}
    print(
        f"\n{label}: {n_params / 1e6:.2f}M parameters, vocab {model.config.vocab_size}, "
        f"{len(docs)} documents, {n_tok} scored tokens"
    )
    stats = {}
    for name, fn in [
        ("baseline: forward only", forward_only),
        ("plain nll", lambda: scoring.plain_nll(model, docs, batch_tokens=args.batch_tokens)),
        (
            "score full (fp32)",
            lambda: stats.__setitem__(
                "full", scoring.score_documents(model, docs, batch_tokens=args.batch_tokens)
            ),
        ),
        (
            f"score top-{args.k} + grid (fp16)",
            lambda: stats.__setitem__(
                "grid",
                scoring.score_documents(
                    model, docs, kept=kept, logits_dtype=np.float16, batch_tokens=args.batch_tokens
                ),
            ),
        ),
    ]:
        t = _median_time(fn, args.repeats)
        score_rows[name] = {"s": t, "tokens_per_s": n_tok / t}
        print(f"  [{label}] {name}: {n_tok / t:,.0f} tokens/s ({t:.3f} s)", flush=True)
    base_tps = score_rows["baseline: forward only"]["tokens_per_s"]
    for row in score_rows.values():
        row["vs_baseline"] = row["tokens_per_s"] / base_tps

    fit_rows = {}
    train = stats["full"].rows_of(splits == "fit_train")
    select = stats["full"].rows_of(splits == "fit_select")
    fit_all = stats["full"].rows_of(splits != "eval")
    for mode in ("full", "grid"):
        st = stats[mode]
        bias_tokens = s_tokens if mode == "full" else top_k_tokens(fit_targets, args.k)
        for kind in ("bias", "temp", "bias_temp", "closed_bias"):
            evals = []

            def run(kind=kind, st=st, bias_tokens=bias_tokens, evals=evals):
                if kind == "closed_bias":
                    closed_form_bias(st, fit_all, bias_tokens)
                    evals.append(1)
                else:
                    c = fit_correction(
                        st, kind, train_rows=train, select_rows=select, bias_tokens=bias_tokens
                    )
                    evals.append(c.n_eval)

            t = _median_time(run, args.repeats)
            n_rows = len(fit_all) if kind == "closed_bias" else len(train)
            n_eval = int(statistics.median(evals))
            key = f"{mode}/{kind}"
            fit_rows[key] = {
                "s": t,
                "tokens": n_rows,
                "tokens_per_s": n_rows / t,
                "evaluations": n_eval,
                "token_passes_per_s": n_rows * n_eval / t,
                "kept_columns": int(st.logits.shape[1]),
            }
            print(
                f"  [{label}] fit {key}: {n_rows / t:,.0f} tokens/s ({t:.3f} s, {n_eval} "
                f"evaluations, {n_rows * n_eval / t:,.0f} token-passes/s, "
                f"{st.logits.shape[1]} kept columns)",
                flush=True,
            )
    return {
        "label": label,
        "params": n_params,
        "tokens": n_tok,
        "docs": len(docs),
        "fit_train_tokens": int(len(train)),
        "scoring": score_rows,
        "fitting": fit_rows,
    }


def print_summary(results: list[dict], args) -> None:
    print(f"\nscoring (tokens/s, median of {args.repeats}; ratio to the plain forward pass)")
    names = list(results[0]["scoring"])
    print(f"  {'':34}" + "".join(f"{r['label']:>24}" for r in results))
    for n in names:
        cells = "".join(
            f"{r['scoring'][n]['tokens_per_s']:>14,.0f} ({r['scoring'][n]['vs_baseline']:.2f}x)"
            for r in results
        )
        print(f"  {n:34}{cells}")
    print(f"\nfitting (FIT_train tokens/s, median of {args.repeats}; evaluations)")
    for n in results[0]["fitting"]:
        cells = "".join(
            f"{r['fitting'][n]['tokens_per_s']:>16,.0f} ({r['fitting'][n]['evaluations']:>3})"
            for r in results
        )
        print(f"  {n:34}{cells}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny model only, 32 documents")
    ap.add_argument("--docs", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=256, help="tokens per sampled document")
    ap.add_argument("--k", type=int, default=64, help="kept logits in the top-K + grid row")
    ap.add_argument("--batch-tokens", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    models = MODELS
    if args.quick:
        models = {"tiny": MODELS["tiny"]}
        args.docs = min(args.docs, 32)
    print(f"torch {torch.__version__}, {args.threads} thread(s)")
    with tempfile.TemporaryDirectory() as tmp:
        results = [bench_model(label, sizes, args, Path(tmp)) for label, sizes in models.items()]
    print_summary(results, args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
