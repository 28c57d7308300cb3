"""Probes: asking a pair's post model again, flip by flip (issue 53). What to probe, the shard
that runs it, and the report the app keeps.

A probe job is one shard of kind ``probe`` in the same machinery as evaluations (queue,
heartbeat, retry, cancel). Its worker fetches the items (``probe_items``: the store's rows, read
when the worker asks), scores them (``forgetmap.worker.probe``) and uploads one outcome per item;
the app checks the outcomes against the items, keeps them, and computes the report from them
(``forgetmap.analysis.probe.probe_report``), so what is shown is what the stored outcomes give.

Which rows, in ``probe_items``: the pair's rows the base answered right
(``forgetmap.db.probe.probe_rows``) whose gold option the store names (or, for a generative row,
whose gold answer it keeps: the regenerated answer is graded against it); the flips (post wrong,
the cause the options ask for) and, for the ``kept`` control, rows the post model answered right,
each list in a seeded order of its own (``order_key``) and cut at its size. A row whose post
answer has no text (a likelihood-scored evaluation: nothing was said to read again) is left out
and counted. The ``shuffled`` control shows each flip another flip's answer; the ``base``
control asks the base model about the same flips with its own (right) answers. Multiple-choice
flips take each other's answers in the shuffled control, generative flips each other's.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

import pyarrow as pa
from forgetmap.analysis.probe import (
    GENERATIVE,
    LETTERS,
    ProbeItem,
    ProbeOutcome,
    gold_option,
    probe_report,
    shuffled_answers,
)
from forgetmap.contract.jobs import ShardKind
from forgetmap.contract.probe import (
    ProbeIn,
    ProbeItemOut,
    ProbeItemsOut,
    ProbeJobIn,
    ProbeOptionsIn,
    ProbeShardSpec,
)
from forgetmap.core.answer_status import ANSWERED, NO_ANSWER
from forgetmap.core.errors import InputError
from forgetmap.db import probe as probe_db
from forgetmap.db.queries import pair_id_by_names, pair_info
from forgetmap.db.store import Connection
from forgetmap.services.jobs import one_shard_job
from forgetmap.services.rescore import stored_choices

Key = tuple[str, str, int, str]
"""An item's place: (arm, benchmark, seed, sample_id)."""


def create_probe_job(conn: Connection, request: ProbeJobIn) -> tuple[int, list[int]]:
    """Write a probe job (one shard) of a stored pair; returns (job id, shard ids to send). A
    finished probe with the same models and options is reused, not run again."""
    request.check()
    pair_id = pair_id_by_names(conn, request.base.name, request.post.name)
    if pair_id is None:
        raise InputError(
            f"no pair {request.base.name} -> {request.post.name}: a probe asks about a stored "
            "pair's flips (evaluate both models and add the pair first)"
        )
    return one_shard_job(
        conn,
        kind=ShardKind.probe,
        payload=request.payload(),
        spec=request.shard_spec().model_dump(mode="json"),
        model=request.post.name,
        benchmark="probe",
        seed=request.options.seed,
        pair_id=pair_id,
    )


def order_key(seed: int, arm: str, row: dict[str, Any]) -> str:
    """A row's place in an arm's seeded order: the same rows come first for the same seed."""
    text = f"{seed}\x1f{arm}\x1f{row['benchmark']}\x1f{row['seed']}\x1f{row['sample_id']}"
    return hashlib.sha256(text.encode()).hexdigest()


def _wanted(cause: str, status: str | None) -> bool:
    if cause == "no_answer":
        return status == NO_ANSWER
    if cause == "answered":
        return status in (None, ANSWERED)  # rows stored before statuses were kept: answered
    return True


def probe_items(conn: Connection, pair: dict[str, Any], options: ProbeOptionsIn) -> ProbeItemsOut:
    """Every item of a probe of ``pair`` with ``options`` (module docstring), in arm order."""
    left_out: Counter[str] = Counter()
    flips, kept = [], []
    for row in probe_db.probe_rows(conn, pair, options.benchmarks):
        k = row["num_choices"] or GENERATIVE
        gold = (
            (0 if row["gold"] else None)
            if k == GENERATIVE
            else gold_option(row["gold"], stored_choices(row["choices"]), k)
        )
        if gold is None and k == GENERATIVE:
            left_out["generative: no gold answer stored"] += 1
        elif gold is None or k > len(LETTERS):
            left_out["no gold option among the stored options"] += 1
        elif row["post_response"] is None:
            left_out["no post answer text (scored by likelihood)"] += 1
        elif row["post_correct"]:
            kept.append({**row, "num_choices": k, "gold_index": gold})
        elif _wanted(options.cause, row["post_status"]):
            flips.append({**row, "num_choices": k, "gold_index": gold})
        else:
            left_out[f"flips of another cause than {options.cause}"] += 1
    flips.sort(key=lambda r: order_key(options.seed, "flips", r))
    kept.sort(key=lambda r: order_key(options.seed, "kept", r))
    if len(flips) > options.max_flips:
        left_out["flips past max_flips"] += len(flips) - options.max_flips
        flips = flips[: options.max_flips]
    kept = kept[: options.kept]

    def item(arm: str, row: dict[str, Any], side: str) -> ProbeItemOut:
        return ProbeItemOut(
            arm=arm,  # type: ignore[arg-type]
            benchmark=row["benchmark"],
            seed=row["seed"],
            sample_id=row["sample_id"],
            prompt=row[f"{side}_prompt"] or "",
            answer=row[f"{side}_response"],
            num_choices=row["num_choices"],
            gold=row["gold_index"],
            gold_answer=row["gold"] if row["num_choices"] == GENERATIVE else None,
        )

    items = [item("flips", r, "post") for r in flips]
    as_probe = [
        ProbeItem(str(i), it.prompt, it.answer, it.num_choices, it.gold, it.gold_answer)
        for i, it in enumerate(items)
    ]
    for shuffled in shuffled_answers(as_probe, options.seed):
        original = items[int(shuffled.key)]
        items.append(original.model_copy(update={"arm": "shuffled", "answer": shuffled.answer}))
    items += [item("kept", r, "post") for r in kept]
    for row in flips:
        if row["base_response"] is None:
            left_out["base control: no base answer text"] += 1
        else:
            items.append(item("base", row, "base"))
    return ProbeItemsOut(
        prefix=options.prefix,
        answer_prefix=options.answer_prefix,
        answer_tokens=options.answer_tokens,
        items=items,
        left_out=dict(left_out),
    )


def stored_pair(conn: Connection, base: str, post: str, shard: str) -> dict[str, Any]:
    """The pair a ``shard`` shard (probe, judge) analyses; InputError when it is gone."""
    pair_id = pair_id_by_names(conn, base, post)
    pair = pair_info(conn, pair_id) if pair_id is not None else None
    if pair is None:
        raise InputError(f"the pair of this {shard} shard no longer exists")
    return pair


def shard_items(conn: Connection, shard: dict[str, Any]) -> ProbeItemsOut:
    """The items of a probe shard, as its worker fetches them."""
    spec = ProbeShardSpec.model_validate(shard["spec"])
    return probe_items(
        conn, stored_pair(conn, spec.base.name, spec.post.name, "probe"), spec.options
    )


def store_upload(conn: Connection, shard: dict[str, Any], upload: ProbeIn) -> int:
    """Check a probe shard's outcomes against its items (each item once, the same gold and
    option count) and keep them with the report computed from them (replacing an earlier
    upload of the same shard); returns the probe's id."""
    spec = ProbeShardSpec.model_validate(shard["spec"])
    pair = stored_pair(conn, spec.base.name, spec.post.name, "probe")
    fetched = probe_items(conn, pair, spec.options)
    expected = {
        (i.arm, i.benchmark, i.seed, i.sample_id): (i.num_choices, i.gold) for i in fetched.items
    }
    seen: set[Key] = set()
    arms: dict[str, list[ProbeOutcome]] = {}
    for o in upload.outcomes:
        key = (o.arm, o.benchmark, o.seed, o.sample_id)
        if key not in expected:
            raise InputError(f"outcome {key} is not an item of this probe")
        if key in seen:
            raise InputError(f"outcome {key} is sent twice")
        if expected[key] != (o.num_choices, o.gold):
            raise InputError(f"outcome {key} names other options than its item")
        if o.chosen is not None and o.chosen >= max(o.num_choices, 1):
            raise InputError(f"outcome {key} chose option {o.chosen} of {o.num_choices}")
        seen.add(key)
        outcome = ProbeOutcome("\x1f".join(map(str, key)), o.chosen, o.gold, o.num_choices)
        arms.setdefault(o.arm, []).append(outcome)
    if len(seen) != len(expected):
        raise InputError(
            f"the upload holds {len(seen)} outcomes for the probe's {len(expected)} items"
        )
    report = probe_report(arms)
    report["left_out"] = fetched.left_out
    report["by_benchmark"] = _by_benchmark(upload)
    benchmark_ids = {
        row["benchmark"]: row["benchmark_id"]
        for row in probe_db.probe_rows(conn, pair, sorted({o.benchmark for o in upload.outcomes}))
    }
    outcomes = pa.table(
        {
            "arm": pa.array([o.arm for o in upload.outcomes], pa.string()),
            "benchmark_id": pa.array(
                [benchmark_ids[o.benchmark] for o in upload.outcomes], pa.int32()
            ),
            "seed": pa.array([o.seed for o in upload.outcomes], pa.int32()),
            "sample_id": pa.array([o.sample_id for o in upload.outcomes], pa.string()),
            "num_choices": pa.array([o.num_choices for o in upload.outcomes], pa.int16()),
            "gold": pa.array([o.gold for o in upload.outcomes], pa.int16()),
            "chosen": pa.array([o.chosen for o in upload.outcomes], pa.int16()),
        }
    )
    config = {
        **spec.model_dump(mode="json"),
        "config_hash": shard["config_hash"],
        "timing": upload.timing,
    }
    return probe_db.save_probe(
        conn,
        pair_id=pair["id"],
        shard_id=shard["id"],
        config=config,
        summary=report,
        outcomes=outcomes,
    )


def _by_benchmark(upload: ProbeIn) -> dict[str, dict[str, int]]:
    """Per benchmark, the flips probed and recovered (the drill-down's numbers)."""
    out: dict[str, dict[str, int]] = {}
    for o in upload.outcomes:
        if o.arm == "flips":
            counts = out.setdefault(o.benchmark, {"n": 0, "recovered": 0})
            counts["n"] += 1
            counts["recovered"] += int(o.chosen == o.gold)
    return dict(sorted(out.items()))
