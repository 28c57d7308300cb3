"""The Open LLM Leaderboards' details datasets, both generations, in huggingface_hub's cache layout:
what ``forgetmap import hub`` reads with ``HF_HUB_OFFLINE=1``, for the tests (a few hand-made
questions) and the benchmarks (``write_dataset``: every scored task at its real size, or a
fraction of it).

The cache, as huggingface_hub 2.4 writes and reads it (``_snapshot_download.py``,
``file_download.py``, ``_tree_cache.py``): ``<HF_HUB_CACHE>/datasets--<org>--<name>/`` holds
``blobs/<git sha1>`` (the files' bytes), ``snapshots/<commit>/<path in the repo>`` (relative links
to the blobs), ``refs/main`` (the commit main is at) and ``trees/<commit>.json`` (the repo's file
listing, by which an offline ``snapshot_download`` checks that the snapshot holds what is asked).

The datasets, from their own READMEs and the writers' source (``forgetmap.importers.hub.leaderboards``):

- v1 ``open-llm-leaderboard-old/details_<org>__<model>``: ``results_<run>.json`` at the root
  (lighteval's ``config_general`` and ``results``), ``<run>/details_harness|<task>|<shots>_<run>
  .parquet`` as the leaderboard's harness wrote them (a column per metric; ``V1_LAYOUTS`` for the
  others), the prompt's token ids once per option in ``input_tokens``; 2023's first runs spell
  times with colons.
- v2 ``open-llm-leaderboard/<org>__<model>-details``: ``<org>__<model>/results_<run>.json``
  (lm-eval's ``results``, ``configs``, ``config.model_args``, ``model_name``) beside
  ``samples_leaderboard_<task>_<run>.jsonl`` lines of lm-eval 0.4.3 (no ``filter``; the context
  repeated in each option's request; ``.json`` in June 2024's first runs).

A task is a list of ``Item``: a question as the harness shows it, its options (None: generative)
and whether the model was right; the model's log-likelihoods agree with it. ``SHAPES`` gives
each generation's scored tasks with their real sizes, option counts and few-shot counts;
``questions`` makes a task's questions (seeded: every model of a bench gets the same ones) and
``write_dataset`` one model's dataset, right where its skill beats a question's difficulty.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


# ---------------------------------------------------------------------------------------------
# the cache


class CachedDataset:
    """One dataset in a huggingface_hub cache as a download of main leaves it, written file by
    file (``add``; ``finish`` writes the ref and the listing and returns the commit)."""

    def __init__(self, cache: Path, repo_id: str) -> None:
        self.storage = Path(cache) / f"datasets--{repo_id.replace('/', '--')}"
        (self.storage / "blobs").mkdir(parents=True, exist_ok=True)
        self.listing: dict[str, dict[str, Any]] = {}

    def add(self, path: str, chunks: bytes | Iterable[bytes]) -> int:
        """Store the file at ``path`` in the repo (its bytes, or them in pieces, so that a large
        file is never whole in memory); returns its size."""
        hold = tempfile.NamedTemporaryFile(dir=self.storage / "blobs", delete=False)  # noqa: SIM115
        with hold:
            for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
                hold.write(chunk)
        size = os.path.getsize(hold.name)
        blob = hashlib.sha1(b"blob %d\0" % size)  # noqa: S324 - git's object id, not security
        with open(hold.name, "rb") as fh:
            while block := fh.read(1 << 20):
                blob.update(block)
        os.replace(hold.name, self.storage / "blobs" / blob.hexdigest())
        self.listing[path] = {"size": size, "blob_id": blob.hexdigest()}
        return size

    def finish(self) -> str:
        """Link every file into the snapshot of main; the commit (a digest of the listing)."""
        listed = json.dumps(sorted(self.listing.items())).encode()
        commit = hashlib.sha1(listed).hexdigest()  # noqa: S324
        for path, entry in self.listing.items():
            link = self.storage / "snapshots" / commit / path
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(Path("../" * (path.count("/") + 2), "blobs", entry["blob_id"]))
        (self.storage / "refs").mkdir(exist_ok=True)
        (self.storage / "refs" / "main").write_text(commit)
        (self.storage / "trees").mkdir(exist_ok=True)
        trees = {"format_version": 1, "files": self.listing}
        (self.storage / "trees" / f"{commit}.json").write_text(json.dumps(trees))
        return commit


def write_cached_dataset(cache: Path, repo_id: str, files: Mapping[str, bytes]) -> str:
    """``files`` ({path in the repo: bytes}) as huggingface_hub's cache holds dataset
    ``repo_id`` after a download of main; returns the commit."""
    dataset = CachedDataset(cache, repo_id)
    for path, data in files.items():
        dataset.add(path, data)
    return dataset.finish()


# ---------------------------------------------------------------------------------------------
# questions and the rows of both generations


@dataclass(frozen=True)
class Item:
    """One question as the harness showed it (``question``, after the few-shot ``context``), its
    options (None: generative), the gold option, whether the model was right, (v1 TruthfulQA)
    how many options are mc1's, and for generative ones the reference answer and the model's
    text (defaults: "answer to <question>", said or not). ``doc``: v2's dataset row."""

    question: str
    options: tuple[str, ...] | None
    right: bool
    gold: int = 0
    mc1: int | None = None
    context: str = ""
    reference: str | None = None
    response: str | None = None
    doc: Mapping[str, Any] | None = None

    @property
    def answer(self) -> str:
        return self.reference or f"answer to {self.question}"

    @property
    def said(self) -> str:
        """The model's text of a generative question."""
        return self.response or (self.answer if self.right else "something else")


def loglikelihoods(item: Item) -> list[float]:
    """Per option: the best is the gold option when the model was right, another when not."""
    n = len(item.options or ())
    best = item.gold if item.right else (item.gold + 1) % n
    return [-0.25 if i == best else -1.5 - i / 10 for i in range(n)]


def _token_ids(text: str) -> np.ndarray:
    """Token ids of ``text`` as a tokenizer would give them: one per 4 bytes, the same text the
    same ids (a shared few-shot block compresses as in the real files)."""
    raw = text.encode() or b" "
    raw += b" " * (-len(raw) % 4)
    return np.frombuffer(raw, dtype="<u4").astype(np.int64) % 32_000


def _lists(per_row: list[list[np.ndarray]]) -> pa.Array:
    """``list<list<int64>>`` of per row, per option, the ids."""
    inner = [ids for row in per_row for ids in row]
    values = pa.array(np.concatenate(inner) if inner else np.zeros(0, np.int64))
    inner_offsets = np.r_[0, np.cumsum([len(ids) for ids in inner])].astype(np.int32)
    outer_offsets = np.r_[0, np.cumsum([len(row) for row in per_row])].astype(np.int32)
    return pa.ListArray.from_arrays(
        pa.array(outer_offsets), pa.ListArray.from_arrays(pa.array(inner_offsets), values)
    )


def _v1_row(item: Item, metrics: dict[str, Any], shots: int) -> dict[str, Any]:
    row = {
        "example": item.question,
        "instruction": "",
        "full_prompt": item.context + item.question,
        "num_effective_few_shots": shots,
        "num_asked_few_shots": shots,
        "pred_logits": [],
        "metrics": metrics,
        "specifics": None,
    }
    if item.options is None:  # generative: the reference answer is the one "choice"
        return {**row, "predictions": [item.said], "gold": [item.answer], "choices": [item.answer],
                "gold_index": [0], "truncated": [0], "padded": [0]}  # fmt: skip
    lls = loglikelihoods(item)
    n = len(lls)
    winner = max(range(n), key=lls.__getitem__)
    row.update(
        predictions=[(ll, i == winner) for i, ll in enumerate(lls)],
        truncated=[0] * n,
        padded=[0] * n,
        gold=[],
        choices=[f" {o}" for o in item.options],
        gold_index=[item.gold],
    )
    if item.mc1 is not None:  # truthfulqa:mc: mc1's options, then mc2's (whose first is true)
        row.update(gold_index=[0, item.mc1], specifics={"len_mc1": item.mc1})
    return row


def _harness_row(item: Item, metrics: dict[str, Any], shots: int, ids: bool) -> dict[str, Any]:
    """A row as the leaderboard v1's harness wrote it (``V1_LAYOUTS``)."""
    asked = item.options or (item.said,)
    row: dict[str, Any] = {
        "example": f"Mercury_{_sha(item.question)[:7]}" if ids else item.question,
        "num_asked_few_shots": shots,
        "num_effective_few_shots": shots,
        "truncated": [0] * len(asked),
        "non_truncated": len(asked),
        "padded": [0] * len(asked),
        "non_padded": len(asked),
        **metrics,
        "hashes": {"example": _sha(item.question), "full_prompt": _sha(item.context + item.question),
                   "input_tokens": _sha(item.context), "cont_tokens": _sha("".join(asked))},
    }  # fmt: skip
    if ids:
        row["query"] = item.question
    if item.options is None:  # generative: the text, the reference answer
        return {**row, "predictions": [item.said], "gold": item.answer}
    return {**row, "predictions": loglikelihoods(item), "choices": list(item.options),
            "gold": item.gold}  # fmt: skip


V1_LAYOUTS = ("harness", "harness-ids", "lighteval")
"""How the leaderboard v1's details files are written. ``harness``: as its fork of lm-eval's
harness wrote them (``forgetmap.importers.lighteval.files``), a column per metric, ``gold`` the
gold option's index, ``predictions`` one log-likelihood per option, ``hashes``; ``harness-ids``:
the same with the dataset's own id in ``example`` and the question in ``query`` (2023's first
ARC files); ``lighteval``: lighteval's flat ``Detail`` rows (a ``metrics`` struct,
``gold_index``, ``(log-likelihood, is greedy)`` pairs). TruthfulQA's multiple choice is always
written in lighteval's rows (its harness columns are not known here)."""


def v1_table(
    task: str, items: list[Item], metric_values: Mapping[str, list[Any]], layout: str = "harness"
) -> pa.Table:
    """A task's details in ``layout`` (``V1_LAYOUTS``; columns sorted, as lighteval writes):
    per option the prompt's token ids (``input_tokens``) and the option's (``cont_tokens``;
    a generative row: its text's)."""
    if layout not in V1_LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(V1_LAYOUTS)}, got {layout!r}")
    shots = int(task.rsplit("|", 1)[1])
    per_row = [{m: v[i] for m, v in metric_values.items()} for i in range(len(items))]
    if layout == "lighteval" or task == "harness|truthfulqa:mc|0":
        rows = [_v1_row(item, m, shots) for item, m in zip(items, per_row, strict=True)]
    else:
        ids = layout == "harness-ids"
        rows = [_harness_row(item, m, shots, ids) for item, m in zip(items, per_row, strict=True)]
    table = pa.Table.from_pylist(rows)
    prompts = [_token_ids(item.context + item.question) for item in items]
    answers = [item.options or (item.said,) for item in items]
    table = table.append_column(
        "input_tokens", _lists([[ids] * len(a) for ids, a in zip(prompts, answers, strict=True)])
    )
    table = table.append_column(
        "cont_tokens", _lists([[_token_ids(t) for t in a] for a in answers])
    )
    return table.select(sorted(table.column_names))


def v1_details(
    task: str, items: list[Item], metric_values: Mapping[str, list[Any]], layout: str = "harness"
) -> bytes:
    """``v1_table`` as the bytes of its parquet file."""
    sink = pa.BufferOutputStream()
    pq.write_table(v1_table(task, items, metric_values, layout), sink)
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


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _v2_line(doc_id: int, item: Item, metrics: dict[str, Any]) -> dict[str, Any]:
    doc = dict(item.doc or {"question": item.question, "choices": list(item.options or ())})
    context = item.context + item.question
    resps: list[Any]
    filtered: list[Any]
    if item.options is None:
        until = {"until": ["Problem:", "</s>"], "do_sample": False, "temperature": 0.0}
        arguments = {"gen_args_0": {"arg_0": context, "arg_1": until}}
        # the filter keeps the answer the text ends with
        answer = item.said.rpartition("The final answer is ")[2]
        resps, filtered, target = [[item.said]], [answer], item.answer
    else:
        lls = loglikelihoods(item)
        arguments = {f"gen_args_{i}": {"arg_0": context, "arg_1": f" ({LETTERS[i]})"}
                     for i in range(len(lls))}  # fmt: skip
        resps = [[[str(ll), "False"]] for ll in lls]
        filtered = [[str(ll), "False"] for ll in lls]
        target = str(item.gold)
    return {"doc_id": doc_id, "doc": doc, "target": target, "arguments": arguments,
            "resps": resps, "filtered_resps": filtered,
            "doc_hash": _sha(json.dumps(doc, indent=2)), "prompt_hash": _sha(context),
            "target_hash": _sha(target), **metrics}  # fmt: skip


def v2_lines(items: list[Item], metric_values: Mapping[str, list[Any]]) -> Iterable[bytes]:
    """A task's samples file, line by line."""
    for i, item in enumerate(items):
        line = _v2_line(i, item, {m: v[i] for m, v in metric_values.items()})
        yield (json.dumps(line) + "\n").encode()


def v2_samples(items: list[Item], metric_values: Mapping[str, list[Any]]) -> bytes:
    return b"".join(v2_lines(items, metric_values))


V2_GROUPS = ("leaderboard", "leaderboard_bbh", "leaderboard_musr", "leaderboard_math_hard")


def v2_results(
    model: str, revision: str, tasks: list[str], groups: tuple[str, ...] = V2_GROUPS
) -> bytes:
    """lm-eval's results file of a run (any push's: ``groups`` are its task groups)."""
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


Tasks = dict[str, tuple[list[Item], dict[str, list[Any]]]]
"""A run's tasks: per task (as the files name it) its items and per metric the items' values."""


def v1_repo(
    model: str, runs: list[tuple[str, Tasks]], revision: str = "a" * 40, layout: str = "harness"
) -> dict:
    """{path in the repo: bytes} of a v1 dataset: per run (its timestamp as written, its tasks)
    the results file at the root and the details files, in ``layout`` (``V1_LAYOUTS``)."""
    files = {}
    for stamp, tasks in runs:
        files[f"results_{stamp}.json"] = v1_results(model, revision, list(tasks))
        for task, (items, metrics) in tasks.items():
            details = v1_details(task, items, metrics, layout)
            files[f"{stamp}/details_{task}_{stamp}.parquet"] = details
    return files


def v2_repo(model: str, runs: list[tuple[str, str, Tasks]], revision: str = "b" * 40) -> dict:
    """{path in the repo: bytes} of a v2 dataset: per run (timestamp, samples files' suffix, its
    tasks) the results and samples files in the model's folder."""
    folder = model.replace("/", "__")
    files = {}
    for stamp, suffix, tasks in runs:
        files[f"{folder}/results_{stamp}.json"] = v2_results(model, revision, list(tasks))
        for task, (items, metrics) in tasks.items():
            files[f"{folder}/samples_{task}_{stamp}{suffix}"] = v2_samples(items, metrics)
    return files


def repo_id(generation: str, model: str) -> str:
    """The dataset the leaderboard of ``generation`` ("v1", "v2") put ``model``'s details in;
    "push": the one ``lm_eval --hf_hub_log_args push_samples_to_hub=True`` pushed them to."""
    sanitized = model.replace("/", "__")
    if generation == "push":
        return f"{model.split('/')[0]}/lm-eval-results-{model.split('/')[-1]}"
    if generation == "v1":
        return f"open-llm-leaderboard-old/details_{sanitized}"
    return f"open-llm-leaderboard/{sanitized}-details"


# ---------------------------------------------------------------------------------------------
# the scored tasks at their real sizes


@dataclass(frozen=True)
class Shape:
    """A scored task: its name in the files, its questions in the real dataset, the option
    counts its questions draw from (() generative), its few-shot count, its metrics (the
    scored one first) and how its questions look (``family``)."""

    task: str
    n: int
    k: tuple[int, ...]
    shots: int
    metrics: tuple[str, ...]
    family: str


# the MMLU test split, questions per subject (14,042)
_MMLU = dict(
    abstract_algebra=100, anatomy=135, astronomy=152, business_ethics=100, clinical_knowledge=265,
    college_biology=144, college_chemistry=100, college_computer_science=100,
    college_mathematics=100, college_medicine=173, college_physics=102, computer_security=100,
    conceptual_physics=235, econometrics=114, electrical_engineering=145,
    elementary_mathematics=378, formal_logic=126, global_facts=100, high_school_biology=310,
    high_school_chemistry=203, high_school_computer_science=100, high_school_european_history=165,
    high_school_geography=198, high_school_government_and_politics=193,
    high_school_macroeconomics=390, high_school_mathematics=270, high_school_microeconomics=238,
    high_school_physics=151, high_school_psychology=545, high_school_statistics=216,
    high_school_us_history=204, high_school_world_history=237, human_aging=223,
    human_sexuality=131, international_law=121, jurisprudence=108, logical_fallacies=163,
    machine_learning=112, management=103, marketing=234, medical_genetics=100, miscellaneous=783,
    moral_disputes=346, moral_scenarios=895, nutrition=306, philosophy=311, prehistory=324,
    professional_accounting=282, professional_law=1534, professional_medicine=272,
    professional_psychology=612, public_relations=110, security_studies=245, sociology=201,
    us_foreign_policy=100, virology=166, world_religions=171,
)  # fmt: skip
# lm-eval's leaderboard/bbh_mc: per task its questions (5,761) and its options
_BBH = dict(
    boolean_expressions=(250, 2), causal_judgement=(187, 2), date_understanding=(250, 6),
    disambiguation_qa=(250, 3), formal_fallacies=(250, 2), geometric_shapes=(250, 11),
    hyperbaton=(250, 2), logical_deduction_five_objects=(250, 5),
    logical_deduction_seven_objects=(250, 7), logical_deduction_three_objects=(250, 3),
    movie_recommendation=(250, 5), navigate=(250, 2), object_counting=(250, 19),
    penguins_in_a_table=(146, 5), reasoning_about_colored_objects=(250, 18), ruin_names=(250, 4),
    salient_translation_error_detection=(250, 6), snarks=(178, 2), sports_understanding=(250, 2),
    temporal_sequences=(250, 4), tracking_shuffled_objects_five_objects=(250, 5),
    tracking_shuffled_objects_seven_objects=(250, 7),
    tracking_shuffled_objects_three_objects=(250, 3), web_of_lies=(250, 2),
)  # fmt: skip
_MATH = dict(algebra=307, counting_and_prob=123, geometry=132, intermediate_algebra=280,
             num_theory=154, prealgebra=193, precalculus=135)  # fmt: skip
# MMLU-Pro: 10 options, one question in six fewer (its duplicate options were removed)
_PRO_K = (10,) * 40 + (3, 4, 5, 6, 7, 8, 9, 9)

SHAPES: dict[str, tuple[Shape, ...]] = {
    "v1": (
        Shape("harness|arc:challenge|25", 1172, (4,) * 60 + (3, 5), 25, ("acc_norm", "acc"), "arc"),
        Shape("harness|hellaswag|10", 10042, (4,), 10, ("acc_norm", "acc"), "hellaswag"),
        *(Shape(f"harness|hendrycksTest-{s}|5", n, (4,), 5, ("acc",), "mmlu")
          for s, n in _MMLU.items()),
        Shape("harness|truthfulqa:mc|0", 817, (2, 3, 4, 4, 5, 5, 6, 7, 8, 13), 0, ("mc1", "mc2"),
              "truthfulqa"),
        Shape("harness|winogrande|5", 1267, (2,), 5, ("acc",), "winogrande"),
        Shape("harness|gsm8k|5", 1319, (), 5, ("acc",), "gsm8k"),
    ),
    "v2": (
        *(Shape(f"leaderboard_bbh_{t}", n, (k,), 3, ("acc_norm",), "bbh")
          for t, (n, k) in _BBH.items()),
        *(Shape(f"leaderboard_gpqa_{s}", n, (4,), 0, ("acc_norm",), "gpqa")
          for s, n in (("diamond", 198), ("extended", 546), ("main", 448))),
        Shape("leaderboard_mmlu_pro", 12032, _PRO_K, 5, ("acc",), "mmlu_pro"),
        Shape("leaderboard_musr_murder_mysteries", 250, (2,), 0, ("acc_norm",), "musr"),
        Shape("leaderboard_musr_object_placements", 256, (3, 4, 5), 0, ("acc_norm",), "musr"),
        Shape("leaderboard_musr_team_allocation", 250, (3,), 0, ("acc_norm",), "musr"),
        *(Shape(f"leaderboard_math_{s}_hard", n, (), 4, ("exact_match",), "math")
          for s, n in _MATH.items()),
        Shape("leaderboard_ifeval", 541, (), 0,
              ("prompt_level_strict_acc", "inst_level_strict_acc", "prompt_level_loose_acc",
               "inst_level_loose_acc"), "ifeval"),
    ),
    "push": (  # lm-eval's own tasks of v1's benchmarks, as a researcher's push holds them
        Shape("arc_challenge", 1172, (4,) * 60 + (3, 5), 25, ("acc", "acc_norm"), "arc"),
        Shape("hellaswag", 10042, (4,), 10, ("acc", "acc_norm"), "hellaswag"),
        *(Shape(f"mmlu_{s}", n, (4,), 5, ("acc",), "mmlu") for s, n in _MMLU.items()),
        Shape("winogrande", 1267, (2,), 5, ("acc",), "winogrande"),
        Shape("gsm8k", 1319, (), 5, ("exact_match",), "gsm8k"),
    ),
}  # fmt: skip
"""Each generation's scored tasks, as its leaderboard ran them (v1: 28,659 questions; v2:
21,606), and an lm-eval push of none of the leaderboard's tasks (27,842)."""

# words per question and per option, about the datasets' own (MuSR's: its story)
_LENGTHS = {
    "arc": (22, 5), "hellaswag": (40, 20), "mmlu": (40, 7), "truthfulqa": (12, 10),
    "winogrande": (24, 2), "gsm8k": (46, 0), "bbh": (60, 3), "gpqa": (90, 12),
    "mmlu_pro": (45, 8), "musr": (700, 3), "math": (40, 0), "ifeval": (45, 0),
}  # fmt: skip

_VOCABULARY = tuple(
    "the of and to in is that for it as was with be by on not he this are or his from at which "
    "but have an they you were her she there been one all we their has would when if so no what "
    "up out into more other could time two only new some than its these first may then do any "
    "like my now over such our man me even most made after also did many before must through "
    "years where much your way well down should because each just those how too little state "
    "good very make world still own see men work long get here between both life being under "
    "never day same another know while last might us great old year off come since against go "
    "came right used take three number value force energy cell water light answer system".split()
)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(_VOCABULARY, k=max(1, n)))


def _sentence(rng: random.Random, n: int, end: str = ".") -> str:
    text = _words(rng, rng.randint(max(1, n // 2), n * 3 // 2 + 1))
    return text[0].upper() + text[1:] + end


def _laid_out(shape: Shape, body: str, options: list[str], rng: random.Random) -> tuple[str, dict]:
    """The question as the harness shows it, and (v2) its dataset row."""
    listed = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))
    family = shape.family
    if family == "mmlu":
        # v1's harness|hendrycksTest-<subject>|5, a push's mmlu_<subject>
        named = (
            shape.task.split("-", 1)[1].rsplit("|", 1)[0] if "-" in shape.task else shape.task[5:]
        )
        subject = named.replace("_", " ")
        return (f"The following are multiple choice questions (with answers) about {subject}."
                f"\n\n{body}\n{listed}\nAnswer:"), {}  # fmt: skip
    if family == "bbh":
        marked = "\n".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(options))
        return f"Q: {body}\nOptions:\n{marked}\nA:", {"input": f"{body}\nOptions:\n{marked}"}
    if family == "gpqa":
        doc: dict[str, Any] = {
            "Question": body,
            **{f"choice{i + 1}": o for i, o in enumerate(options)},
        }
        return (
            f"What is the correct answer to this question:{body}\nChoices:\n{listed}\nAnswer: ",
            doc,
        )
    if family == "mmlu_pro":
        doc = {"question_id": rng.randrange(10**5), "question": body, "options": options,
               "category": "other", "src": "ori_mmlu-misc"}  # fmt: skip
        return f"Question:\n{body}\nOptions:\n{listed}\nAnswer:", doc
    if family == "musr":
        question = _sentence(rng, 12, "?")
        numbered = "\n".join(f"{i + 1} - {o}" for i, o in enumerate(options))
        doc = {"narrative": body, "question": question, "choices": repr(options)}
        return (f"{body}\n\n{question}\n\nPick one of the following choices:\n{numbered}\n\n"
                "You must pick one option."), doc  # fmt: skip
    if family == "math":
        return f"Problem:\n{body}\n\nSolution:", {"problem": body, "level": "Level 5"}
    if family == "ifeval":
        return body, {"key": rng.randrange(10**4), "prompt": body,
                      "instruction_id_list": ["length_constraints:number_words"]}  # fmt: skip
    if family in ("arc", "truthfulqa", "gsm8k"):
        return f"Question: {body}\nAnswer:", {}
    return body, {}  # hellaswag, winogrande: the options continue the text


def _question(shape: Shape, rng: random.Random, number: int) -> Item:
    """One question of ``shape``, its text and options drawn from ``rng``."""
    q_words, o_words = _LENGTHS[shape.family]
    body = f"{_sentence(rng, q_words, '?')} ({number})"
    if not shape.k:  # generative
        text, doc = _laid_out(shape, body, [], rng)
        reference = str(rng.randrange(1000))
        return Item(text, None, False, reference=reference,
                    doc={**doc, "answer": reference} if doc else None)  # fmt: skip
    k = rng.choice(shape.k)
    mc1 = None
    if shape.family == "truthfulqa":  # mc1's options, then mc2's
        mc1, k = k, k + rng.randint(1, 6)
    options = [_words(rng, rng.randint(max(1, o_words // 2), o_words + 1)) for _ in range(k)]
    gold = 0 if mc1 else rng.randrange(k)
    text, doc = _laid_out(shape, body, options, rng)
    if shape.family == "mmlu":  # the options are in the text; the model scores their letters
        options = list(LETTERS[:k])
    if doc:
        doc = {**doc, "answer": LETTERS[gold], "answer_index": gold}
    return Item(text, tuple(options), False, gold=gold, mc1=mc1, doc=doc or None)


def _shots(shape: Shape) -> str:
    """The few-shot block before each question: ``shape.shots`` solved questions laid out like
    them (the same for every question, as lm-eval's ``first_n`` sampler gives), TruthfulQA's
    the harness's fixed six questions and answers."""
    rng = random.Random(f"shots:{shape.task}")
    if shape.family == "truthfulqa":
        return "".join(
            f"Q: {_sentence(rng, 10, '?')}\nA: {_sentence(rng, 10)}\n\n" for _ in range(6)
        )
    block = []
    for number in range(shape.shots):
        shot = _question(shape, rng, number)
        if shot.options is None:  # a worked solution
            solved = f" {_sentence(rng, 60)} The answer is {shot.reference}."
        else:
            solved = f" {shot.options[shot.gold]}"
        block.append(f"{shot.question}{solved}\n\n")
    return "".join(block)


def questions(shape: Shape, *, scale: float = 1.0, seed: int = 0) -> list[Item]:
    """``shape``'s questions (its real count times ``scale``, at least one), each after its
    few-shot block, none answered right yet (``answered``). The same for the same arguments."""
    rng = random.Random(f"{seed}:{shape.task}")
    context = _shots(shape)
    return [
        replace(_question(shape, rng, number), context=context)
        for number in range(max(1, round(shape.n * scale)))
    ]


def answered(
    shape: Shape, items: list[Item], skill: float, *, rng: random.Random, answer_tokens: int = 0
) -> tuple[list[Item], dict[str, list[Any]]]:
    """``items`` as a model of ``skill`` answered them, and the task's metric values. Right
    with probability floor + (1 - floor) * sigmoid(skill - difficulty), each question's
    difficulty fixed (every model meets the same), floor 1/k (generative: 0). A generative
    answer holds about ``answer_tokens`` words of reasoning (half to one and a half times)."""
    done: list[Item] = []
    values: dict[str, list[Any]] = {m: [] for m in shape.metrics}
    for item in items:
        difficulty = random.Random(item.question).gauss(0.0, 1.3)
        floor = 1 / (item.mc1 or len(item.options)) if item.options else 0.0  # mc1's k
        right = rng.random() < floor + (1 - floor) / (1 + math.exp(difficulty - skill))
        response = None
        if item.options is None:
            said = item.answer if right else str(rng.randrange(1000))
            reasoning = _words(rng, rng.randint(answer_tokens // 2, answer_tokens * 3 // 2))
            response = f"{reasoning}\nThe final answer is {said}" if answer_tokens else said
        done.append(replace(item, right=right, response=response))
        for metric in shape.metrics:
            values[metric].append(_metric_value(shape, metric, right, rng))
    return done, values


def _metric_value(shape: Shape, metric: str, right: bool, rng: random.Random) -> Any:
    """The scored metric is whether the model was right; the others as their harness writes
    them (TruthfulQA's mc2 a probability mass, IFEval's per-instruction lists)."""
    if metric == "mc2":
        return round(rng.random(), 6)
    if shape.family == "ifeval":
        return [right] * rng.randint(1, 3) if metric.startswith("inst") else right
    if metric != shape.metrics[0]:  # acc beside the scored acc_norm: mostly agrees
        right = right if rng.random() < 0.9 else not right
    return int(right) if shape.task.startswith("harness|") else float(right)


@dataclass(frozen=True)
class Written:
    """One model's dataset in a cache: its repo id, rows, files and bytes."""

    repo_id: str
    rows: int
    files: int
    size: int


def write_dataset(
    cache: Path,
    generation: str,
    model: str,
    tasks: Mapping[str, list[Item]],
    *,
    skill: float,
    seed: int = 0,
    answer_tokens: int = 0,
    stamp: str | None = None,
    layout: str = "harness",
) -> Written:
    """``model``'s details dataset of ``generation`` ("v1", "v2", "push") in the cache: one run of
    ``tasks`` ({task: ``questions``}), answered with ``skill``, its files streamed into the
    cache (v1's in ``layout``: ``V1_LAYOUTS``)."""
    shapes = {s.task: s for s in SHAPES[generation]}
    rng = random.Random(f"{seed}:{model}")
    stamp = stamp or ("2023-12-02T13-00-54.924067" if generation == "v1"
                      else "2024-10-01T08-00-00.000001")  # fmt: skip
    revision = hashlib.sha1(model.encode()).hexdigest()  # noqa: S324
    repo = repo_id(generation, model)
    dataset = CachedDataset(cache, repo)
    size = rows = 0
    folder = "" if generation == "v1" else model.replace("/", "__") + "/"
    for task, items in tasks.items():
        done, values = answered(shapes[task], items, skill, rng=rng, answer_tokens=answer_tokens)
        rows += len(done)
        if generation == "v1":
            path = f"{stamp}/details_{task}_{stamp}.parquet"
            size += dataset.add(path, v1_details(task, done, values, layout))
        else:
            path = f"{folder}samples_{task}_{stamp}.jsonl"
            size += dataset.add(path, _batched(v2_lines(done, values)))
    if generation == "v1":
        results = v1_results(model, revision, list(tasks))
    else:
        results = v2_results(
            model, revision, list(tasks), () if generation == "push" else V2_GROUPS
        )
    size += dataset.add(f"{folder}results_{stamp}.json", results)
    dataset.finish()
    return Written(repo, rows, len(tasks) + 1, size)


def _batched(lines: Iterable[bytes], size: int = 4 << 20) -> Iterable[bytes]:
    """Lines joined into chunks of about ``size`` bytes (fewer, larger writes)."""
    chunk: list[bytes] = []
    held = 0
    for line in lines:
        chunk.append(line)
        held += len(line)
        if held >= size:
            yield b"".join(chunk)
            chunk, held = [], 0
    if chunk:
        yield b"".join(chunk)
