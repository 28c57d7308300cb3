"""The engine protocol and the tokenization helpers that every engine shares.

Both engines turn text into token ids with the helpers below (and the model's own Hugging Face
tokenizer), so for the same model they feed the network exactly the same ids: that is what makes
their greedy outputs and choice log-likelihoods comparable. Nothing here imports torch or vllm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class GenerationParams:
    """Sampling settings for one generate() call.

    temperature == 0 means greedy decoding (top_p and seed are then irrelevant). `seed` makes
    sampling reproducible; `stop` strings end a completion and are not part of its text.
    """

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = None
    stop: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        # Accept any sequence of strings (or one string) but keep the dataclass hashable.
        stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ())
        if any(not s for s in stop):
            raise ValueError("stop strings must be non-empty")
        object.__setattr__(self, "stop", stop)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class Generation:
    """One completion: its text (stop string excluded), token counts, and why it ended:
    ``finish_reason`` as vLLM names it (``"stop"``: an end token or a stop string, ``"length"``:
    the token limit), None where the engine does not say."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None


Message = Mapping[str, str]


@runtime_checkable
class Engine(Protocol):
    """What the worker needs from an inference engine."""

    name: str

    def generate(self, prompts: list[str], params: GenerationParams) -> list[Generation]:
        """One completion per prompt, in prompt order."""
        ...

    def choice_logprobs(self, contexts: list[str], choices: list[list[str]]) -> list[list[float]]:
        """For each context i and each choice j of choices[i]: the sum of the log-probabilities of
        the choice's tokens given the context (log P(choice | context))."""
        ...

    def apply_chat_template(self, messages: Sequence[Message]) -> str:
        """The model's chat template applied to messages, with the assistant turn opened."""
        ...

    def close(self) -> None:
        """Free the model (and any engine process)."""
        ...


class ChatTemplateMissing(ValueError):
    """The model has no chat template (a base model): use plain prompts instead."""


# --------------------------------------------------------------------------------------------
# Shared tokenization. `tokenizer` is a Hugging Face tokenizer (transformers' or vLLM's wrapper of
# one): only encode(), bos/eos ids and apply_chat_template() are used.


def encode_prompt(tokenizer: Any, text: str) -> list[int]:
    """Token ids of a prompt.

    Special tokens (BOS) are added by the tokenizer unless the text already starts with the BOS
    token, which is what a chat template that writes `{{ bos_token }}` produces: that avoids the
    double BOS that both engines would otherwise feed for chat prompts.
    """
    bos = getattr(tokenizer, "bos_token", None)
    add_special = not (bos and text.startswith(bos))
    return list(tokenizer.encode(text, add_special_tokens=add_special))


def _start_ids(tokenizer: Any) -> list[int]:
    """What an empty context is replaced with: BOS, else EOS (as lm-eval does)."""
    for attr in ("bos_token_id", "eos_token_id"):
        tid = getattr(tokenizer, attr, None)
        if tid is not None:
            return [int(tid)]
    raise ValueError("an empty context needs a tokenizer with a BOS or EOS token")


def split_choice_ids(tokenizer: Any, context: str, choice: str) -> tuple[list[int], list[int]]:
    """(context ids, continuation ids) for scoring `choice` after `context`.

    As in lm-eval: trailing whitespace of the context moves to the continuation (so " B" is
    scored as one word), the whole string is tokenized at once, and the continuation is what
    follows the context's own tokens. Where the tokenizer merged across the boundary, the
    continuation is tokenized on its own instead. An empty context becomes [BOS] (or [EOS]).
    """
    if not choice:
        raise ValueError("a choice must be a non-empty string")
    n_space = len(context) - len(context.rstrip())
    if n_space:
        choice = context[-n_space:] + choice
        context = context[:-n_space]
    if not context:
        ctx_ids = _start_ids(tokenizer)
        cont_ids = list(tokenizer.encode(choice, add_special_tokens=False))
        return ctx_ids, cont_ids
    ctx_ids = encode_prompt(tokenizer, context)
    whole = encode_prompt(tokenizer, context + choice)
    if whole[: len(ctx_ids)] == ctx_ids and len(whole) > len(ctx_ids):
        cont_ids = whole[len(ctx_ids) :]
    else:
        cont_ids = list(tokenizer.encode(choice, add_special_tokens=False))
    if not cont_ids:
        raise ValueError(f"choice {choice!r} encodes to no tokens")
    return ctx_ids, cont_ids


def flatten_choices(
    tokenizer: Any, contexts: list[str], choices: list[list[str]]
) -> list[tuple[int, int, list[int], list[int]]]:
    """(i, j, context ids, continuation ids) for every choice j of every context i."""
    if len(contexts) != len(choices):
        raise ValueError(f"{len(contexts)} contexts but {len(choices)} choice lists")
    out = []
    for i, (ctx, opts) in enumerate(zip(contexts, choices, strict=True)):
        for j, opt in enumerate(opts):
            ctx_ids, cont_ids = split_choice_ids(tokenizer, ctx, opt)
            out.append((i, j, ctx_ids, cont_ids))
    return out


ChoiceItem = tuple[int, int, list[int], list[int]]
"""(context index i, choice index j, context token ids, continuation token ids)."""
SingleTokenGroups = dict[int, tuple[list[int], list[tuple[int, int]]]]
"""{context index: (context token ids, [(choice index, its one token id)])}."""


def single_token_groups(items: list[ChoiceItem]) -> tuple[SingleTokenGroups, list[ChoiceItem]]:
    """``flatten_choices``' items split into the contexts whose every choice is one token after
    the same context tokens (option letters after "(": one forward pass over the context gives
    every choice's log-probability) as {i: (context ids, [(j, token id)])}, and the rest."""
    by_context: dict[int, list[ChoiceItem]] = {}
    for item in items:
        by_context.setdefault(item[0], []).append(item)
    groups: SingleTokenGroups = {}
    rest: list[ChoiceItem] = []
    for i, its in by_context.items():
        ctx = its[0][2]
        if ctx and all(len(cont) == 1 and c == ctx for _, _, c, cont in its):
            groups[i] = (ctx, [(j, cont[0]) for _, j, _, cont in its])
        else:
            rest.extend(its)
    return groups, rest


def render_chat(tokenizer: Any, messages: Sequence[Message]) -> str:
    """The tokenizer's chat template applied to messages, ready for generation."""
    if not getattr(tokenizer, "chat_template", None):
        raise ChatTemplateMissing(
            "this model has no chat template (a base model?): use plain prompts"
        )
    text = tokenizer.apply_chat_template(
        [dict(m) for m in messages], tokenize=False, add_generation_prompt=True
    )
    if not isinstance(text, str):  # some tokenizers return a list for batched input
        raise TypeError(f"chat template returned {type(text).__name__}, expected str")
    return text


def truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Text up to the earliest stop string (excluded), and whether one was found."""
    cut = min((pos for s in stop if (pos := text.find(s)) >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)
