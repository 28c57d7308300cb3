"""The worker checks the shard spec it receives (an evaluation's or a recoverability analysis's)
against the boundary before loading anything."""

import pytest
from forgetmap.contract.shards import ClaimedShard
from forgetmap.worker.evaluate import ShardFailed, run_shard
from forgetmap.worker.recoverability_job import run_recover_shard
from forgetmap.worker.settings import WorkerSettings

SPEC = {
    "model": {"name": "m", "path": "org/m", "revision": None, "prompting": "chat"},
    "config": {
        "engine": "vllm",
        "mode": "generate",
        "temperature": 0.6,
        "top_p": 0.95,
        "max_tokens": 64,
        "shots": 3,
        "limit": None,
        "prompting": "chat",
        "revision": None,
        "data": {"source": "hub"},
    },  # a finished shard's spec carries its data record
}


def _run(spec: dict):
    shard = ClaimedShard(id=1, job_id=1, seed=0, benchmark="local:nothing.jsonl", spec=spec)
    # no client and no engines: a refused spec must fail before either is used
    return run_shard(
        shard, client=None, engines=None, settings=WorkerSettings(name="w", benchmark_dirs=[])
    )


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"temperature": 9}, "config.temperature: Input should be less than or equal to 2"),
        ({"engine": "tgi"}, "config.engine: Input should be 'vllm' or 'transformers'"),
        ({"max_tokens": "64"}, "config.max_tokens: Input should be a valid integer"),
    ],
)
def test_a_bad_spec_fails_the_shard_with_the_boundarys_message(change, problem):
    with pytest.raises(ShardFailed, match=f"the shard's spec is not valid: {problem}"):
        _run({**SPEC, "config": {**SPEC["config"], **change}})


def test_a_valid_spec_passes_the_check():
    # past the spec check, the next refusal is the local benchmark without benchmark folders
    with pytest.raises(ShardFailed, match="no benchmark folders configured"):
        _run(SPEC)


RECOVER_SPEC = {
    "base": {"name": "b", "path": "org/base"},
    "post": {"name": "p", "path": "org/post"},
    "corpus": {"source": "local:web.jsonl"},
    "options": {"k": 64, "controls": ["weight_noise"]},
}


def _recover(spec: dict):
    shard = ClaimedShard(id=1, job_id=1, kind="recover", seed=0, benchmark="recover:x", spec=spec)
    settings = WorkerSettings(name="w", benchmark_dirs=[], corpus_dirs=[])
    return run_recover_shard(shard, client=None, settings=settings)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"options": {"k": 0}}, "options.k: Input should be greater than or equal to 1"),
        ({"options": {"controls": ["nonsense"]}}, "options.controls.0: Input should be"),
        ({"corpus": {}}, "corpus.source: Field required"),
    ],
)
def test_a_bad_recovery_spec_fails_the_shard_with_the_boundarys_message(change, problem):
    with pytest.raises(ShardFailed, match=f"the shard's spec is not valid: {problem}"):
        _recover({**RECOVER_SPEC, **change})


def test_a_valid_recovery_spec_passes_the_check():
    # past the spec check, the next refusal is the local corpus without corpus folders
    with pytest.raises(ShardFailed, match="no corpus folders configured"):
        _recover(RECOVER_SPEC)
