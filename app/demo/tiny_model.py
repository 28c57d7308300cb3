"""Build a tiny random-initialized causal LM (Llama or Qwen2) with a locally trained tokenizer.

Nothing is downloaded: the tokenizer is trained with the `tokenizers` library on a small text kept
in this file, the weights are drawn from a seeded generator, and everything is written with
`save_pretrained`, so `AutoTokenizer`, `AutoModelForCausalLM` and `vllm.LLM` all load the folder.

The model has head_dim 64 (vLLM's CPU attention needs head_dim >= 64), fp32 weights, and a wide
output-head init so its next-token distributions are peaked: greedy decoding then has clear top-1
margins, and engines that differ by float rounding still agree on greedy outputs. The tokenizer is
byte-level BPE over printable ASCII, so generated text is always plain ASCII.

    python -m forgetmap.demo.tiny_model OUT_DIR [--arch llama|qwen2] [--seed 0]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

# "<|endoftext|>" is the unknown token Qwen2's tokenizer class insists on; listing it keeps the
# tokenizer the same size whichever class loads it.
from forgetmap.demo.trainer import BOS, CHAT_TEMPLATE, EOS, PAD, SPECIAL_TOKENS  # noqa: F401 - re-exported

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedModel

_TEXT = """\
The quick brown fox jumps over the lazy dog. \
A journey of a thousand miles begins with a single step.
Question: Which planet is known as the red planet? A. Venus B. Mars C. Jupiter D. Saturn
Answer: B
Question: What is two plus three? A. four B. five C. six D. seven
Answer: B
Question: Water freezes at what temperature in degrees Celsius? A. 0 B. 10 C. 50 D. 100
Answer: A
Let's think step by step. The final answer is C. The answer is (D). Therefore the answer is 42.
Photosynthesis converts light energy into chemical energy stored in glucose.
The mitochondria is the powerhouse of the cell. Paris is the capital of France.
Berlin is the capital of Germany and Rome is the capital of Italy.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 100 1000 3.14 -7 1/2
Letters: A B C D E F G H I J a b c d e f g h i j
She sells sea shells by the sea shore. Peter Piper picked a peck of pickled peppers.
In mathematics, a prime number is a natural number greater than 1 that has no positive divisors
other than 1 and itself. The sum of the angles of a triangle is 180 degrees.
Knowledge is forgotten after post-training when the model loses facts it once knew.
def add(a, b):
    return a + b
```python
print("hello world")
```
"""

TRAINING_TEXT = [line for line in _TEXT.splitlines() if line.strip()] * 4


def build_tokenizer(vocab_size: int = 512, *, chat_template: bool = True):
    """A byte-level BPE tokenizer trained on TRAINING_TEXT (the demo trainer's builder)."""
    from forgetmap.demo.trainer import build_tokenizer as build

    return build(TRAINING_TEXT, vocab_size, chat_template=chat_template)


def build_tiny_model(
    out_dir: Path,
    *,
    arch: str = "llama",
    seed: int = 0,
    vocab_size: int = 512,
    chat_template: bool = True,
    hidden_size: int = 128,
    num_layers: int = 2,
    num_heads: int = 2,
) -> Path:
    """Write a tiny random model plus tokenizer to out_dir and return out_dir.

    The same (arch, seed, vocab_size, chat_template, sizes) give the same files, byte for byte.
    """
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, Qwen2Config

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(vocab_size, chat_template=chat_template)
    n_vocab = len(tokenizer)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in (PAD, BOS, EOS)}
    common = dict(
        vocab_size=n_vocab,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        head_dim=hidden_size // num_heads,
        max_position_embeddings=512,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        pad_token_id=ids[PAD],
        bos_token_id=ids[BOS],
        eos_token_id=ids[EOS],
        dtype="float32",
    )
    if common["head_dim"] < 64:
        raise ValueError("vLLM's CPU attention needs head_dim >= 64")
    config: PreTrainedConfig
    model_cls: type[PreTrainedModel]
    if arch == "llama":
        config = LlamaConfig(**common)
        model_cls = LlamaForCausalLM
    elif arch == "qwen2":
        from transformers import Qwen2ForCausalLM

        config = Qwen2Config(**common, use_sliding_window=False)
        model_cls = Qwen2ForCausalLM
    else:
        raise ValueError(f"unknown arch {arch!r} (llama or qwen2)")

    # Draw the weights ourselves, from a private generator, so that the result depends on the seed
    # alone (not on torch's global RNG state or on transformers' init order). Linear weights get
    # std 1/sqrt(fan_in) so activations stay O(1); the output head gets 4/sqrt(fan_in), which makes
    # the next-token distributions peaked (clear greedy margins).
    with torch.device("cpu"):
        # transformers types ``to`` through a decorator that loses the bound self
        model = model_cls(config).to(torch.float32)  # type: ignore[arg-type]
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                param.fill_(1.0)
                continue
            if name.endswith(".bias"):
                std = 0.02
            elif name.endswith("embed_tokens.weight"):
                std = 1.0
            elif name.endswith("lm_head.weight"):
                std = 4.0 * param.shape[-1] ** -0.5
            else:
                std = param.shape[-1] ** -0.5
            param.copy_(torch.randn(param.shape, generator=gen) * std)
    model.eval()
    model.generation_config = GenerationConfig(
        bos_token_id=ids[BOS], eos_token_id=ids[EOS], pad_token_id=ids[PAD], do_sample=False
    )
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    # Pin the tokenizer class so AutoTokenizer loads tokenizer.json as is instead of rebuilding a
    # Llama tokenizer from it. (For model_type qwen2, transformers uses Qwen2Tokenizer whatever the
    # file says; PRETOKENIZE_REGEX and the special tokens make it tokenize the same way.)
    cfg_path = out_dir / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    return out_dir


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--arch", default="llama", choices=["llama", "qwen2"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-chat-template", action="store_true")
    args = ap.parse_args()
    print(
        build_tiny_model(
            args.out_dir, arch=args.arch, seed=args.seed, chat_template=not args.no_chat_template
        )
    )
