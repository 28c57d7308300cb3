"""Recoverability on real (tiny) transformers models: scoring, controls with known answers, a pair.

The corpus is sampled from the tiny base model itself at T = 1, so the base is calibrated on it by
construction (best temperature 1, best bias 0, up to sampling noise) and the controls have exact
answers: doubled logits -> T = 2; planted bias -> share 1 (> 0.9 required); Gaussian noise on the
output weights -> whatever share it gets is reported (the yardstick for real pairs).

Without torch/transformers the tests skip, except under CI=true or FORGETMAP_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest
from forgetmap.analysis.recoverability_fitting import (
    KINDS,
    Correction,
    token_nll,
    top_k_tokens,
)
from forgetmap.analysis.recoverability_shares import shares_from_sums

from tests.support.recoverability_reference import summarize_logits
from tests.support.services import service_missing

pytestmark = pytest.mark.integration

N_DOCS, DOC_TOKENS = 96, 256


def _need(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        service_missing(f"{', '.join(missing)} not installed")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    _need("torch", "transformers", "tokenizers")
    import torch
    from forgetmap.demo.tiny_model import build_tiny_model
    from forgetmap.worker import recoverability_scoring as scoring

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 2 shared cores: more threads are much slower here
    path = build_tiny_model(tmp_path_factory.mktemp("recover") / "base", seed=0)
    model = scoring.load_model(path, device="cpu")
    docs = scoring.sample_documents(
        model, N_DOCS, DOC_TOKENS, start_id=model.config.bos_token_id, seed=0
    )
    yield {"path": path, "model": model, "docs": docs}
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def controls(tiny):
    from forgetmap.worker import recoverability_scoring as scoring

    return scoring.run_recoverability(tiny["model"], None, tiny["docs"], n_boot=1000, seed=0)


def _texts():
    from forgetmap.demo.tiny_model import TRAINING_TEXT

    lines = TRAINING_TEXT[: len(TRAINING_TEXT) // 4]
    return [" ".join(lines[i : i + 1 + i % 7]) for i in range(len(lines))] + ["", "Hi"]


def test_scoring_matches_plain_forward_and_padding_changes_nothing(tiny):
    from forgetmap.worker import recoverability_scoring as scoring
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny["path"])
    texts = _texts()
    docs, kept = scoring.prepare_documents(tok, texts, max_tokens=40)
    assert len(docs) == len(texts) - 1  # "" has nothing to score; "Hi" (BOS + token) stays
    assert kept[-1] == len(texts) - 1 and len(texts) - 2 not in kept
    assert all(d[0] == tok.bos_token_id and len(d) <= 41 for d in docs)
    assert max(len(d) for d in docs) == 41  # truncated to 40 document tokens
    stats = scoring.score_documents(tiny["model"], docs, batch_tokens=256, chunk_positions=7)
    assert stats.n_tokens == sum(len(d) - 1 for d in docs)
    batched = scoring.plain_nll(tiny["model"], docs, batch_tokens=256)
    alone = scoring.plain_nll(tiny["model"], docs, batch_tokens=1)  # one document per forward pass
    np.testing.assert_allclose(batched, alone, atol=2e-5)
    np.testing.assert_allclose(token_nll(stats), alone, atol=2e-5)


def test_top_k_statistics_match_full_logits(tiny):
    import torch
    from forgetmap.worker import recoverability_scoring as scoring

    docs = tiny["docs"][:6]
    kept = np.sort(top_k_tokens(np.concatenate([d[1:] for d in docs]), 64))
    full = scoring.score_documents(tiny["model"], docs)
    part = scoring.score_documents(tiny["model"], docs, kept=kept)
    with torch.inference_mode():
        z = tiny["model"](input_ids=torch.as_tensor(docs[0][None])).logits[0, :-1].numpy()
    ref = summarize_logits(z, docs[0][1:], kept)
    n = len(docs[0]) - 1
    np.testing.assert_allclose(part.comp[:n], ref["comp"], atol=1e-4)
    np.testing.assert_allclose(part.comp_du[:n], ref["comp_du"], atol=1e-3)
    rng = np.random.default_rng(0)
    for temp in (0.4, 1.0, 2.0, 4.0):
        corr = Correction(
            kind="bias_temp", temperature=temp, bias_tokens=kept, bias=rng.normal(size=len(kept))
        )
        np.testing.assert_allclose(token_nll(part, corr), token_nll(full, corr), atol=1e-5)


def test_controls_have_known_answers(tiny, controls, capsys):
    res = controls
    temps = {m: {k: c.temperature for k, c in cs.items()} for m, cs in res.corrections.items()}
    planted = res.shares["planted_bias"]
    doubled = res.shares["doubled_logits"]
    noise = res.shares["weight_noise"]
    with capsys.disabled():
        print(
            "\n[recover controls]",
            json.dumps(
                {
                    "tokens": res.config["n_tokens"],
                    "split_tokens": res.config["split_tokens"],
                    "base_T": temps["base"]["temp"],
                    "doubled_T": temps["doubled_logits"]["temp"],
                    "doubled_T_bias_temp": temps["doubled_logits"]["bias_temp"],
                    "planted_gap": planted["gap"]["estimate"],
                    "planted_share_bias": planted["share"]["bias"],
                    "planted_symmetric_bias": planted["symmetric"]["bias"],
                    "noise_gap": noise["gap"]["estimate"],
                    "noise_symmetric": {k: v for k, v in noise["symmetric"].items()},
                },
                indent=1,
                default=float,
            ),
        )
    # the base is calibrated on its own samples
    assert temps["base"]["temp"] == pytest.approx(1.0, rel=0.02)
    # doubled logits: the fitted temperature is 2 (within 2%), and it takes the whole gap back
    assert temps["doubled_logits"]["temp"] == pytest.approx(2.0, rel=0.02)
    assert temps["doubled_logits"]["bias_temp"] == pytest.approx(2.0, rel=0.02)
    assert doubled["symmetric"]["temp"]["estimate"] > 0.98
    # planted bias: the bias correction recovers > 0.9 (both shares, lower CI bound too)
    assert planted["gap"]["lo"] > 0
    assert planted["share"]["bias"]["estimate"] > 0.9
    assert planted["symmetric"]["bias"]["estimate"] > 0.9
    assert planted["symmetric"]["bias"]["lo"] > 0.9
    assert planted["symmetric"]["bias_temp"]["estimate"] > 0.9
    assert planted["symmetric"]["temp"]["estimate"] < 0.5  # a temperature cannot undo a bias
    # weight noise: reported, with a real gap and finite intervals; it is not a bias or a
    # temperature
    assert noise["gap"]["lo"] > 0
    for kind in KINDS:
        s = noise["symmetric"][kind]
        assert math.isfinite(s["estimate"]) and s["lo"] <= s["estimate"] <= s["hi"]
        assert s["estimate"] < 0.9
    # every share is recomputed from the exported per-document table
    table = json.loads(json.dumps(res.table))
    for name, shares in res.shares.items():
        again = shares_from_sums(table, post=name)
        for kind in KINDS:
            assert again["symmetric"][kind] == pytest.approx(shares["symmetric"][kind]["estimate"])
    json.dumps(res.to_dict())  # JSON-ready


def test_controls_restore_the_model(tiny):
    import torch
    from forgetmap.worker import recoverability_scoring as scoring

    model = tiny["model"]
    ids = torch.as_tensor(tiny["docs"][0][None, :32])
    with torch.inference_mode():
        before = model(input_ids=ids).logits.clone()
        for kind in scoring.CONTROLS:
            with scoring.output_head_control(
                model, kind, bias_tokens=np.arange(10), seed=1
            ) as info:
                changed = model(input_ids=ids).logits
                if kind == "doubled_logits":
                    torch.testing.assert_close(changed, 2 * before)
                else:
                    assert not torch.allclose(changed, before)
            assert info["kind"] == kind
        torch.testing.assert_close(model(input_ids=ids).logits, before, rtol=0, atol=0)
    with pytest.raises(ValueError):
        with scoring.output_head_control(model, "nope"):
            pass


def test_pair_from_paths_beside_its_noise_control(tiny, tmp_path):
    """A 'post-trained' model (noise in its last MLP) loaded from disk, with the noise control."""
    import torch
    from forgetmap.worker import recoverability_scoring as scoring

    post = scoring.load_model(tiny["path"], device="cpu")
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, p in post.named_parameters():
            if "layers.1.mlp" in name:
                p.add_(torch.randn(p.shape, generator=gen) * p.std() * 0.5)
    post.save_pretrained(tmp_path / "post")
    docs = tiny["docs"][:48]
    res = scoring.run_recoverability(
        str(tiny["path"]),
        str(tmp_path / "post"),
        docs,
        controls=("weight_noise",),
        n_boot=300,
        seed=1,
    )
    assert set(res.shares) == {"post", "weight_noise"}
    pair = res.shares["post"]
    assert pair["gap"]["estimate"] > 0
    assert pair["n_docs"] == res.config["split_docs"]["eval"]
    for kind in KINDS:
        assert math.isfinite(pair["symmetric"][kind]["estimate"])
    assert res.in_sample["post"]["n_docs"] == (
        res.config["split_docs"]["fit_train"] + res.config["split_docs"]["fit_select"]
    )
    assert len(res.table["doc_id"]) == 48


def test_doubled_logits_with_top_k_and_complement_grid(tiny):
    """The real-vocabulary path (top-K logits + complement grid, float16) gives T = 2 too."""
    from forgetmap.worker import recoverability_scoring as scoring

    res = scoring.run_recoverability(
        tiny["model"],
        None,
        tiny["docs"][:64],
        k=64,
        full_vocab_max=0,
        controls=("doubled_logits",),
        kinds=("temp", "bias"),
        n_boot=200,
    )
    assert not res.timing["base"]["full_vocab"]
    assert res.config["n_bias_tokens"] == 64
    assert res.corrections["base"]["temp"].temperature == pytest.approx(1.0, rel=0.02)
    assert res.corrections["doubled_logits"]["temp"].temperature == pytest.approx(2.0, rel=0.02)


def test_memory_maps_give_the_same_sums_and_are_removed(tiny, tmp_path):
    """scratch_dir keeps the statistics in .npy memory maps (for real vocabularies): same result."""
    from forgetmap.worker import recoverability_scoring as scoring

    seen = []

    def progress(what, done, total):
        seen.append(sorted(p.name for p in (tmp_path / "base").glob("*.npy")))

    common = dict(k=64, full_vocab_max=0, controls=(), kinds=("bias", "temp"), n_boot=100)
    docs = tiny["docs"][:32]
    in_memory = scoring.run_recoverability(tiny["model"], None, docs, **common)
    mapped = scoring.run_recoverability(
        tiny["model"], None, docs, scratch_dir=tmp_path, progress=progress, **common
    )
    assert ["comp.npy", "comp_du.npy", "logits.npy"] in seen
    assert mapped.table == in_memory.table
    assert list(tmp_path.iterdir()) == []
