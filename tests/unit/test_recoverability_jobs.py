"""Recoverability results in the app: request validation, upload checks, shares recomputed from the
per-document sums (hand-computed golden values), and the store round trip."""

from __future__ import annotations

import math

import pytest
from forgetmap.analysis.recoverability_shares import shares_from_sums
from forgetmap.contract.base import validated
from forgetmap.contract.recovery import CorpusIn, RecoverJobIn, RecoveryOptionsIn, RecoveryShardSpec
from forgetmap.core.errors import InputError
from forgetmap.db import open_store
from forgetmap.db import recoverability as store_sql
from forgetmap.services.recovery import (
    check_table,
    finite_or_none,
    headline,
    summarize,
    view_rows,
)

from tests.support import recoverability_fixtures as fixtures


def _request(**corpus) -> dict:
    return {
        "kind": "recover",
        "base": {"name": "b", "path": "org/base"},
        "post": {"name": "p", "path": "org/post"},
        "corpus": {"source": "local:web.jsonl", **corpus},
    }


def _checked(body: dict) -> RecoverJobIn:
    return validated(RecoverJobIn, body).check()


def test_request_round_trip_and_validation():
    request = _checked({**_request(), "label": "SFT", "stage": "sft"})
    assert request.options == RecoveryOptionsIn()
    assert request.options.max_tokens == 2047 and request.options.k == 4096
    payload = request.payload()
    again = _checked({k: v for k, v in payload.items() if k != "pairs"})
    assert again == request
    assert payload["pairs"] == [{"base": "b", "post": "p", "label": "SFT", "stage": "sft"}]
    spec = request.shard_spec().model_dump(mode="json")
    assert spec == {k: payload[k] for k in ("base", "post", "corpus", "options")}


# a shard spec as the app has stored it since recoverability jobs began (every field written)
STORED_SPEC = {
    "base": {"name": "b", "path": "org/base", "revision": None, "prompting": "chat"},
    "post": {"name": "p", "path": "org/post", "revision": "main", "prompting": "chat"},
    "corpus": {
        "source": "hf:org/web",
        "text_field": "content",
        "separator": None,
        "max_docs": None,
        "config": "en",
        "split": "validation",
    },
    "options": {
        "max_tokens": 512,
        "k": 64,
        "eval_fraction": 0.25,
        "select_fraction": 0.1,
        "seed": 3,
        "n_boot": 500,
        "controls": ["weight_noise"],
    },
}


def test_a_stored_spec_parses_to_what_was_stored():
    spec = RecoveryShardSpec.model_validate(STORED_SPEC)
    assert spec.model_dump(mode="json") == STORED_SPEC
    assert spec.options.controls == ["weight_noise"] and spec.corpus.max_docs is None
    # what the worker reads with defaults may be missing; a newer key is ignored
    sparse = {
        "base": {"name": "b", "path": "org/base"},
        "post": {"name": "p", "path": "org/post"},
        "corpus": {"source": "local:web.jsonl", "added_later": 1},
        "options": {"k": 64},
    }
    read = RecoveryShardSpec.model_validate(sparse)
    assert read.base.revision is None and read.corpus.text_field == "text"
    assert read.options.model_dump() == RecoveryOptionsIn(k=64).model_dump()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"corpus": {"source": "/etc/passwd"}}, "is not 'local:NAME'"),
        ({"corpus": {"source": "local:../secret"}}, "is not 'local:NAME'"),
        ({"corpus": {"source": "hf:allenai/c4", "max_docs": 2}}, "max_docs"),
        ({"options": {"eval_fraction": 0.9}}, "eval_fraction"),
        ({"options": {"controls": ["nonsense"]}}, "options.controls.0: Input should be"),
        ({"options": {"max_tokens": 4}}, "max_tokens"),
        ({"post": {"name": "b", "path": "org/post"}}, "different names"),
        ({"corpus": {}}, "corpus.source: Field required"),
    ],
)
def test_bad_requests_say_what_is_wrong(change, message):
    body = _request()
    body.update(change)
    with pytest.raises(InputError, match=message):
        _checked(body)


def test_hf_corpus_ids_are_accepted():
    CorpusIn(source="hf:allenai/c4", config="en", split="validation").check()
    CorpusIn(source="hf:wikitext").check()


def test_shares_are_recomputed_from_the_sums_golden():
    summary = summarize(fixtures.table(), n_boot=500, seed=0)
    post = summary["shares"]["post"]
    assert post["loss_base"]["estimate"] == pytest.approx(2.0)
    assert post["loss_post"]["estimate"] == pytest.approx(3.0)
    assert post["gap"]["estimate"] == pytest.approx(1.0)
    assert post["share"]["bias"]["estimate"] == pytest.approx(0.5)
    assert post["symmetric"]["bias"]["estimate"] == pytest.approx(0.4)
    # temp: post 0.9 * 3.0 = 2.7 -> share 0.3; base 0.9 * 2.0 = 1.8 -> symmetric (0.3 - 0.2) = 0.1
    assert post["share"]["temp"]["estimate"] == pytest.approx(0.3)
    assert post["symmetric"]["temp"]["estimate"] == pytest.approx(0.1)
    ci = post["symmetric"]["bias"]
    assert ci["lo"] <= ci["estimate"] <= ci["hi"]
    assert set(summary["shares"]) == {"post", "planted_bias", "doubled_logits", "weight_noise"}
    # in-sample (FIT): base 72/36 = 2, post 108/36 = 3, post bias 90/36 = 2.5
    assert summary["in_sample"]["post"]["share"]["bias"] == pytest.approx(0.5)


def test_zero_gap_gives_none_not_nan():
    t = fixtures.table(controls=())
    t["post/none"] = list(t["base/none"])
    summary = summarize(t, n_boot=100, seed=0)
    assert summary["shares"]["post"]["share"]["bias"]["estimate"] is None
    assert finite_or_none({"a": [float("nan"), 1.0, float("inf")]}) == {"a": [None, 1.0, None]}


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda t: t.pop("n_tokens"), "no 'n_tokens' column"),
        (lambda t: t["split"].__setitem__(0, "train"), "unknown split"),
        (lambda t: t["post/none"].pop(), "one value per document"),
        (lambda t: t["post/bias"].__setitem__(1, float("nan")), "finite, non-negative"),
        (lambda t: t["post/bias"].__setitem__(1, -1.0), "finite, non-negative"),
        (lambda t: t["post/bias"].__setitem__(1, "1.0"), "finite, non-negative"),
        (lambda t: t.pop("weight_noise/none"), "no uncorrected losses for 'weight_noise'"),
        (lambda t: t.__setitem__("hacker/none", [1.0] * 5), "unknown model"),
        (lambda t: t.__setitem__("post/softmax", [1.0] * 5), "unknown correction"),
        (lambda t: t.__setitem__("extra", [1] * 5), "unexpected column"),
        (lambda t: t.__setitem__("split", ["fit_train"] * 5), "no EVAL documents"),
        (lambda t: t["n_tokens"].__setitem__(0, 0), "positive integers"),
    ],
)
def test_malformed_tables_are_refused(mutate, message):
    t = fixtures.table()
    mutate(t)
    with pytest.raises(InputError, match=message):
        check_table(t, list(("planted_bias", "doubled_logits", "weight_noise")))


def test_store_round_trip_and_replacement(tmp_path):
    store = open_store(tmp_path / "fm.duckdb")
    t = fixtures.table()
    summary = summarize(t, n_boot=200, seed=0)
    with store.transaction() as conn:
        first = store_sql.save_recovery(
            conn,
            pair_id=7,
            shard_id=3,
            corpus="local:x",
            config={"n_docs": 5},
            summary=summary,
            table=t,
        )
    with store.read() as conn:
        back = store_sql.documents_table(conn, first)
        assert back == t
        assert shares_from_sums(back, base="base", post="post")["share"]["bias"] == pytest.approx(
            0.5
        )
        stored = store_sql.recovery(conn, first)
    assert stored["pair_id"] == 7 and stored["summary"] == summary
    # a repeated upload of the same shard replaces the earlier one
    with store.transaction() as conn:
        second = store_sql.save_recovery(
            conn, pair_id=7, shard_id=3, corpus="local:x", config={}, summary=summary, table=t
        )
    with store.read() as conn:
        assert store_sql.recovery(conn, first) is None
        assert [r["id"] for r in store_sql.pair_recoveries(conn, 7)] == [second]
        assert store_sql.documents_table(conn, first) == {}
        assert [r["id"] for r in store_sql.latest_recoveries(conn)] == [second]
    store.close()


def test_view_rows_and_headline():
    summary = summarize(fixtures.table(), n_boot=200, seed=0)
    summary["corrections"] = fixtures.upload()["corrections"]
    recovery = {"id": 1, "pair_id": 2, "corpus": "local:x", "summary": summary}
    rows = view_rows(recovery)
    assert [r["role"] for r in rows][:4] == ["post"] * 4
    assert rows[0]["correction"] == "bias" and rows[0]["symmetric"]["estimate"] == pytest.approx(
        0.4
    )
    assert {r["role"] for r in rows} == {"post", "weight_noise", "planted_bias", "doubled_logits"}
    head = headline(recovery, "bias")
    assert head["symmetric"] == pytest.approx(0.4)
    assert head["control_symmetric"] == pytest.approx(0.4)  # the fixture's controls copy the post
    assert head["gap"] == pytest.approx(1.0)
    assert not math.isnan(head["symmetric_lo"])
