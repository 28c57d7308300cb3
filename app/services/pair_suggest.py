"""Pairs found, not typed: base -> post-trained pairs proposed among the stored models.

Two kinds of evidence, each named on every suggestion:

- ``model card``: the post model's card on the hub names the base in its ``base_model`` metadata.
  Read only from the local Hugging Face cache (``hf_hub_download(..., local_files_only=True)``,
  so ``HF_HUB_CACHE``/``HF_HOME`` apply and nothing is fetched): a model whose card is not cached
  simply has no card evidence.
- ``name``: the post model's name is the base's plus a post-training tag: ``X`` -> ``X-Instruct``,
  ``X-Chat``, ``X-it``, ``X-SFT``, ``X-DPO`` (also ``-RLHF``, ``-ORPO``, ``-KTO``), any case, with
  ``-`` or ``_``, a version after the tag (``X-Instruct-v0.2``; the base's own version moves
  after the tag: ``Mistral-7B-v0.1`` -> ``Mistral-7B-Instruct-v0.1``), and a trailing ``-hf`` on
  either side ignored (``Llama-2-7b-hf`` -> ``Llama-2-7b-chat-hf``).

Pairs already stored are not suggested again. The stage follows the tag (``instruct``/``chat``/
``it`` -> instruct, ``sft`` -> sft, preference tuning -> rl); a card alone says nothing of it.

`forgetmap pair suggest --accept` and the page ``/pairs/suggest`` both find the suggestions with
``stored_suggestions`` and add the chosen ones with ``accept``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from forgetmap.core.errors import InputError
from forgetmap.core.stages import Stage
from forgetmap.db import Store, queries
from forgetmap.db.pairing import add_pair

TAG_STAGES = {
    "instruct": Stage.instruct,
    "chat": Stage.instruct,
    "it": Stage.instruct,
    "sft": Stage.sft,
    "dpo": Stage.rl,
    "rlhf": Stage.rl,
    "orpo": Stage.rl,
    "kto": Stage.rl,
}
_POST_NAME = re.compile(
    r"^(?P<core>.+?)[-_](?P<tag>" + "|".join(TAG_STAGES) + r")(?P<version>[-_]v?\d+(\.\d+)*)?$",
    re.IGNORECASE,
)
_HF_SUFFIX = re.compile(r"[-_]hf$", re.IGNORECASE)

CARD, NAME = "model card", "name"


@dataclass(frozen=True)
class Suggestion:
    """A proposed pair and what it rests on."""

    base: str
    post: str
    evidence: tuple[str, ...]
    stage: str | None

    @property
    def label(self) -> str:
        tail = self.post.rsplit("/", 1)[-1]
        return f"{self.base.rsplit('/', 1)[-1]} -> {tail}"


def _name_match(base: str, post: str) -> str | None:
    """The post-training tag when ``post``'s name is ``base``'s plus a tag, else None."""
    match = _POST_NAME.match(_HF_SUFFIX.sub("", post))
    if match is None:
        return None
    base = _HF_SUFFIX.sub("", base).lower()
    core, version = match["core"].lower(), (match["version"] or "").lower()
    # the base's own version may follow the tag: Mistral-7B-v0.1 -> Mistral-7B-Instruct-v0.1
    if core != base and not (version and core + version == base):
        return None
    return match["tag"].lower()


def card_bases_from_cache(model: str) -> list[str]:
    """The ``base_model`` entries of ``model``'s card in the local hub cache ([] when the card is
    not cached, the name is not a hub id, or huggingface_hub is not installed)."""
    if "/" not in model:
        return []
    try:
        from huggingface_hub import ModelCard, hf_hub_download
        from huggingface_hub.errors import HFValidationError
    except ImportError:
        return []
    try:
        path = hf_hub_download(model, "README.md", local_files_only=True)
        data = ModelCard.load(path, ignore_metadata_errors=True).data
    except (OSError, ValueError, HFValidationError):  # not cached, a bad id, a broken card
        return []
    bases = getattr(data, "base_model", None) or []
    return [bases] if isinstance(bases, str) else [b for b in bases if isinstance(b, str)]


def suggest_pairs(
    models: Iterable[str],
    existing: set[tuple[str, str]],
    card_bases: Callable[[str], list[str]] = card_bases_from_cache,
) -> list[Suggestion]:
    """Every (base, post) among ``models`` that a card or a name supports, not yet a pair; sorted
    by evidence (both, card, name), then names."""
    names = sorted(set(models))
    stored = {n.lower(): n for n in names}
    found: dict[tuple[str, str], dict] = {}
    for post in names:
        for base in card_bases(post):
            if base.lower() in stored and stored[base.lower()] != post:
                entry = found.setdefault((stored[base.lower()], post), {"evidence": set()})
                entry["evidence"].add(CARD)
        for base in names:
            tag = _name_match(base, post) if base != post else None
            if tag is not None:
                entry = found.setdefault((base, post), {"evidence": set()})
                entry["evidence"].add(NAME)
                entry["stage"] = TAG_STAGES[tag].value
    out = [
        Suggestion(base, post, tuple(e for e in (CARD, NAME) if e in v["evidence"]), v.get("stage"))
        for (base, post), v in found.items()
        if (base, post) not in existing
    ]
    return sorted(out, key=lambda s: (-len(s.evidence), s.evidence, s.base, s.post))


def stored_suggestions(
    store: Store, card_bases: Callable[[str], list[str]] = card_bases_from_cache
) -> list[Suggestion]:
    """The suggestions among the models stored now (the cards read after the store's read)."""
    with store.read() as conn:
        existing = {(p["base"], p["post"]) for p in queries.list_pairs(conn)}
        names = [m["name"] for m in queries.models(conn)]
    return suggest_pairs(names, existing, card_bases)


def suggestion_record(s: Suggestion, number: int) -> dict:
    """A suggestion as the JSON of `pair suggest --format json` and ``/api/pairs/suggestions``
    have it; ``number`` is the one `--accept` takes."""
    return {
        "number": number,
        "base": s.base,
        "post": s.post,
        "evidence": list(s.evidence),
        "stage": s.stage,
        "label": s.label,
    }


def named(suggestions: Sequence[Suggestion], wanted: Iterable[tuple[str, str]]) -> list[Suggestion]:
    """The suggestions ``wanted`` names by (base, post), once each, in the order given;
    InputError for a pair that is not (or no longer) suggested."""
    by_names = {(s.base, s.post): s for s in suggestions}
    chosen: dict[tuple[str, str], Suggestion] = {}
    for base, post in wanted:
        if (base, post) not in by_names:
            raise InputError(
                f"{base} -> {post} is not a suggested pair (any more): it may have been added "
                "meanwhile; reload the suggestions"
            )
        chosen.setdefault((base, post), by_names[(base, post)])
    return list(chosen.values())


def accept(store: Store, chosen: Sequence[Suggestion]) -> list[tuple[int, Suggestion]]:
    """Add the chosen suggestions as pairs, each labelled ``Base -> Post`` with its stage, in one
    transaction (all or none); answers (pair id, suggestion) per pair added."""
    added: list[tuple[int, Suggestion]] = []
    if not chosen:
        return added
    with store.transaction() as conn:
        for s in chosen:
            pair_id, _, _ = add_pair(conn, s.base, s.post, label=s.label, stage=s.stage)
            added.append((pair_id, s))
    return added
