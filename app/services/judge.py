"""Judges: a local judge model reads a pair's unread answers (issue 53). What it reads, the shard
that runs it, and the score set the app keeps from it.

A judge job is one shard of kind ``judge``, run by the same machinery as evaluations. Its worker
fetches the items (``judge_items``), shows the judge each answer after the question the judged
model saw and asks which option it commits to (``forgetmap.analysis.probe.judge_context``: the
options' letters and "0", none, scored by log-likelihood), and uploads one reading per item.

What it reads: the ``no_answer`` rows (the harness found no option in the answer) of **both**
models of the pair, never one side only, so a map drawn with the judge's grades treats base and
post alike; and, for the judge's **audit**, a seeded sample of rows of both models the harness read
an option from: how often the judge names the same option is reported beside its grades. The
readings of the ``no_answer`` rows become the score set ``judge:<model>`` (``forgetmap.db.scores``:
a row it grades takes the judge's grade, every other row keeps the harness's), written again by a
later judge of the same name; ``judge_runs`` keeps the judge's model, its prompt and its audit.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from forgetmap.analysis.probe import LETTERS, gold_option
from forgetmap.contract.jobs import ShardKind
from forgetmap.contract.judge import (
    JudgeIn,
    JudgeItemOut,
    JudgeItemsOut,
    JudgeJobIn,
    JudgeOptionsIn,
    JudgeShardSpec,
)
from forgetmap.core.answer_status import ANSWERED, NO_ANSWER
from forgetmap.core.errors import InputError
from forgetmap.db import judge as judge_db
from forgetmap.db import scores as scores_db
from forgetmap.db.queries import pair_id_by_names
from forgetmap.db.store import Connection
from forgetmap.services.jobs import one_shard_job, register_models
from forgetmap.services.probe import order_key, stored_pair
from forgetmap.services.rescore import rescored_table, stored_choices

JUDGE_RULE = "judge"
"""The rule a judge's graded rows carry in their score set (``rescored.rule``)."""


def create_judge_job(conn: Connection, request: JudgeJobIn) -> tuple[int, list[int]]:
    """Write a judge job (one shard) of a stored pair; returns (job id, shard ids to send). A
    finished judge with the same model and options is reused, not run again."""
    request.check()
    pair_id = pair_id_by_names(conn, request.base, request.post)
    if pair_id is None:
        raise InputError(
            f"no pair {request.base} -> {request.post}: a judge reads a stored pair's answers "
            "(import or evaluate both models and add the pair first)"
        )
    register_models(conn, [request.judge])  # the shard runs on it, as every shard on a model
    return one_shard_job(
        conn,
        kind=ShardKind.judge,
        payload=request.payload(),
        spec=request.shard_spec().model_dump(mode="json"),
        model=request.judge.name,
        benchmark="judge",
        seed=request.options.seed,
        pair_id=pair_id,
    )


def judge_items(conn: Connection, pair: dict[str, Any], options: JudgeOptionsIn) -> JudgeItemsOut:
    """Every item of a judge of ``pair`` with ``options`` (module docstring): the ``no_answer``
    rows, then the audit's."""
    left_out: Counter[str] = Counter()
    unread, read = [], []
    for row in judge_db.judge_rows(conn, pair, options.benchmarks):
        k = row["num_choices"]
        choices = stored_choices(row["choices"])
        gold = gold_option(row["gold"], choices, k)
        if gold is None or k > len(LETTERS):
            left_out["no gold option among the stored options"] += 1
        elif row["answer_status"] == NO_ANSWER:
            unread.append({**row, "gold_index": gold, "harness": None})
        elif row["answer_status"] in (None, ANSWERED):
            harness = gold_option(row["prediction"], choices, k)
            if harness is not None:
                read.append({**row, "gold_index": gold, "harness": harness})
    unread.sort(key=lambda r: order_key(options.seed, f"no_answer\x1f{r['model']}", r))
    read.sort(key=lambda r: order_key(options.seed, f"audit\x1f{r['model']}", r))
    if len(unread) > options.max_rows:
        left_out["no_answer rows past max_rows"] += len(unread) - options.max_rows
        unread = unread[: options.max_rows]
    items = [
        JudgeItemOut(
            purpose=purpose,  # type: ignore[arg-type]
            model=r["model"],
            benchmark=r["benchmark"],
            seed=r["seed"],
            sample_id=r["sample_id"],
            prompt=r["prompt"] or "",
            answer=r["response"],
            num_choices=r["num_choices"],
            gold=r["gold_index"],
            harness=r["harness"],
        )
        for purpose, rows in (("no_answer", unread), ("audit", read[: options.audit]))
        for r in rows
    ]
    return JudgeItemsOut(template=options.template, items=items, left_out=dict(left_out))


def shard_items(conn: Connection, shard: dict[str, Any]) -> JudgeItemsOut:
    """The items of a judge shard, as its worker fetches them."""
    spec = JudgeShardSpec.model_validate(shard["spec"])
    return judge_items(conn, stored_pair(conn, spec.base, spec.post, "judge"), spec.options)


def store_upload(conn: Connection, shard: dict[str, Any], upload: JudgeIn) -> int:
    """Check a judge shard's readings against its items (each item once, its option count) and
    keep them: the ``no_answer`` rows' grades as the score set, the audit and the judge in
    ``judge_runs`` (an earlier upload of the same shard replaced). Returns the run's id."""
    spec = JudgeShardSpec.model_validate(shard["spec"])
    pair = stored_pair(conn, spec.base, spec.post, "judge")
    fetched = judge_items(conn, pair, spec.options)
    expected = {(i.purpose, i.model, i.benchmark, i.seed, i.sample_id): i for i in fetched.items}
    seen: set[tuple] = set()
    for o in upload.outcomes:
        key = (o.purpose, o.model, o.benchmark, o.seed, o.sample_id)
        item = expected.get(key)
        if item is None:
            raise InputError(f"reading {key} is not an item of this judge")
        if key in seen:
            raise InputError(f"reading {key} is sent twice")
        if o.num_choices != item.num_choices:
            raise InputError(f"reading {key} names another option count than its item")
        if o.chosen is not None and o.chosen > o.num_choices:
            raise InputError(f"reading {key} chose option {o.chosen} of {o.num_choices} and none")
        seen.add(key)
    if len(seen) != len(expected):
        raise InputError(
            f"the upload holds {len(seen)} readings for the judge's {len(expected)} items"
        )
    ids = {
        (r["model"], r["benchmark"]): (r["model_id"], r["benchmark_id"])
        for r in judge_db.judge_rows(conn, pair, spec.options.benchmarks)
    }
    graded: dict[str, list] = {
        "model_id": [],
        "benchmark_id": [],
        "seed": [],
        "sample_id": [],
        "prediction": [],
        "correct": [],
        "answer_status": [],
        "rule": [],
    }
    committed: Counter[str] = Counter()
    agree = audited = 0
    for o in upload.outcomes:
        item = expected[(o.purpose, o.model, o.benchmark, o.seed, o.sample_id)]
        named = o.chosen if o.chosen is not None and o.chosen < o.num_choices else None
        if o.purpose == "audit":
            audited += 1
            agree += int(named == item.harness)
            continue
        model_id, benchmark_id = ids[(o.model, o.benchmark)]
        graded["model_id"].append(model_id)
        graded["benchmark_id"].append(benchmark_id)
        graded["seed"].append(o.seed)
        graded["sample_id"].append(o.sample_id)
        graded["prediction"].append(None if named is None else LETTERS[named])
        graded["correct"].append(named == item.gold)
        graded["answer_status"].append(NO_ANSWER if named is None else ANSWERED)
        graded["rule"].append(JUDGE_RULE if named is not None else None)
        committed[f"{o.model}: {'an option' if named is not None else 'none'}"] += 1
    name = spec.options.score_set or f"judge:{spec.judge.name}"
    extractor = f"judge:{spec.judge.path}"
    existing = scores_db.score_set(conn, name)
    if existing is not None:
        set_id = existing[0]
        scores_db.clear_score_set(conn, set_id, extractor)
    else:
        set_id = scores_db.create_score_set(conn, name, extractor)
    if graded["model_id"]:
        scores_db.insert_rescored(conn, set_id, rescored_table(graded))
    rows = scores_db.finish_score_set(conn, set_id)
    audit = {
        "rows_graded": rows,
        "readings": dict(sorted(committed.items())),
        "audited": audited,
        "agreed": agree,
        "agreement": agree / audited if audited else None,
        "left_out": fetched.left_out,
    }
    config = {
        **spec.model_dump(mode="json"),
        "config_hash": shard["config_hash"],
        "timing": upload.timing,
    }
    return judge_db.save_judge_run(
        conn,
        pair_id=pair["id"],
        shard_id=shard["id"],
        score_set_id=set_id,
        config=config,
        audit=audit,
    )
