"""A small, seeded, deterministic trainer for the demo's tiny Llama-style models (torch, CPU).

The tokenizer is a byte-level BPE trained locally on the demo's own texts (``suite.tokenizer_text``)
with a fixed set of special tokens and a chat template; the test suite's tiny models
(``app/demo/tiny_model.py``) reuse this tokenizer builder. Models are ``LlamaForCausalLM`` with
head_dim 64 (vLLM's CPU attention needs head_dim >= 64), fp32, written with ``save_pretrained`` so
that ``AutoTokenizer``, ``AutoModelForCausalLM`` and ``vllm.LLM`` load the folder.

Training examples are texts with optional character spans that carry the loss (``Example``):
pretraining and continued pretraining train on every token, SFT and instruction tuning on the
answers only (prompt tokens masked), as usual. Data order, initialization and dropout-free
training depend on the seed alone; on one machine with a fixed thread count the same seed gives
the same weights.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CHAT_TEMPLATE",
    "Example",
    "ModelSpec",
    "SPECIAL_TOKENS",
    "build_tokenizer",
    "load_model",
    "merge_models",
    "new_model",
    "qa_example",
    "save_model",
    "train",
]

SPECIAL_TOKENS = [
    "<|pad|>",
    "<|bos|>",
    "<|eos|>",
    "<|endoftext|>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
]
PAD, BOS, EOS, UNK = SPECIAL_TOKENS[:4]

PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' }}\n{{ message['content'] }}{{ eos_token }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}\n{% endif %}"
)


def _byte_level_chars(byte_values) -> list[str]:
    printable = (
        list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    )
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return [table[b] for b in byte_values]


ALPHABET = _byte_level_chars([9, 10, 13, *range(32, 127)])


def build_tokenizer(texts: Sequence[str], vocab_size: int = 768, *, chat_template: bool = True):
    """A byte-level BPE tokenizer trained on ``texts``, as a PreTrainedTokenizerFast (with the chat
    template unless told otherwise). Deterministic for the same texts. No post-processor: prompts
    carry BOS through the chat template, or get none (like Qwen2). app/demo/tiny_model.py uses
    it."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=ALPHABET,
        limit_alphabet=len(ALPHABET),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        additional_special_tokens=SPECIAL_TOKENS[4:],
        padding_side="left",
        clean_up_tokenization_spaces=False,
        model_max_length=512,
        **({"chat_template": CHAT_TEMPLATE} if chat_template else {}),
    )


@dataclass(frozen=True)
class ModelSpec:
    """Sizes of the tiny Llama (head_dim = hidden_size // num_heads, at least 64)."""

    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 2
    intermediate_size: int = 384
    max_positions: int = 512

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_heads or self.hidden_size // self.num_heads < 64:
            raise ValueError("head_dim = hidden_size / num_heads must be an integer >= 64 (vLLM)")


def new_model(tokenizer: Any, spec: ModelSpec = ModelSpec(), seed: int = 0):
    """A freshly initialized LlamaForCausalLM (fp32) for ``tokenizer``; weights depend on the
    seed."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in (PAD, BOS, EOS)}
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_heads,
        head_dim=spec.hidden_size // spec.num_heads,
        max_position_embeddings=spec.max_positions,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        pad_token_id=ids[PAD],
        bos_token_id=ids[BOS],
        eos_token_id=ids[EOS],
        dtype="float32",
    )
    # transformers types ``to`` through a decorator that loses the bound self
    model = LlamaForCausalLM(config).to(torch.float32)  # type: ignore[arg-type]
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            elif name.endswith("embed_tokens.weight"):
                param.copy_(torch.randn(param.shape, generator=gen) * 0.5)
            else:
                param.copy_(torch.randn(param.shape, generator=gen) * param.shape[-1] ** -0.5)
    model.generation_config = GenerationConfig(
        bos_token_id=ids[BOS], eos_token_id=ids[EOS], pad_token_id=ids[PAD], do_sample=False
    )
    return model


@dataclass(frozen=True)
class Example:
    """A training text; ``spans`` (character ranges) carry the loss, ``None`` = every token."""

    text: str
    spans: tuple[tuple[int, int], ...] | None = None


def qa_example(document: str, *, answers_only: bool = True) -> Example:
    """A few-shot Q/A document with the loss on the answers (the text after each ``Answer:``)."""
    if not answers_only:
        return Example(document)
    spans = []
    start = 0
    while (pos := document.find("Answer:", start)) >= 0:
        begin = pos + len("Answer:")
        end = document.find("\n", begin)
        end = len(document) if end < 0 else end
        spans.append((begin, min(end + 1, len(document))))
        start = end
    return Example(document, tuple(spans))


def _encode(tokenizer: Any, example: Example, max_len: int) -> tuple[list[int], list[bool]]:
    enc = tokenizer(example.text, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    if example.spans is None:
        mask = [True] * len(ids)
    else:
        mask = [
            any(a <= s < b or (s < a < e) for a, b in example.spans)
            for s, e in enc["offset_mapping"]
        ]
    if len(ids) > max_len:  # keep the end: answers sit at the end of few-shot documents
        ids, mask = ids[-max_len:], mask[-max_len:]
    return ids, mask


def train(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Example],
    *,
    steps: int,
    batch_size: int = 16,
    lr: float = 3e-3,
    warmup: int = 20,
    weight_decay: float = 0.0,
    seed: int = 0,
    max_len: int = 256,
    progress: Callable[[int, int, float], None] | None = None,
    checkpoint_steps: Collection[int] = (),
    on_checkpoint: Callable[[int], None] | None = None,
) -> list[float]:
    """Train in place with AdamW (linear warmup, cosine decay to 10%); returns the loss per step.

    Batches are drawn by shuffled epochs over ``examples`` (seeded), padded on the right.
    ``on_checkpoint(step)`` runs after each step in ``checkpoint_steps`` (counted from 1), with
    the model in eval mode, as a training run saves its checkpoints; it does not change the run.
    """
    import torch

    if not examples:
        raise ValueError("no training examples")
    encoded = [_encode(tokenizer, ex, max_len) for ex in examples]
    pad = int(tokenizer.pad_token_id)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    opt = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=lr,
        betas=(0.9, 0.98),
        eps=1e-8,
    )

    def lr_at(step: int) -> float:
        if step < warmup:
            return lr * (step + 1) / warmup
        t = (step - warmup) / max(1, steps - warmup)
        return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    order: list[int] = []
    losses: list[float] = []
    model.train()
    for step in range(steps):
        batch: list[tuple[list[int], list[bool]]] = []
        while len(batch) < batch_size:
            if not order:
                order = list(range(len(encoded)))
                rng.shuffle(order)
            batch.append(encoded[order.pop()])
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
        labels = torch.full((len(batch), width), -100, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        for row, (ids, mask) in enumerate(batch):
            t = torch.tensor(ids, dtype=torch.long)
            input_ids[row, : len(ids)] = t
            attention[row, : len(ids)] = 1
            keep = torch.tensor(mask, dtype=torch.bool)
            labels[row, : len(ids)] = torch.where(keep, t, torch.full_like(t, -100))
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        out = model(input_ids=input_ids, attention_mask=attention, labels=labels, use_cache=False)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(float(out.loss.detach()))
        if progress is not None:
            progress(step + 1, steps, losses[-1])
        if on_checkpoint is not None and step + 1 in checkpoint_steps:
            model.eval()
            on_checkpoint(step + 1)
            model.train()
    model.eval()
    return losses


def merge_models(model_a: Any, model_b: Any, alpha: float = 0.5):
    """A new model with weights (1 - alpha) * a + alpha * b (a linear merge of two fine-tunes of
    the same base; the architectures must match)."""
    import copy

    import torch

    merged = copy.deepcopy(model_a)
    state_b = model_b.state_dict()
    with torch.no_grad():
        for name, param in merged.state_dict().items():
            param.copy_((1 - alpha) * param + alpha * state_b[name])
    return merged


def save_model(
    model: Any, tokenizer: Any, out_dir: str | Path, *, meta: dict | None = None
) -> Path:
    """save_pretrained of model and tokenizer (tokenizer class pinned), plus ``demo.json``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    if meta is not None:
        (out / "demo.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return out


def load_model(path: str | Path):
    """(model, tokenizer) from a folder written by ``save_model``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    model.eval()
    return model, tokenizer
