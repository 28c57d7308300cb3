"""The name rule of `pair suggest`: X -> X plus a post-training tag, and what it must not match."""

from __future__ import annotations

import pytest
from forgetmap.services.pair_suggest import suggest_pairs


@pytest.mark.parametrize(
    ("base", "post", "stage"),
    [
        ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct", "instruct"),
        ("google/gemma-2-9b", "google/gemma-2-9b-it", "instruct"),
        ("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf", "instruct"),
        ("mistralai/Mistral-7B-v0.1", "mistralai/Mistral-7B-Instruct-v0.1", "instruct"),
        ("Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct-v2", "instruct"),
        ("olmo-7b", "olmo-7b_SFT", "sft"),
        ("olmo-7b-sft", "olmo-7b-sft-dpo", "rl"),
        ("x", "x-KTO", "rl"),
    ],
)
def test_a_tagged_name_is_suggested_with_its_stage(base, post, stage):
    found = suggest_pairs([base, post, "unrelated/model"], set(), card_bases=lambda _: [])
    assert [(s.base, s.post, s.evidence, s.stage) for s in found] == [
        (base, post, ("name",), stage)
    ]


@pytest.mark.parametrize(
    ("base", "post"),
    [
        ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B-Instruct"),  # another size
        ("mistralai/Mistral-7B-v0.1", "mistralai/Mistral-7B-Instruct-v0.2"),  # another version
        ("org/Base-7B", "other/Base-7B-Instruct"),  # another organisation
        ("x", "x-instructions"),  # a word that starts like a tag
        ("x", "xy-chat"),
    ],
)
def test_names_that_only_look_alike_are_not_suggested(base, post):
    assert suggest_pairs([base, post], set(), card_bases=lambda _: []) == []


def test_stored_pairs_are_not_suggested_again_and_a_card_needs_a_stored_base():
    cards = {"lab/tuned": ["org/base", "org/not-stored"], "org/base": ["lab/tuned"]}
    found = suggest_pairs(["org/base", "lab/tuned"], set(), card_bases=lambda m: cards.get(m, []))
    assert [(s.base, s.post, s.evidence) for s in found] == [
        ("lab/tuned", "org/base", ("model card",)),
        ("org/base", "lab/tuned", ("model card",)),
    ]
    assert suggest_pairs(["x", "x-it"], {("x", "x-it")}, card_bases=lambda _: []) == []
