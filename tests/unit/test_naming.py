import pytest
from forgetmap.core.naming import infer_family_and_size


@pytest.mark.parametrize(
    ("name", "family", "size"),
    [
        ("Qwen/Qwen2.5-7B-Instruct", "Qwen2.5", 7_000_000_000),
        ("Qwen2.5-0.5B", "Qwen2.5", 500_000_000),
        ("meta-llama/Llama-3.1-8B", "Llama-3.1", 8_000_000_000),
        ("allenai/OLMo-2-1124-13B-DPO", "OLMo-2", 13_000_000_000),
        ("HuggingFaceTB/SmolLM2-360M-Instruct", "SmolLM2", 360_000_000),
        ("example-7b-base", "example", 7_000_000_000),
        ("my-model-instruct", "my-model", None),
        ("base", "base", None),
    ],
)
def test_infer_family_and_size(name, family, size):
    assert infer_family_and_size(name) == (family, size)
