"""The Open LLM Leaderboards' details datasets in miniature, in huggingface_hub's real cache layout,
for `forgetmap import hub` with ``HF_HUB_OFFLINE=1`` (the real library, no network).

The cache, as huggingface_hub 2.4 writes and reads it (``_snapshot_download.py``,
``file_download.py``, ``_tree_cache.py``): ``<HF_HUB_CACHE>/datasets--<org>--<name>/`` holds
``blobs/<git sha1>`` (the files' bytes), ``snapshots/<commit>/<path in the repo>`` (relative links
to the blobs), ``refs/main`` (the commit main is at) and ``trees/<commit>.json`` (the repo's file
listing, by which an offline ``snapshot_download`` checks that the snapshot holds what is asked).

The datasets, from their own READMEs and the writers' source (``app.importers.hub.leaderboards``):

- v1 ``open-llm-leaderboard-old/details_<org>__<model>``: ``results_<run>.json`` at the root
  (lighteval's ``config_general`` and ``results``), ``<run>/details_harness|<task>|<shots>_<run>
  .parquet`` in lighteval's flat ``Detail`` columns; 2023's first runs spell times with colons.
- v2 ``open-llm-leaderboard/<org>__<model>-details``: ``<org>__<model>/results_<run>.json`` (lm-eval's
  ``results``, ``configs``, ``config.model_args``, ``model_name``) beside
  ``samples_leaderboard_<task>_<run>.jsonl`` lines of lm-eval 0.4.3 (no ``filter``; ``.json`` in
  June 2024's first runs).

Each task is a list of ``Item``: its options (None: generative) and whether the model was right;
the model's log-likelihoods agree with it. ``V1_BASE``/``V1_CHAT`` and ``V2_BASE``/``V2_INSTRUCT``
are the trees the integration test imports; the test computes the map's values from them by hand.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


@dataclass(frozen=True)
class Item:
    """One question: its options (None: generative), the gold option, whether the model was
    right, and (v1 TruthfulQA) how many of the options are mc1's."""

    question: str
    options: tuple[str, ...] | None
    right: bool
    gold: int = 0
    mc1: int | None = None


def _mc(question: str, k: int, right: bool, gold: int = 0) -> Item:
    return Item(question, tuple(f"option {i} of {question}" for i in range(k)), right, gold)


def _gen(question: str, right: bool) -> Item:
    return Item(question, None, right)


def _lls(item: Item) -> list[float]:
    """Log-likelihoods whose best is the gold option when the model was right, another when not."""
    n = len(item.options or ())
    best = item.gold if item.right else (item.gold + 1) % n
    return [-0.25 if i == best else -1.5 - i / 10 for i in range(n)]


# ---------------------------------------------------------------------------------------------
# v1: lighteval details


def _v1_row(item: Item, metrics: dict[str, Any], shots: int) -> dict[str, Any]:
    query = f"Question: {item.question}\nAnswer:"
    row = {
        "example": query,
        "instruction": "",
        "full_prompt": "Question: a solved example?\nAnswer: yes\n\n" * shots + query,
        "num_effective_few_shots": shots,
        "num_asked_few_shots": shots,
        "input_tokens": [[1, 2, 3]],
        "cont_tokens": [[4]],
        "truncated": [0],
        "padded": [0],
        "pred_logits": [],
        "metrics": metrics,
        "specifics": None,
    }
    if item.options is None:  # generative: the reference answer is the one "choice"
        answer = f"answer to {item.question}"
        said = answer if item.right else "something else"
        return {**row, "predictions": [f"The answer is {said}"], "gold": [answer],
                "choices": [answer], "gold_index": [0]}  # fmt: skip
    lls = _lls(item)
    n = len(lls)
    winner = max(range(n), key=lls.__getitem__)
    row.update(
        predictions=[(ll, i == winner) for i, ll in enumerate(lls)],
        input_tokens=[[1, 2, 3]] * n,
        cont_tokens=[[4 + i] for i in range(n)],
        truncated=[0] * n,
        padded=[0] * n,
        gold=[],
        choices=[f" {o}" for o in item.options],
        gold_index=[item.gold],
    )
    if item.mc1 is not None:  # truthfulqa:mc: mc1's options, then mc2's (whose first is true)
        row.update(gold_index=[0, item.mc1], specifics={"len_mc1": item.mc1})
    return row


def v1_details(task: str, items: list[Item], metric_values: dict[str, list[Any]]) -> bytes:
    """A details parquet of lighteval's flat ``Detail`` rows (columns sorted, as it writes)."""
    shots = int(task.rsplit("|", 1)[1])
    rows = [
        _v1_row(item, {m: v[i] for m, v in metric_values.items()}, shots)
        for i, item in enumerate(items)
    ]
    table = pa.Table.from_pylist(rows)
    sink = pa.BufferOutputStream()
    pq.write_table(table.select(sorted(table.column_names)), sink)
    return sink.getvalue().to_pybytes()


def v1_results(model: str, revision: str, tasks: list[str]) -> bytes:
    results = {task: {"acc": 0.5, "acc_stderr": 0.1} for task in tasks}
    document = {
        "config_general": {
            "lighteval_sha": "0" * 40,
            "model_name": model,
            "model_sha": revision,
            "model_dtype": "torch.bfloat16",
        },
        "results": {**results, "all": {"acc": 0.5}},
        "versions": dict.fromkeys(tasks, 0),
    }
    return json.dumps(document, indent=4).encode()


def v1_repo(model: str, runs: list[tuple[str, dict[str, tuple[list[Item], dict]]]]) -> dict:
    """{path in the repo: bytes} of a v1 dataset: per run (its timestamp as written, the tasks'
    items and metric values), its results file at the root and its details files."""
    files = {}
    for stamp, tasks in runs:
        files[f"results_{stamp}.json"] = v1_results(model, "a" * 40, list(tasks))
        for task, (items, metrics) in tasks.items():
            files[f"{stamp}/details_{task}_{stamp}.parquet"] = v1_details(task, items, metrics)
    return files


# ---------------------------------------------------------------------------------------------
# v2: lm-eval samples


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _v2_line(doc_id: int, item: Item, metrics: dict[str, Any]) -> dict[str, Any]:
    doc = {"question": item.question, "choices": list(item.options or ())}
    context = f"{item.question}\nAnswer:"
    if item.options is None:
        answer = f"answer to {item.question}"
        text = answer if item.right else "something else"
        arguments = {"gen_args_0": {"arg_0": context, "arg_1": {"until": ["Problem:"],
                                                                 "do_sample": False}}}  # fmt: skip
        resps, filtered, target = [[text]], [text], answer
    else:
        lls = _lls(item)
        arguments = {f"gen_args_{i}": {"arg_0": context, "arg_1": f" ({chr(65 + i)})"}
                     for i in range(len(lls))}  # fmt: skip
        resps = [[[str(ll), "False"]] for ll in lls]
        filtered = [[str(ll), "False"] for ll in lls]
        target = str(item.gold)
    return {"doc_id": doc_id, "doc": doc, "target": target, "arguments": arguments,
            "resps": resps, "filtered_resps": filtered,
            "doc_hash": _sha(json.dumps(doc, indent=2)), "prompt_hash": _sha(context),
            "target_hash": _sha(target), **metrics}  # fmt: skip


def v2_samples(items: list[Item], metric_values: dict[str, list[Any]]) -> bytes:
    lines = [
        _v2_line(i, item, {m: v[i] for m, v in metric_values.items()})
        for i, item in enumerate(items)
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def v2_results(model: str, revision: str, tasks: list[str]) -> bytes:
    groups = {"leaderboard", "leaderboard_bbh", "leaderboard_musr", "leaderboard_math_hard"}
    document = {
        "results": {task: {"alias": task} for task in [*groups, *tasks]},
        "configs": {task: {"task": task} for task in tasks},
        "config": {
            "model": "hf",
            "model_args": f"pretrained={model},revision={revision},"
            "trust_remote_code=False,dtype=bfloat16",
        },
        "model_name": model,
        "model_name_sanitized": model.replace("/", "__"),
    }
    return json.dumps(document, indent=2).encode()


def v2_repo(model: str, runs: list[tuple[str, str, dict[str, tuple[list[Item], dict]]]]) -> dict:
    """{path in the repo: bytes} of a v2 dataset: per run (timestamp, samples files' suffix, the
    tasks' items and metric values), its results and samples files in the model's folder."""
    folder = model.replace("/", "__")
    files = {}
    for stamp, suffix, tasks in runs:
        files[f"{folder}/results_{stamp}.json"] = v2_results(model, "b" * 40, list(tasks))
        for task, (items, metrics) in tasks.items():
            files[f"{folder}/samples_{task}_{stamp}{suffix}"] = v2_samples(items, metrics)
    return files


# ---------------------------------------------------------------------------------------------
# the cache


def write_cached_dataset(cache: Path, repo_id: str, files: dict[str, bytes]) -> str:
    """``files`` as huggingface_hub's cache holds dataset ``repo_id`` after a download of main;
    returns the commit."""
    storage = cache / f"datasets--{repo_id.replace('/', '--')}"
    commit = hashlib.sha1(repr(sorted(files.items())).encode()).hexdigest()  # noqa: S324
    listing = {}
    for path, data in files.items():
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 - git's id
        (storage / "blobs").mkdir(parents=True, exist_ok=True)
        (storage / "blobs" / blob).write_bytes(data)
        link = storage / "snapshots" / commit / path
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path("../" * (path.count("/") + 2), "blobs", blob))
        listing[path] = {"size": len(data), "blob_id": blob}
    (storage / "refs").mkdir(parents=True, exist_ok=True)
    (storage / "refs" / "main").write_text(commit)
    (storage / "trees").mkdir(exist_ok=True)
    trees = {"format_version": 1, "files": listing}
    (storage / "trees" / f"{commit}.json").write_text(json.dumps(trees))
    return commit


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


def _v1(model: str, latest: dict) -> dict:
    older = {"harness|arc:challenge|25": (
        [_mc(f"arc {i}", k, False) for i, k in enumerate(ARC_K)],
        {"acc": [0] * len(ARC_K), "acc_norm": [0] * len(ARC_K)})}  # fmt: skip
    return v1_repo(model, [(V1_OLD, older), (V1_NEW, latest)])


V1_BASE = _v1("acme/Tiny-7B", _v1_tasks(
    arc=[1, 1, 0, 0, 0, 1, 0], anatomy=[1, 1, 1, 0], truthful=[1, 1, 1, 0],
    winogrande=[1, 1, 1, 0], gsm8k=[1, 1, 0]))  # fmt: skip
V1_CHAT = _v1("acme/Tiny-7B-Chat", _v1_tasks(
    arc=[1, 0, 0, 1, 0, 0, 1], anatomy=[1, 0, 1, 1], truthful=[0, 1, 0, 0],
    winogrande=[1, 1, 0, 0], gsm8k=[0, 1, 1]))  # fmt: skip


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


V2_BASE = _v2("acme/Tiny-8B", navigate=[1, 1, 1, 0], gpqa=[1, 0, 0, 1], pro=[0, 0, 1],
              placements=[0, 0, 1], team=[1, 0], algebra=[1, 0], ifeval=[1, 0])  # fmt: skip
V2_INSTRUCT = _v2("acme/Tiny-8B-Instruct", navigate=[1, 1, 0, 1], gpqa=[0, 0, 0, 1],
                  pro=[1, 0, 0], placements=[0, 0, 0], team=[1, 1], algebra=[0, 0],
                  ifeval=[1, 1])  # fmt: skip

DATASETS = {
    "open-llm-leaderboard-old/details_acme__Tiny-7B": V1_BASE,
    "open-llm-leaderboard-old/details_acme__Tiny-7B-Chat": V1_CHAT,
    "open-llm-leaderboard/acme__Tiny-8B-details": V2_BASE,
    "open-llm-leaderboard/acme__Tiny-8B-Instruct-details": V2_INSTRUCT,
}


def write_leaderboard_cache(cache: Path) -> Path:
    """The four datasets in a Hugging Face cache at ``cache``."""
    for repo_id, files in DATASETS.items():
        write_cached_dataset(cache, repo_id, files)
    return cache
