"""Recoverability end to end: job -> Redis -> `forgetmap worker` -> transformers scoring and fits ->
upload -> shares recomputed and stored by the app -> pair page.

The post-trained model is the tiny base with its output weights doubled, so the answer is known: a
temperature takes the whole loss rise back (symmetric share ~1) and the post's fitted temperature is
twice the base's. The corpus is text sampled from the base and re-tokenized, written as JSONL in
the worker's corpus folder; the three controls run beside the pair.
"""

from __future__ import annotations

import json

import pytest

from tests.support.worker_env import Deployment, require_redis

pytestmark = [pytest.mark.integration, pytest.mark.slow]
N_DOCS, DOC_TOKENS = 48, 128


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    from tests.support.services import service_missing

    try:
        import torch
        from forgetmap.demo.tiny_model import build_tiny_model
        from forgetmap.worker import recoverability_scoring as scoring
        from transformers import AutoTokenizer
    except ImportError as exc:
        service_missing(f"torch/transformers not installed: {exc}")
    root = tmp_path_factory.mktemp("recover-pair")
    base = build_tiny_model(root / "models" / "tiny-base", seed=0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = scoring.load_model(base, device="cpu")
        tokenizer = AutoTokenizer.from_pretrained(base)
        docs = scoring.sample_documents(
            model, N_DOCS, DOC_TOKENS, start_id=model.config.bos_token_id
        )
        with torch.no_grad():
            model.lm_head.weight.mul_(2.0)
        model.save_pretrained(root / "models" / "tiny-doubled")
        tokenizer.save_pretrained(root / "models" / "tiny-doubled")
    finally:
        torch.set_num_threads(threads)
    corpus = root / "corpora" / "sampled.jsonl"
    corpus.parent.mkdir()
    corpus.write_text("".join(json.dumps({"text": tokenizer.decode(d[1:])}) + "\n" for d in docs))
    return root


def test_recoverability_job_end_to_end(tmp_path, pair):
    require_redis()
    # the app checks model paths against its roots too (the form and the API refuse others)
    dep = Deployment(
        tmp_path,
        extra_env={
            "FORGETMAP_CORPUS_DIRS": str(pair / "corpora"),
            "FORGETMAP_MODEL_ROOTS": str(tmp_path / "models"),
        },
    )
    dep.models.symlink_to(pair / "models", target_is_directory=True)
    # ~12 MB of statistics per model here: over this limit, so they go to memory maps on disk
    (tmp_path / "scratch").mkdir()
    dep.worker_env.update(
        FORGETMAP_RECOVER_MEMORY_GB="0.001", FORGETMAP_SCRATCH_DIR=str(tmp_path / "scratch")
    )
    try:
        dep.start_worker()
        dep.wait_ready()
        body = {
            "kind": "recover",
            "label": "doubled head",
            "base": {"name": "tiny-base", "path": str(dep.models / "tiny-base")},
            "post": {"name": "tiny-doubled", "path": str(dep.models / "tiny-doubled")},
            "corpus": {"source": "local:sampled.jsonl"},
            "options": {"max_tokens": 256, "n_boot": 1000},
        }
        job = dep.wait(dep.submit(body), timeout=600)
        assert job["status"] == "done", dep.logs()
        (shard,) = job["shards"]
        assert shard["done"] == shard["total"] == 5 * N_DOCS  # base, 3 controls, post
        pair_id = dep.http.get("/api/pairs").json()[0]["id"]
        (recovery,) = dep.http.get(f"/api/pairs/{pair_id}/recoveries").json()
        shares = recovery["summary"]["shares"]
        fitted = recovery["summary"]["corrections"]
        assert recovery["config"]["n_docs"] == N_DOCS
        print(
            "recoverability:",
            json.dumps(
                {  # shown with -s: the numbers quoted in notes
                    m: {
                        k: round(shares[m]["symmetric"][k]["estimate"], 4)
                        for k in shares[m]["symmetric"]
                    }
                    for m in shares
                }
            ),
            "T:",
            {m: round(c["temp"]["temperature"], 4) for m, c in fitted.items()},
        )
        # the known answers
        assert shares["post"]["symmetric"]["temp"]["estimate"] > 0.95
        ratio = fitted["post"]["temp"]["temperature"] / fitted["base"]["temp"]["temperature"]
        assert ratio == pytest.approx(2.0, rel=0.02)
        assert shares["planted_bias"]["symmetric"]["bias"]["estimate"] > 0.9
        noise = shares["weight_noise"]["symmetric"]["bias_temp"]
        assert noise["lo"] <= noise["estimate"] <= noise["hi"]
        page = dep.http.get(f"/pairs/{pair_id}").text
        assert "control: noise on the output weights" in page and "sampled.jsonl" in page
        # a corpus the worker does not have fails the shard with a message that says so
        body["corpus"] = {"source": "local:missing.jsonl"}
        failed = dep.wait(dep.submit(body), timeout=300)
        assert failed["status"] == "failed"
        assert "not found in the corpus folders" in failed["shards"][0]["error"]
        assert "scored" in dep.logs()  # the worker logs each model's progress
        assert "kept in memory maps under" in dep.logs()
        assert list((tmp_path / "scratch").iterdir()) == []  # removed after the fits
    finally:
        dep.close()
