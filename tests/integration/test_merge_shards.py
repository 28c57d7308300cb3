"""A sweep's shards in the job machinery (issue 54), on a real DuckDB file: a merge shard's
evaluations are never sent alone (not by the job, the reconciler or a retry), their progress keeps
their merge shard alive, and what a sweep refuses is refused before anything is written."""

from __future__ import annotations

import pytest
from forgetmap.contract.merge import MergeJobIn, SoupJobIn
from forgetmap.core.errors import InputError
from forgetmap.db import jobs as jobs_db
from forgetmap.db import open_store
from forgetmap.services.jobs import fail_shard, retry_failed, shard_progress, start_shard
from forgetmap.services.merge import create_merge_job, create_soup_job

from tests.support.store_contents import table_contents

ROWS = "model,benchmark,seed,sample_id,correct,num_choices\n" + "".join(
    f"{m},toy,{seed},q{i},{int((i + seed) % 3 != 0)},4\n"
    for m in ("tiny-base", "tiny-post")
    for seed in (0, 1)
    for i in range(4)
)


@pytest.fixture
def store(cli, tmp_path):
    table = tmp_path / "rows.csv"
    table.write_text(ROWS)
    cli("import", "table", table)
    cli("pair", "add", "tiny-base", "tiny-post")
    store = open_store(cli.db)
    yield store
    store.close()


def _sweep(**extra) -> MergeJobIn:
    body = {
        "kind": "merge",
        "base": {"name": "tiny-base", "path": "/models/base", "prompting": "base"},
        "post": {"name": "tiny-post", "path": "/models/post"},
        "mixes": [0, 0.5, 1],
        "benchmarks": ["local:toy.jsonl"],
        "seeds": [0, 1],
        **extra,
    }
    return MergeJobIn.model_validate(body)


def test_evaluations_go_with_their_merge_shard(store):
    with store.transaction() as conn:
        job_id, to_send = create_merge_job(conn, _sweep())
        shards = {s["id"]: s for s in jobs_db.job_shards(conn, job_id)}
        (merge_id,) = [i for i, s in shards.items() if s["benchmark"] == "merge"]
        spec = jobs_db.shard(conn, merge_id)["spec"]
        children = spec["evaluations"]
        # the ends were imported, not evaluated by workers: their shards run, sent alone
        ends = [i for i, s in shards.items() if s["model"] in ("tiny-base", "tiny-post")]
        assert sorted(to_send) == sorted([merge_id, *ends]) and len(ends) == 4
        assert len(children) == 2 and set(children) <= set(shards)
        assert {shards[c]["model"] for c in children} == {"tiny-base+tiny-post@linear-0.5"}
        # the reconciler's never-sent shards: the merge shard and the ends, never its evaluations
        assert set(jobs_db.unsent_shards(conn)) == {merge_id, *ends}
        jobs_db.mark_sent(conn, to_send)
        assert jobs_db.waiting_shards(conn, -1.0, backoff=False) == sorted(to_send)

        # the merge shard's worker claims an evaluation under the merge shard's delivery; its
        # progress keeps the merge shard alive, and the reconciler never re-sends it alone
        assert start_shard(conn, merge_id, "w", "delivery-1") is not None
        assert start_shard(conn, children[0], "w", "delivery-1") is not None
        conn.execute(
            "UPDATE shards SET heartbeat_at = now() - INTERVAL 1 HOUR WHERE id IN (?, ?)",
            [merge_id, children[0]],
        )
        assert set(jobs_db.stale_shards(conn, 60)) == {merge_id}
        shard_progress(conn, children[0], 3, 4)
        assert jobs_db.stale_shards(conn, 60) == []

        # a failed evaluation fails its merge shard (the worker says so); a retry sends the
        # merge shard, whose worker runs the evaluation again
        fail_shard(conn, children[0], "engine error")
        fail_shard(conn, merge_id, "1 of the 2 evaluations failed")
        assert retry_failed(conn, job_id) == [merge_id]
        assert jobs_db.shard_status(conn, children[0]) == "queued"


def test_a_stored_merge_is_not_built_again(store):
    with store.transaction() as conn:
        _, _ = create_merge_job(conn, _sweep())
        first = conn.execute(
            "SELECT id FROM shards WHERE kind = 'evaluate' AND parent_id IS NOT NULL"
        ).fetchall()
        conn.execute(
            f"UPDATE shards SET status = 'done' WHERE id IN ({','.join('?' * len(first))})",
            [r[0] for r in first],
        )
        job_id, to_send = create_merge_job(conn, _sweep(series="again"))
        merge = [s for s in jobs_db.job_shards(conn, job_id) if s["benchmark"] == "merge"]
        assert [s["status"] for s in merge] == ["reused"]
        assert all(jobs_db.shard(conn, i)["kind"] == "evaluate" for i in to_send)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mixes": [0.0001]}, "thousandths"),
        ({"mixes": [0.5, 0.5]}, "each mix is given once"),
        ({"benchmarks": None}, "never evaluated by the workers"),
        ({"post": {"name": "nobody", "path": "/m"}}, "no pair tiny-base -> nobody"),
        ({"post": {"name": "tiny-base", "path": "/m"}}, "different names"),
        (
            {"post": {"name": "tiny-post", "path": "/m", "revision": "v1"}},
            "a revision is not supported",
        ),
        ({"benchmarks": [f"b{i}" for i in range(400)], "seeds": [0, 1, 2]}, "over the limit"),
    ],
)
def test_refusals_write_nothing(store, change, message):
    with store.read() as conn:
        before = table_contents(conn)
    with pytest.raises(InputError, match=message):
        with store.transaction() as conn:
            create_merge_job(conn, _sweep(**change))
    with store.read() as conn:
        assert table_contents(conn) == before


def test_soups_need_a_run_of_evaluated_checkpoints(store, cli):
    soup = SoupJobIn.model_validate({"kind": "soup", "series": "run"})
    with pytest.raises(InputError, match="no series 'run'"):
        with store.transaction() as conn:
            create_soup_job(conn, soup)
    store.close()
    cli("series", "add", "run", "--base", "tiny-base", "--checkpoint", "tiny-post@5")
    again = open_store(cli.db)
    try:
        with pytest.raises(InputError, match="fewer than two"), again.transaction() as conn:
            create_soup_job(conn, soup)
        with pytest.raises(InputError, match="not a training run"), again.transaction() as conn:
            create_merge_job(conn, _sweep())
            create_soup_job(conn, SoupJobIn(kind="soup", series="tiny-post merged back (linear)"))
    finally:
        again.close()
