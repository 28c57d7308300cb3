"""The Open LLM Leaderboards' details datasets in miniature, in huggingface_hub's real cache layout,
for `forgetmap import hub` with ``HF_HUB_OFFLINE=1`` (the real library, no network).

The files are written by ``forgetmap.demo.layouts.leaderboard`` (the cache's layout and both
generations' files are described there; the benchmarks write the same at scale). Each task here is a
list of ``Item``: its options (None: generative) and whether the model was right; the model's
log-likelihoods agree with it. ``V1_BASE``/``V1_CHAT`` and ``V2_BASE``/``V2_INSTRUCT`` are the
trees the integration test imports; the test computes the map's values from them by hand.
"""

from __future__ import annotations

from pathlib import Path

from forgetmap.demo.layouts.leaderboard import (
    v1_details,
    v1_repo,
    v2_repo,
    write_cached_dataset,
)
from forgetmap.demo.layouts.leaderboard_tasks import Item

__all__ = [
    "DATASETS",
    "V1_NEW",
    "V1_OLD",
    "V2_NEW",
    "V2_OLD",
    "Item",
    "v1_details",
    "write_cached_dataset",
    "write_leaderboard_cache",
]


def _mc(question: str, k: int, right: bool, gold: int = 0) -> Item:
    return Item(question, tuple(f"option {i} of {question}" for i in range(k)), right, gold)


def _gen(question: str, right: bool) -> Item:
    return Item(question, None, right)


# ---------------------------------------------------------------------------------------------
# the trees the integration test imports: a base model and its chat/instruct model

V1_OLD, V1_NEW = "2023-08-19T16:35:46.942696", "2023-12-02T13-00-54.924067"
V2_OLD, V2_NEW = "2024-06-16T19-10-04.926831", "2024-10-01T08-00-00.000001"

ARC_K = (4, 4, 4, 4, 3, 3, 5)  # ARC-Challenge: a few items have 3 or 5 options
TRUTHFUL_MC1 = (2, 2, 4, 4)  # mc1's options per question (mc2's: 3 more)
PRO_K = (10, 10, 9)  # MMLU-Pro: 10 options, a few items fewer
PLACEMENT_K = (3, 5, 5)  # MuSR object placements: each item its own


def _truthful(rights: list[bool]) -> list[Item]:
    return [
        Item(f"truthful {i}", tuple(f"answer {j}" for j in range(n + 3)), r, mc1=n)
        for i, (n, r) in enumerate(zip(TRUTHFUL_MC1, rights, strict=True))
    ]


def _v1_tasks(arc, anatomy, truthful, winogrande, gsm8k) -> dict:
    """The latest run's tasks; ARC's ``acc`` disagrees with its ``acc_norm`` (the leaderboard's),
    TruthfulQA's ``mc2`` is a probability mass."""

    def flags(values):
        return [int(v) for v in values]

    return {
        "harness|arc:challenge|25": (
            [_mc(f"arc {i}", k, bool(r)) for i, (k, r) in enumerate(zip(ARC_K, arc, strict=True))],
            {"acc": [1 - r for r in arc], "acc_norm": flags(arc)},
        ),
        "harness|hendrycksTest-anatomy|5": (
            [_mc(f"anatomy {i}", 4, bool(r), gold=i % 4) for i, r in enumerate(anatomy)],
            {"acc": flags(anatomy), "acc_norm": [1] * len(anatomy)},
        ),
        "harness|truthfulqa:mc|0": (
            _truthful([bool(r) for r in truthful]),
            {"mc1": flags(truthful), "mc2": [0.4] * len(truthful)},
        ),
        "harness|winogrande|5": (
            [_mc(f"wino {i}", 2, bool(r)) for i, r in enumerate(winogrande)],
            {"acc": flags(winogrande)},
        ),
        "harness|gsm8k|5": (
            [_gen(f"gsm {i}", bool(r)) for i, r in enumerate(gsm8k)],
            {"acc": flags(gsm8k)},
        ),
        # a 0-shot run of gsm8k beside the scored 5-shot one: not the leaderboard's
        "harness|gsm8k|0": ([_gen("gsm 0", True)], {"acc": [1]}),
    }


def _v1(model: str, latest: dict, layout: str) -> dict:
    older = {
        "harness|arc:challenge|25": (
            [_mc(f"arc {i}", k, False) for i, k in enumerate(ARC_K)],
            {"acc": [0] * len(ARC_K), "acc_norm": [0] * len(ARC_K)},
        )
    }
    return v1_repo(model, [(V1_OLD, older), (V1_NEW, latest)], layout=layout)


# the base's files keep the datasets' own ids in ``example`` (the question in ``query``), the
# chat model's the question; a third model answers as the chat model, in lighteval's rows: all
# three pair on the questions
V1_BASE = _v1(
    "acme/Tiny-7B",
    _v1_tasks(
        arc=[1, 1, 0, 0, 0, 1, 0],
        anatomy=[1, 1, 1, 0],
        truthful=[1, 1, 1, 0],
        winogrande=[1, 1, 1, 0],
        gsm8k=[1, 1, 0],
    ),
    "harness-ids",
)
_CHAT = dict(
    arc=[1, 0, 0, 1, 0, 0, 1],
    anatomy=[1, 0, 1, 1],
    truthful=[0, 1, 0, 0],
    winogrande=[1, 1, 0, 0],
    gsm8k=[0, 1, 1],
)
V1_CHAT = _v1("acme/Tiny-7B-Chat", _v1_tasks(**_CHAT), "harness")
V1_LIGHTEVAL = _v1("acme/Tiny-7B-Instruct", _v1_tasks(**_CHAT), "lighteval")


def _v2(model: str, navigate, gpqa, pro, placements, team, algebra, ifeval) -> dict:
    def mc(name, ks, rights, metric):
        items = [
            _mc(f"{name} {i}", k, bool(r)) for i, (k, r) in enumerate(zip(ks, rights, strict=True))
        ]
        return items, {metric: [float(r) for r in rights]}

    first = {
        "leaderboard_bbh_navigate": mc("navigate", [2] * 4, navigate, "acc_norm"),
        "leaderboard_gpqa_diamond": mc("gpqa", [4] * 4, [0, 0, 0, 0], "acc_norm"),  # rerun later
    }
    latest = {
        "leaderboard_gpqa_diamond": mc("gpqa", [4] * 4, gpqa, "acc_norm"),
        "leaderboard_mmlu_pro": mc("pro", PRO_K, pro, "acc"),
        "leaderboard_musr_object_placements": mc("place", PLACEMENT_K, placements, "acc_norm"),
        "leaderboard_musr_team_allocation": mc("team", [3, 3], team, "acc_norm"),
        "leaderboard_math_algebra_hard": (
            [_gen(f"algebra {i}", bool(r)) for i, r in enumerate(algebra)],
            {"exact_match": [float(r) for r in algebra]},
        ),
        "leaderboard_ifeval": (
            [_gen(f"instruction {i}", bool(r)) for i, r in enumerate(ifeval)],
            {
                "prompt_level_strict_acc": [bool(r) for r in ifeval],
                "inst_level_strict_acc": [[bool(r), True] for r in ifeval],
            },
        ),
    }
    return v2_repo(model, [(V2_OLD, ".json", first), (V2_NEW, ".jsonl", latest)])


V2_BASE = _v2(
    "acme/Tiny-8B",
    navigate=[1, 1, 1, 0],
    gpqa=[1, 0, 0, 1],
    pro=[0, 0, 1],
    placements=[0, 0, 1],
    team=[1, 0],
    algebra=[1, 0],
    ifeval=[1, 0],
)
V2_INSTRUCT = _v2(
    "acme/Tiny-8B-Instruct",
    navigate=[1, 1, 0, 1],
    gpqa=[0, 0, 0, 1],
    pro=[1, 0, 0],
    placements=[0, 0, 0],
    team=[1, 1],
    algebra=[0, 0],
    ifeval=[1, 1],
)

DATASETS = {
    "open-llm-leaderboard-old/details_acme__Tiny-7B": V1_BASE,
    "open-llm-leaderboard-old/details_acme__Tiny-7B-Chat": V1_CHAT,
    "open-llm-leaderboard-old/details_acme__Tiny-7B-Instruct": V1_LIGHTEVAL,
    "open-llm-leaderboard/acme__Tiny-8B-details": V2_BASE,
    "open-llm-leaderboard/acme__Tiny-8B-Instruct-details": V2_INSTRUCT,
}


def write_leaderboard_cache(cache: Path) -> Path:
    """The four datasets in a Hugging Face cache at ``cache``."""
    for repo_id, files in DATASETS.items():
        write_cached_dataset(cache, repo_id, files)
    return cache
