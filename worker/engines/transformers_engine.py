"""The transformers engine: the fallback and the correctness reference.

Batched generation with left padding (explicit position ids, so padding changes nothing),
seeded sampling, greedy decoding when temperature == 0, and choice log-likelihoods from the full
log-softmax over the vocabulary. torch and transformers are imported when an engine is made.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from .base import (
    Generation,
    GenerationParams,
    Message,
    SingleTokenGroups,
    encode_prompt,
    flatten_choices,
    render_chat,
    single_token_groups,
    truncate_at_stop,
)

log = logging.getLogger(__name__)


class TransformersEngine:
    name = "transformers"

    def __init__(
        self,
        model_path: str | Path,
        *,
        device: str | None = None,
        dtype: str | None = None,
        trust_remote_code: bool = False,
        batch_size: int = 16,
        num_threads: int | None = None,
        max_length: int | None = None,
        revision: str | None = None,
    ) -> None:
        """Load model and tokenizer from model_path (a local folder or a Hub id).

        device: "cpu", "cuda", "cuda:1"...; default cuda when available, else cpu.
        dtype: "float32", "bfloat16", "float16" or "auto" (the checkpoint's); default float32 on
            CPU and "auto" on GPU.
        batch_size: prompts (or choices) per forward batch.
        num_threads: torch.set_num_threads(n) for CPU work (1 avoids large slowdowns when several
            processes share few cores).
        max_length: longest prompt + completion; longer prompts are cut from the left.
        """
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if num_threads is not None:
            torch.set_num_threads(int(num_threads))
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if dtype is None:
            dtype = "float32" if device == "cpu" else "auto"
        torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)

        self.model_path = str(model_path)
        self.device = torch.device(device)
        self.batch_size = max(1, int(batch_size))
        self.tokenizer = AutoTokenizer.from_pretrained(
            self.model_path, trust_remote_code=trust_remote_code, revision=revision
        )
        self.model = AutoModelForCausalLM.from_pretrained(
            self.model_path,
            dtype=torch_dtype,
            trust_remote_code=trust_remote_code,
            revision=revision,
        ).to(self.device)  # type: ignore[arg-type]  # transformers types ``to`` without its bound self
        self.model.eval()
        tok = self.tokenizer
        self.eos_ids = _eos_ids(self.model, tok)
        pad = tok.pad_token_id
        if pad is None:
            pad = self.eos_ids[0] if self.eos_ids else 0
        self.pad_id = int(pad)
        self.max_length = int(
            max_length or getattr(self.model.config, "max_position_embeddings", 0) or 4096
        )
        self._torch = torch

    # ---------------------------------------------------------------------------------------
    def apply_chat_template(self, messages: Sequence[Message]) -> str:
        return render_chat(self.tokenizer, messages)

    def generate(self, prompts: list[str], params: GenerationParams) -> list[Generation]:
        torch = self._torch
        if not prompts:
            return []
        encoded = [self._fit(encode_prompt(self.tokenizer, p), params.max_tokens) for p in prompts]
        if params.seed is not None:
            torch.manual_seed(params.seed)
            if torch.cuda.is_available():
                torch.cuda.manual_seed_all(params.seed)
        gen_config = self._generation_config(params)
        # Sort by length so each batch pads little; results go back in prompt order.
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        results: list[Generation | None] = [None] * len(encoded)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            batch = [encoded[i] for i in idx]
            input_ids, attention_mask = self._left_pad(batch)
            with torch.inference_mode():
                out = self.model.generate(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    generation_config=gen_config,
                    tokenizer=self.tokenizer if params.stop else None,
                )
            new_tokens = out[:, input_ids.shape[1] :].tolist()
            for row, i in enumerate(idx):
                results[i] = self._finish(new_tokens[row], len(encoded[i]), params)
        return [r for r in results if r is not None]

    def choice_logprobs(self, contexts: list[str], choices: list[list[str]]) -> list[list[float]]:
        torch = self._torch
        groups, items = single_token_groups(flatten_choices(self.tokenizer, contexts, choices))
        scores: list[list[float]] = [[0.0] * len(opts) for opts in choices]
        self._next_token_scores(groups, scores)
        seqs = []
        for _i, _j, ctx_ids, cont_ids in items:
            full = ctx_ids + cont_ids
            if len(full) > self.max_length:  # keep the continuation, cut the context's start
                full = full[len(full) - self.max_length :]
            seqs.append((full, len(cont_ids)))
        order = sorted(range(len(items)), key=lambda k: len(seqs[k][0]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            batch = [seqs[k][0] for k in idx]
            n_cont = [seqs[k][1] for k in idx]
            input_ids, attention_mask = self._left_pad(batch)
            keep = max(n_cont)  # continuations sit at the right end of each left-padded row
            with torch.inference_mode():
                logits = self.model(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    position_ids=_position_ids(attention_mask),
                    logits_to_keep=keep + 1,
                    use_cache=False,
                ).logits
            # logits[:, t] predicts the token at t + 1: the last `keep` targets are predicted by
            # positions -keep-1 .. -2.
            logprobs = torch.log_softmax(logits[:, :-1].float(), dim=-1)
            targets = input_ids[:, -keep:]
            token_lp = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            for row, k in enumerate(idx):
                i, j = items[k][0], items[k][1]
                scores[i][j] = float(token_lp[row, keep - n_cont[row] :].double().sum())
        return scores

    def _next_token_scores(self, groups: SingleTokenGroups, scores: list[list[float]]) -> None:
        """Single-token choices (``single_token_groups``): one forward pass over each context,
        every choice's log-probability read at its last position."""
        torch = self._torch
        keys = sorted(groups, key=lambda i: len(groups[i][0]))
        for start in range(0, len(keys), self.batch_size):
            batch_keys = keys[start : start + self.batch_size]
            # the context keeps its end, with room for the choice (as the full sequences do)
            batch = [groups[i][0][-(self.max_length - 1) :] for i in batch_keys]
            input_ids, attention_mask = self._left_pad(batch)
            with torch.inference_mode():
                logits = self.model(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    position_ids=_position_ids(attention_mask),
                    logits_to_keep=1,
                    use_cache=False,
                ).logits
            logprobs = torch.log_softmax(logits[:, -1].float(), dim=-1)
            for row, i in enumerate(batch_keys):
                for j, token in groups[i][1]:
                    scores[i][j] = float(logprobs[row, token].double())

    def close(self) -> None:
        model = getattr(self, "model", None)
        if model is None:
            return
        self.model = None
        del model
        torch = self._torch
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    # ---------------------------------------------------------------------------------------
    def _fit(self, ids: list[int], max_new: int) -> list[int]:
        room = self.max_length - max_new
        if room < 1:
            raise ValueError(f"max_tokens={max_new} leaves no room in max_length={self.max_length}")
        if len(ids) > room:
            log.warning("prompt of %d tokens cut to its last %d", len(ids), room)
            ids = ids[len(ids) - room :]
        return ids

    def _left_pad(self, batch: list[list[int]]):
        torch = self._torch
        width = max(len(ids) for ids in batch)
        input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, ids in enumerate(batch):
            if ids:
                input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
                attention_mask[row, width - len(ids) :] = 1
        return input_ids.to(self.device), attention_mask.to(self.device)

    def _generation_config(self, params: GenerationParams):
        from transformers import GenerationConfig

        kwargs: dict[str, Any] = dict(
            max_new_tokens=params.max_tokens,
            pad_token_id=self.pad_id,
            eos_token_id=self.eos_ids or None,
            bos_token_id=self.tokenizer.bos_token_id,
        )
        if params.greedy:
            kwargs.update(do_sample=False)
        else:
            kwargs.update(
                do_sample=True, temperature=params.temperature, top_p=params.top_p, top_k=0
            )
        if params.stop:
            kwargs["stop_strings"] = list(params.stop)
        return GenerationConfig(**kwargs)

    def _finish(self, new_tokens: list[int], n_prompt: int, params: GenerationParams) -> Generation:
        # Cut at the first EOS (kept in the count, as vLLM counts it); the rest is padding. A row
        # that ended on a stop string is followed by padding only.
        eos = set(self.eos_ids)
        n = len(new_tokens)
        ended = False  # on an end token or a stop string, not the token limit
        for pos, tid in enumerate(new_tokens):
            if tid in eos:
                n, ended = pos + 1, True
                break
        if n == len(new_tokens) and self.pad_id not in eos:
            while n and new_tokens[n - 1] == self.pad_id:
                n -= 1
        kept = new_tokens[:n]
        # one sequence of ids decodes to one text (the library's type also allows a batch's list)
        text = cast(
            str, self.tokenizer.decode([t for t in kept if t not in eos], skip_special_tokens=True)
        )
        if params.stop:
            text, stopped = truncate_at_stop(text, params.stop)
            ended = ended or stopped
        # as vLLM says it: "length" only for an answer the token limit ended
        reason = "length" if not ended and len(kept) >= params.max_tokens else "stop"
        return Generation(
            text=text, prompt_tokens=n_prompt, completion_tokens=len(kept), finish_reason=reason
        )


def _position_ids(attention_mask):
    """Positions 0, 1, ... over the real tokens of left-padded rows (0 on padding)."""
    pos = attention_mask.long().cumsum(-1) - 1
    return pos.clamp(min=0)


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
    ids: list[int] = []
    for source in (getattr(model, "generation_config", None), model.config):
        eos = getattr(source, "eos_token_id", None) if source is not None else None
        if eos is None:
            continue
        for tid in eos if isinstance(eos, list) else [eos]:
            if tid is not None and int(tid) not in ids:
                ids.append(int(tid))
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(int(tokenizer.eos_token_id))
    return ids
