"""Recoverability core (app/analysis/recoverability_fitting.py): closed forms, fits, shares and
bootstrap.

Pure numpy/scipy, hand-computed values where possible; the fits run on small synthetic logits
whose answer is known (data drawn from softmax(z / T0 + b0)).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from forgetmap.analysis.recoverability_fitting import (
    L2_GRID,
    LOG_BETA_GRID,
    Correction,
    TokenStats,
    _pass,
    _Rows,
    closed_form_bias,
    doc_loss_sums,
    fit_correction,
    fit_corrections,
    split_documents,
    token_nll,
    top_k_tokens,
)
from forgetmap.analysis.recoverability_shares import (
    bootstrap_shares,
    build_table,
    loss_column,
    shares_from_sums,
    table_models,
)

from tests.support.recoverability_reference import mean_nll, stats_from_logits, summarize_logits


def _log_softmax(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    m = a.max(axis=-1, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=-1, keepdims=True))


def _synthetic(n_docs=30, vocab=24, temp=1.0, bias=None, seed=0, lo=30, hi=60):
    """Per-document logits z and targets drawn from softmax(z / temp + bias)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(6, vocab)) * 1.5
    bias = np.zeros(vocab) if bias is None else bias
    zs, ys = [], []
    for _ in range(n_docs):
        n = int(rng.integers(lo, hi))
        z = rng.normal(size=(n, 6)) @ w
        p = np.exp(_log_softmax(z / temp + bias))
        ys.append(np.array([rng.choice(vocab, p=row) for row in p]))
        zs.append(z)
    return zs, ys


# ----------------------------------------------------------------------------------------------
# statistics and per-token nll
# ----------------------------------------------------------------------------------------------
def test_token_nll_matches_log_softmax_by_hand():
    z = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, -1.0]])
    y = np.array([2, 1])
    stats = stats_from_logits([z], [y])
    # uncorrected: -log softmax(z)[y]
    expect = -_log_softmax(z)[[0, 1], y]
    np.testing.assert_allclose(token_nll(stats), expect, atol=1e-6)
    # z / T + b with T = 2, b = (0.5, -1) on tokens (0, 1)
    corr = Correction(
        kind="bias_temp", temperature=2.0, bias_tokens=np.array([0, 1]), bias=np.array([0.5, -1.0])
    )
    a = z / 2.0 + np.array([0.5, -1.0, 0.0])
    np.testing.assert_allclose(token_nll(stats, corr), -_log_softmax(a)[[0, 1], y], atol=1e-6)
    # row 0 by hand: a = (0.5, -0.5, 1) -> nll = log(e^.5 + e^-.5 + e^1) - 1
    assert token_nll(stats, corr)[0] == pytest.approx(
        math.log(math.exp(0.5) + math.exp(-0.5) + math.e) - 1.0, abs=1e-6
    )
    two_docs = stats_from_logits([z[:1], z[1:]], [y[:1], y[1:]])
    np.testing.assert_allclose(doc_loss_sums(two_docs, corr), token_nll(stats, corr), atol=1e-6)


def test_shift_by_max_and_targets_outside_kept():
    z = np.array([[10.0, 11.0, 12.0, 9.0]])
    s = summarize_logits(z, np.array([3]), kept=np.array([0, 2]))
    assert s["target_logit"][0] == pytest.approx(-3.0)
    np.testing.assert_allclose(s["logits"][0], [-2.0, 0.0])
    # complement {1, 3}: C(u = 0) = log(e^-1 + e^-3)
    g0 = int(np.argmin(np.abs(LOG_BETA_GRID)))
    assert s["comp"][0, g0] == pytest.approx(math.log(math.exp(-1) + math.exp(-3)), abs=1e-6)


def test_complement_grid_matches_full_logits():
    zs, ys = _synthetic(n_docs=6, vocab=40, seed=3)
    kept = np.sort(top_k_tokens(np.concatenate(ys), 12, 40))
    full = stats_from_logits(zs, ys)
    part = stats_from_logits(zs, ys, kept=kept)
    assert full.full and not part.full
    rng = np.random.default_rng(0)
    for temp in (0.2, 0.7, 1.0, 1.9, 6.5):
        corr = Correction(
            kind="bias_temp", temperature=temp, bias_tokens=kept, bias=rng.normal(size=len(kept))
        )
        np.testing.assert_allclose(token_nll(part, corr), token_nll(full, corr), atol=2e-5)


def test_stats_validation():
    z = np.zeros((2, 3))
    with pytest.raises(ValueError):
        TokenStats(
            offsets=[0, 2],
            targets=np.array([0]),
            target_logit=np.zeros(1),
            kept=np.arange(3),
            logits=z,
            vocab_size=3,
        )
    st = stats_from_logits([z], [np.array([0, 1])])
    with pytest.raises(ValueError, match="not kept"):
        stats_from_logits([z], [np.array([0, 1])], kept=np.array([0, 1])).columns([2])
    assert st.n_tokens == 2 and st.n_docs == 1


# ----------------------------------------------------------------------------------------------
# splits and the bias support
# ----------------------------------------------------------------------------------------------
def test_split_documents():
    labels = split_documents(50, eval_fraction=0.2, select_fraction=0.1, seed=4)
    assert (labels == "eval").sum() == 10
    fit = np.flatnonzero(labels != "eval")
    assert (labels == "fit_select").sum() == 4  # round(0.1 * 40)
    # FIT in corpus order: the selection documents are the last FIT documents
    assert set(fit[-4:]) == set(np.flatnonzero(labels == "fit_select"))
    np.testing.assert_array_equal(labels, split_documents(50, seed=4))
    assert not np.array_equal(labels, split_documents(50, seed=5))
    small = split_documents(3)
    assert sorted(small) == ["eval", "fit_select", "fit_train"]
    with pytest.raises(ValueError):
        split_documents(2)


def test_top_k_tokens_order_ties_and_cap():
    t = np.array([5, 5, 5, 2, 2, 7, 7, 1])
    np.testing.assert_array_equal(top_k_tokens(t, 10, 9), [5, 2, 7, 1])  # unseen never listed
    np.testing.assert_array_equal(top_k_tokens(t, 2), [5, 2])  # tie 2/7 -> smaller id


# ----------------------------------------------------------------------------------------------
# corrections
# ----------------------------------------------------------------------------------------------
def test_closed_form_bias_by_hand():
    # token 1: uniform over 3 tokens; token 2: logits (ln 2, 0, 0) -> p = (1/2, 1/4, 1/4)
    z = np.array([[0.0, 0.0, 0.0], [math.log(2.0), 0.0, 0.0]])
    stats = stats_from_logits([z], [np.array([0, 1])])
    corr = closed_form_bias(stats, np.arange(2), np.array([0, 1]))
    # f = (1/2, 1/2); pbar_0 = (1/3 + 1/2)/2 = 5/12; pbar_1 = (1/3 + 1/4)/2 = 7/24
    np.testing.assert_allclose(corr.bias, [math.log(6 / 5), math.log(12 / 7)], atol=1e-6)
    # the same from the top-K + complement statistics
    part = stats_from_logits([z], [np.array([0, 1])], kept=np.array([0, 1]))
    np.testing.assert_allclose(
        closed_form_bias(part, np.arange(2), [0, 1]).bias, corr.bias, atol=1e-6
    )


def test_gradients_match_finite_differences():
    zs, ys = _synthetic(n_docs=5, vocab=30, seed=1)
    kept = np.sort(top_k_tokens(np.concatenate(ys), 10, 30))
    for stats in (stats_from_logits(zs, ys), stats_from_logits(zs, ys, kept=kept)):
        data = _Rows(stats, None)
        rng = np.random.default_rng(2)
        b = np.zeros(stats.logits.shape[1])
        cols = stats.columns(kept)
        b[cols] = rng.normal(size=len(kept)) * 0.5
        beta = 0.8
        total, p_sum, d_beta, _ = _pass(data, beta, b, grad_b=True, grad_beta=True)
        h = 1e-4
        fd = (_pass(data, beta + h, b)[0] - _pass(data, beta - h, b)[0]) / (2 * h)
        assert d_beta == pytest.approx(fd, rel=2e-3, abs=1e-3)
        k = cols[0]
        e = np.zeros_like(b)
        e[k] = 1e-3
        fd_b = (_pass(data, beta, b + e)[0] - _pass(data, beta, b - e)[0]) / 2e-3
        n_k = (stats.targets == kept[0]).sum()
        assert p_sum[k] - n_k == pytest.approx(fd_b, rel=2e-3, abs=1e-3)


def test_temperature_fit_recovers_known_temperature():
    zs, ys = _synthetic(n_docs=60, vocab=24, temp=0.5, seed=7, lo=100, hi=140)
    stats = stats_from_logits(zs, ys)
    labels = split_documents(stats.n_docs, seed=0)
    corr = fit_correction(stats, "temp", train_rows=stats.rows_of(labels == "fit_train"))
    assert corr.temperature == pytest.approx(0.5, rel=0.06)  # ~2% sampling noise
    assert corr.converged


def test_bias_fit_recovers_planted_bias_and_penalty_choice():
    vocab = 16
    b0 = np.zeros(vocab)
    b0[[0, 3, 5]] = [1.5, -1.0, 0.8]
    zs, ys = _synthetic(n_docs=40, vocab=vocab, bias=b0, seed=11, lo=80, hi=120)
    stats = stats_from_logits(zs, ys)
    labels = split_documents(stats.n_docs, seed=0)
    s = top_k_tokens(np.concatenate(ys), 16, vocab)
    fits = fit_corrections(stats, labels, s, kinds=("bias", "temp", "bias_temp", "closed_bias"))
    b = dict(zip(fits["bias"].bias_tokens.tolist(), fits["bias"].bias, strict=True))
    # biases are identified up to a constant: compare differences with token 1 (b0 = 0)
    for tok in (0, 3, 5):
        assert b[tok] - b[1] == pytest.approx(b0[tok], abs=0.25)
    assert fits["bias"].l2 in L2_GRID
    assert len(fits["bias"].path) == len(L2_GRID)
    chosen = min(fits["bias"].path, key=lambda p: p["select_loss"])
    assert chosen["l2"] == fits["bias"].l2
    assert fits["temp"].l2 is None and fits["bias"].temperature == 1.0
    # every correction lowers the training loss below the uncorrected one
    train = stats.rows_of(labels == "fit_train")
    base = mean_nll(stats, rows=train)
    for kind in ("bias", "bias_temp", "closed_bias"):
        assert mean_nll(stats, fits[kind], rows=train) < base


# ----------------------------------------------------------------------------------------------
# table, shares, bootstrap
# ----------------------------------------------------------------------------------------------
def _table():
    sums = {
        "base": {"none": [2.0, 3.0, 5.0, 9.0], "bias": [1.8, 3.0, 4.7, 1.0]},
        "post": {"none": [4.0, 4.0, 7.0, 9.0], "bias": [3.0, 3.5, 6.5, 2.0]},
    }
    return build_table(
        ["a", "b", "c", "d"], ["eval", "eval", "eval", "fit_train"], [2, 3, 5, 4], sums
    )


def test_shares_from_sums_by_hand():
    out = shares_from_sums(_table())
    # EVAL docs a, b, c: 10 tokens; L_base = 10/10, L_post = 15/10, L_post,bias = 13/10,
    # L_base,bias = 9.5/10
    assert out["n_docs"] == 3 and out["n_tokens"] == 10
    assert out["loss_base"] == pytest.approx(1.0)
    assert out["loss_post"] == pytest.approx(1.5)
    assert out["gap"] == pytest.approx(0.5)
    assert out["gain_post"]["bias"] == pytest.approx(0.2)
    assert out["gain_base"]["bias"] == pytest.approx(0.05)
    assert out["share"]["bias"] == pytest.approx(0.2 / 0.5)
    assert out["symmetric"]["bias"] == pytest.approx((0.2 - 0.05) / 0.5)
    # in-sample (FIT) uses document d only: gap 0, shares undefined
    fit = shares_from_sums(_table(), split="fit")
    assert fit["n_docs"] == 1 and fit["gap"] == 0.0
    assert not math.isfinite(fit["share"]["bias"])
    everything = shares_from_sums(_table(), split=None)
    assert everything["n_tokens"] == 14


def test_table_records_round_trip_and_columns():
    table = _table()
    assert table_models(table) == {"base": ["none", "bias"], "post": ["none", "bias"]}
    # the table travels as JSON columns (the worker's upload); the shares survive the trip
    assert shares_from_sums(json.loads(json.dumps(table))) == shares_from_sums(table)
    with pytest.raises(ValueError):
        loss_column("a/b", "none")
    with pytest.raises(ValueError):
        build_table([1], ["eval"], [1], {"base": {"none": [1.0, 2.0]}})
    with pytest.raises(KeyError):
        shares_from_sums(table, post="nope")


def test_bootstrap_two_documents_takes_three_values():
    sums = {
        "base": {"none": [1.0, 1.0], "bias": [0.9, 1.0]},
        "post": {"none": [2.0, 3.0], "bias": [1.5, 2.0]},
    }
    table = build_table([0, 1], ["eval", "eval"], [1, 1], sums)
    out = bootstrap_shares(table, n_boot=4000, seed=1, return_replicates=True)
    # replicate = (doc0, doc0), (doc1, doc1) or one of each: share 0.5, 0.5, 1.5/3 = 0.5 ...
    # symmetric: doc0 alone (0.5 - 0.1)/1 = 0.4; doc1 alone (1 - 0)/2 = 0.5; both 1.4/3
    sym = out["replicates"]["symmetric/bias"]
    values = {0.4: 0.25, 0.5: 0.25, 1.4 / 3: 0.5}
    matched = np.zeros(len(sym), dtype=bool)
    for v, freq in values.items():
        hit = np.isclose(sym, v)
        matched |= hit
        assert hit.mean() == pytest.approx(freq, abs=0.03)
    assert matched.all()
    assert out["symmetric"]["bias"]["estimate"] == pytest.approx(1.4 / 3)
    assert out["symmetric"]["bias"]["lo"] == pytest.approx(0.4)
    assert out["symmetric"]["bias"]["hi"] == pytest.approx(0.5)
    assert out["share"]["bias"]["lo"] == pytest.approx(0.5)  # every replicate gives 0.5


def test_bootstrap_is_seeded_and_degenerate_with_equal_documents():
    sums = {
        "base": {"none": [1.0] * 5, "temp": [0.9] * 5},
        "post": {"none": [2.0] * 5, "temp": [1.6] * 5},
    }
    table = build_table(list(range(5)), ["eval"] * 5, [3] * 5, sums)
    a = bootstrap_shares(table, n_boot=200, seed=3)
    assert a == bootstrap_shares(table, n_boot=200, seed=3)
    sym = a["symmetric"]["temp"]
    assert sym["estimate"] == pytest.approx(0.3)  # (0.4 - 0.1) / 1
    assert sym["lo"] == pytest.approx(0.3) and sym["hi"] == pytest.approx(0.3)
    assert sym["se"] == pytest.approx(0.0, abs=1e-12)
    assert a["gap"]["estimate"] == pytest.approx(1.0 / 3)  # per token: 5 / 15


def test_bootstrap_counts_zero_gap_replicates():
    sums = {
        "base": {"none": [1.0, 1.0], "bias": [1.0, 1.0]},
        "post": {"none": [1.0, 2.0], "bias": [1.0, 1.5]},
    }
    table = build_table([0, 1], ["eval", "eval"], [1, 1], sums)
    out = bootstrap_shares(table, n_boot=400, seed=0)
    # doc0 drawn twice -> gap 0 (about a quarter of replicates)
    assert 50 < out["n_nonfinite"] < 150
    assert out["share"]["bias"]["lo"] == pytest.approx(0.5)


def test_read_corpus(tmp_path):
    from forgetmap.worker.recoverability_scoring import read_corpus

    (tmp_path / "a.jsonl").write_text('{"text": "one"}\n\n{"text": "  "}\n{"text": "two"}\n')
    (tmp_path / "b.txt").write_text("first part\n\nsecond part\n\n")
    (tmp_path / "c.txt").write_text("whole file")
    ids, texts = read_corpus([tmp_path / "a.jsonl", tmp_path / "b.txt"], txt_separator="\n\n")
    assert ids == ["a.jsonl:1", "a.jsonl:4", "b.txt#0", "b.txt#1"]
    assert texts == ["one", "two", "first part", "second part"]
    assert read_corpus([tmp_path / "c.txt"]) == (["c.txt"], ["whole file"])
    (tmp_path / "bad.jsonl").write_text('{"body": "x"}\n')
    with pytest.raises(ValueError, match="text"):
        read_corpus([tmp_path / "bad.jsonl"])
