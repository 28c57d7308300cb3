"""The Open LLM Leaderboards' details datasets, both generations, in huggingface_hub's cache layout:
what ``forgetmap import hub`` reads with ``HF_HUB_OFFLINE=1``, for the tests (a few hand-made
questions) and the benchmarks (``write_dataset``: every scored task at its real size, or a
fraction of it).

The cache, as huggingface_hub 2.4 writes and reads it (``_snapshot_download.py``,
``file_download.py``, ``_tree_cache.py``): ``<HF_HUB_CACHE>/datasets--<org>--<name>/`` holds
``blobs/<git sha1>`` (the files' bytes), ``snapshots/<commit>/<path in the repo>`` (relative links
to the blobs), ``refs/main`` (the commit main is at) and ``trees/<commit>.json`` (the repo's file
listing, by which an offline ``snapshot_download`` checks that the snapshot holds what is asked).

The datasets, from their own READMEs and the writers' source
(``forgetmap.importers.hub.leaderboards``):

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
``questions`` makes a task's questions (seeded: every model of a bench gets the same ones; both in
``forgetmap.demo.layouts.leaderboard_tasks``) and ``write_dataset`` one model's dataset, right where
its skill beats a question's difficulty.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from forgetmap.demo.layouts.leaderboard_tasks import LETTERS, SHAPES, Item, answered, loglikelihoods

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
        return {
            **row,
            "predictions": [item.said],
            "gold": [item.answer],
            "choices": [item.answer],
            "gold_index": [0],
            "truncated": [0],
            "padded": [0],
        }
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
        "hashes": {
            "example": _sha(item.question),
            "full_prompt": _sha(item.context + item.question),
            "input_tokens": _sha(item.context),
            "cont_tokens": _sha("".join(asked)),
        },
    }
    if ids:
        row["query"] = item.question
    if item.options is None:  # generative: the text, the reference answer
        return {**row, "predictions": [item.said], "gold": item.answer}
    return {
        **row,
        "predictions": loglikelihoods(item),
        "choices": list(item.options),
        "gold": item.gold,
    }


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
        arguments = {
            f"gen_args_{i}": {"arg_0": context, "arg_1": f" ({LETTERS[i]})"}
            for i in range(len(lls))
        }
        resps = [[[str(ll), "False"]] for ll in lls]
        filtered = [[str(ll), "False"] for ll in lls]
        target = str(item.gold)
    return {
        "doc_id": doc_id,
        "doc": doc,
        "target": target,
        "arguments": arguments,
        "resps": resps,
        "filtered_resps": filtered,
        "doc_hash": _sha(json.dumps(doc, indent=2)),
        "prompt_hash": _sha(context),
        "target_hash": _sha(target),
        **metrics,
    }


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
    stamp = stamp or (
        "2023-12-02T13-00-54.924067" if generation == "v1" else "2024-10-01T08-00-00.000001"
    )
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
