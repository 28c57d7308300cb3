"""`forgetmap model sizes [--from-hub]`: sizes the names do not give, read from models in the
real huggingface_hub cache layout (offline, nothing fetched), by the rules of
app/services/model_sizes.py; names stay first and `model set --size` wins. Both ways: on the
file, and through a running app (whose process reads the cache)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.cli import cli_both_ways
from tests.support.model_cache import snapshot, use_cache, write_json
from tests.support.services import require_module

safetensors_numpy = require_module("safetensors.numpy")

cli = cli_both_ways()

INDEX = "model.safetensors.index.json"
MODELS = [
    "acme/sharded-model",
    "acme/counted",
    "acme/single",
    "acme/two-shards",
    "acme/quantized",
    "acme/odd",
    "acme/absent",
    "acme/Named-7B",
    "local-model",
]


def write_cache(cache) -> None:
    # shards not cached: total_size / 2 bytes of bf16 = 14,483,464,192 / 2
    write_json(cache, "acme/sharded-model", "config.json", {"torch_dtype": "bfloat16"})
    write_json(
        cache,
        "acme/sharded-model",
        INDEX,
        {
            "metadata": {"total_size": 14_483_464_192},
            "weight_map": {
                "a": "model-00001-of-00002.safetensors",
                "b": "model-00002-of-00002.safetensors",
            },
        },
    )
    # transformers' own count wins over total_size (4 bytes each would say 1,234,568)
    write_json(cache, "acme/counted", "config.json", {"dtype": "float32"})
    write_json(
        cache,
        "acme/counted",
        INDEX,
        {"metadata": {"total_parameters": 1_234_567, "total_size": 4_938_272}},
    )
    # one file: 10*3 + 3 + 4*5 elements, whatever their dtypes
    safetensors_numpy.save_file(
        {
            "w": np.zeros((10, 3), np.float32),
            "b": np.zeros(3, np.float32),
            "e": np.zeros((4, 5), np.float16),
        },
        str(snapshot(cache, "acme/single") / "model.safetensors"),
    )
    # both shards cached: their headers (2*2 + 5) win over total_size / 2 bytes of fp16 (18)
    write_json(cache, "acme/two-shards", "config.json", {"torch_dtype": "float16"})
    write_json(
        cache,
        "acme/two-shards",
        INDEX,
        {
            "metadata": {"total_size": 36},
            "weight_map": {
                "x": "model-00001-of-00002.safetensors",
                "y": "model-00002-of-00002.safetensors",
            },
        },
    )
    folder = snapshot(cache, "acme/two-shards")
    safetensors_numpy.save_file(
        {"x": np.zeros((2, 2), np.float32)}, str(folder / "model-00001-of-00002.safetensors")
    )
    safetensors_numpy.save_file(
        {"y": np.zeros(5, np.float32)}, str(folder / "model-00002-of-00002.safetensors")
    )
    write_json(
        cache,
        "acme/quantized",
        "config.json",
        {"torch_dtype": "float16", "quantization_config": {"bits": 4}},
    )
    write_json(cache, "acme/quantized", INDEX, {"metadata": {"total_size": 1000}})
    write_json(cache, "acme/odd", "config.json", {"torch_dtype": "bfloat16"})
    write_json(cache, "acme/odd", INDEX, {"metadata": {"total_size": 7}})
    write_json(cache, "acme/Named-7B", INDEX, {"metadata": {"total_parameters": 5}})


@pytest.fixture
def stored(cli, tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    write_cache(cache)
    use_cache(monkeypatch, cache)  # before the first command: an app started for it reads it
    lines = ["model,benchmark,sample_id,correct"] + [f"{m},mmlu:anatomy,q0,1" for m in MODELS]
    (tmp_path / "rows.csv").write_text("\n".join(lines) + "\n")
    cli("import", "table", tmp_path / "rows.csv")
    cli.cache = cache
    return cli


def sizes(cli) -> dict[str, int | None]:
    # models: id, name, fingerprint, family, size_params, ...
    return {row[1]: row[4] for row in cli.contents()["models"]}


SET = {
    "acme/sharded-model": "7,241,732,096 parameters (safetensors index, bf16)",
    "acme/counted": "1,234,567 parameters (safetensors index, total_parameters)",
    "acme/single": "53 parameters (safetensors headers, 1 file)",
    "acme/two-shards": "9 parameters (safetensors headers, 2 files)",
}
LEFT = {
    "acme/quantized": "a quantized checkpoint: its stored elements are not its parameters",
    "acme/odd": "total_size, 7 bytes, is no whole number of bfloat16",
    "acme/absent": "not in the local hub cache",
    "local-model": "not a hub id (org/name)",
}


def test_unknown_sizes_are_listed_then_set_from_the_hub_cache(stored, monkeypatch):
    monkeypatch.setenv("COLUMNS", "500")  # the table in one panel, however long its reasons
    before = sizes(stored)
    assert before["acme/Named-7B"] == 7_000_000_000 and before["acme/counted"] is None

    listed = stored("model", "sizes").stdout
    assert sizes(stored) == before  # listing writes nothing
    lines = {line.split()[0]: line for line in listed.splitlines()[2:-1]}
    assert "7,000,000,000" in lines["acme/Named-7B"] and "parameters" not in lines["acme/Named-7B"]
    for name, said in SET.items():
        assert lines[name].split(None, 2)[1:] == ["unknown", said]
    for name, why in LEFT.items():
        assert lines[name].split(None, 2)[1:] == ["unknown", f"none: {why}"]
    assert listed.splitlines()[-1] == "set these with `forgetmap model sizes --from-hub`"

    out = stored("model", "sizes", "--from-hub").stdout.splitlines()
    whose = " (the app's, which owns the database)" if stored.owner else ""
    assert out[0] == f"read the Hugging Face cache at {stored.cache}{whose}"
    assert sorted(out[1:]) == sorted(
        [f"set {name}: from the hub cache: {said}" for name, said in SET.items()]
        + [f"left {name} unknown: {why}" for name, why in LEFT.items()]
    )
    assert sizes(stored) == {
        **before,
        "acme/sharded-model": 7_241_732_096,
        "acme/counted": 1_234_567,
        "acme/single": 53,
        "acme/two-shards": 9,
    }


def test_model_set_wins_and_a_set_size_is_not_filled_again(stored):
    stored("model", "set", "acme/sharded-model", "--size", "8e9")
    stored("model", "set", "acme/Named-7B", "--size", "6.5e9")
    out = stored("model", "sizes", "--from-hub").stdout
    assert "set acme/sharded-model" not in out and "set acme/counted" in out
    found = sizes(stored)
    assert (found["acme/sharded-model"], found["acme/Named-7B"]) == (8_000_000_000, 6_500_000_000)
    stored("model", "set", "acme/counted", "--size", "2e6")  # over a size from the cache, too
    assert sizes(stored)["acme/counted"] == 2_000_000
