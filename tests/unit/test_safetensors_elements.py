"""A safetensors file's element count, read from its header alone, against files the real
safetensors library writes (a scalar counts one element, an empty tensor none)."""

from __future__ import annotations

import numpy as np
import pytest
from forgetmap.services.model_sizes import safetensors_elements

from tests.support.services import require_module

safetensors_numpy = require_module("safetensors.numpy")


def test_the_header_counts_every_tensors_elements(tmp_path):
    path = tmp_path / "model.safetensors"
    tensors = {
        "scalar": np.array(3.0, np.float32),
        "empty": np.zeros((0, 5), np.float16),
        "w": np.ones((7, 11), np.int8),
        "b": np.ones(13, np.float64),
    }
    safetensors_numpy.save_file(tensors, str(path), metadata={"format": "pt"})
    assert safetensors_elements(path) == 1 + 0 + 77 + 13


@pytest.mark.parametrize(
    "content",
    [b"", b"abc", (2**40).to_bytes(8, "little") + b"{}", (2).to_bytes(8, "little") + b"[]"],
)
def test_a_file_that_is_not_safetensors_is_a_value_error(tmp_path, content):
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    with pytest.raises(ValueError):
        safetensors_elements(path)
