"""Merged checkpoints through mergekit (issue 54, forgetmap.worker.merge), checked on the merged
files: a linear merge and SLERP at mix 0 and 1 are bit-identical to the base and the post model,
a linear mix is (1 - mix) * base + mix * post, SLERP follows the arc (our own formula), a soup is
the mean, and a merge is renamed into place only when whole."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.support.services import require_modules

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    require_modules("mergekit", "torch", "transformers", why="the merge path's checkpoints")
    from forgetmap.demo.tiny_model import build_tiny_model

    root = tmp_path_factory.mktemp("merge")
    models = [build_tiny_model(root / name, seed=seed) for name, seed in (("a", 0), ("b", 1))]
    models.append(build_tiny_model(root / "c", seed=2))
    return root, models


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    out: dict = {}
    for file in sorted(folder.glob("*.safetensors")):
        out.update(load_file(file))
    return out


def _slerp(t: float, v0, v1):
    """Spherical interpolation of two tensors (the angle between them as flat vectors), and a
    straight line where they are nearly parallel."""
    import torch

    a, b = v0.double().flatten(), v1.double().flatten()
    cos = float(torch.dot(a / a.norm(), b / b.norm()))
    if abs(cos) > 0.9995:
        return ((1 - t) * v0.double() + t * v1.double()).to(v0.dtype)
    theta = math.acos(cos)
    s0 = math.sin((1 - t) * theta) / math.sin(theta)
    s1 = math.sin(t * theta) / math.sin(theta)
    return (s0 * v0.double() + s1 * v1.double()).to(v0.dtype)


@pytest.mark.parametrize("method", ["linear", "slerp"])
def test_the_ends_of_a_mix_are_the_pairs_own_weights(pair, method):
    import torch
    from forgetmap.worker.merge import build_merge, pair_config

    root, (base, post, _) = pair
    ends = {}
    for mix in (0.0, 1.0):
        out = build_merge(pair_config(method, str(base), str(post), mix), root / f"{method}-{mix}")
        ends[mix] = _weights(out)
        assert (out / "tokenizer.json").is_file() and (out / "config.json").is_file()
        assert not (root / f".{method}-{mix}.building").exists()
    for mix, model in ((0.0, base), (1.0, post)):
        expected = _weights(model)
        assert set(ends[mix]) == set(expected)
        assert all(torch.equal(ends[mix][k], expected[k]) for k in expected), (method, mix)


def test_a_linear_mix_slerp_and_a_soup_against_our_formulas(pair):
    import torch
    from forgetmap.worker.merge import build_merge, pair_config, soup_config

    root, (base, post, third) = pair
    wa, wb, wc = _weights(base), _weights(post), _weights(third)
    linear = _weights(build_merge(pair_config("linear", str(base), str(post), 0.25), root / "l"))
    for k in wa:
        assert torch.allclose(linear[k], 0.75 * wa[k] + 0.25 * wb[k], atol=1e-6), k
    slerp = _weights(build_merge(pair_config("slerp", str(base), str(post), 0.3), root / "s"))
    for k in wa:
        assert torch.allclose(slerp[k], _slerp(0.3, wa[k], wb[k]), atol=1e-5), k
    soup = _weights(build_merge(soup_config([str(base), str(post), str(third)]), root / "soup"))
    for k in wa:
        assert torch.allclose(soup[k], (wa[k] + wb[k] + wc[k]) / 3, atol=1e-6), k


@pytest.mark.parametrize("method", ["ties", "dare_ties"])
def test_ties_and_dare_keep_a_share_of_the_task_vector(pair, method):
    """base + mix x (a density share of post - base): at mix 0 the base bit for bit, at density
    1 and mix 1 the post model (to float rounding); at density 0.5 about half of each large
    tensor's task vector is kept, TIES its largest entries as they are, DARE a random half
    rescaled to the whole vector's L1 norm."""
    import torch
    from forgetmap.worker.merge import build_merge, pair_config

    root, (base, post, _) = pair
    wa, wb = _weights(base), _weights(post)

    def merged(mix: float, density: float) -> dict:
        config = pair_config(method, str(base), str(post), mix, density=density)
        return _weights(build_merge(config, root / f"{method}-{mix}-{density}"))

    zero = merged(0.0, 0.5)
    assert all(torch.equal(zero[k], wa[k]) for k in wa)
    whole = merged(1.0, 1.0)
    assert all(torch.allclose(whole[k], wb[k], atol=1e-6) for k in wa)
    half = merged(0.5, 0.5)
    for k in wa:
        task = (wb[k] - wa[k]).double()
        if task.numel() < 10_000 or not task.abs().gt(0).all():
            continue
        moved = (half[k].double() - wa[k].double()) / 0.5  # the kept part of the task vector
        kept = moved.abs() > 1e-6
        assert 0.4 < kept.double().mean() < 0.6, (k, float(kept.double().mean()))
        # DARE rescales what it keeps to the whole task vector's L1 norm (mergekit's l1 rescale)
        scale = 1.0 if method == "ties" else float(task.abs().sum() / task[kept].abs().sum())
        assert torch.allclose(moved[kept], scale * task[kept], atol=1e-4), k
        if method == "ties":  # the largest magnitudes are the ones kept
            assert task[kept].abs().min() >= task[~kept].abs().max() - 1e-6, k


def test_a_merge_never_overwrites_and_bad_mixes_are_refused(pair):
    from forgetmap.worker.merge import build_merge, pair_config, soup_config

    root, (base, post, _) = pair
    with pytest.raises(FileExistsError, match="never written over a model"):
        build_merge(pair_config("linear", str(base), str(post), 0.5), base)
    with pytest.raises(ValueError, match="from 0 to 1"):
        pair_config("linear", str(base), str(post), 1.5)
    with pytest.raises(ValueError, match="one of linear, slerp, ties, dare_ties"):
        pair_config("breadcrumbs", str(base), str(post), 0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="density"):
        pair_config("ties", str(base), str(post), 0.5, density=0.0)
    with pytest.raises(ValueError, match="at least two"):
        soup_config([str(base)])
    # a merge that fails leaves no folder behind, whole or half-built
    with pytest.raises(Exception):  # noqa: B017 - mergekit's own error for a missing model
        build_merge(pair_config("linear", str(base), str(root / "nowhere"), 0.5), root / "x")
    assert not (root / "x").exists() and not (root / ".x.building").exists()


def test_a_merge_needs_disk_for_one_checkpoint(pair):
    import shutil

    from forgetmap.worker.merge import check_disk, disk_needed, pair_config

    root, (base, post, _) = pair
    needed = disk_needed(pair_config("linear", str(base), str(post), 0.5))
    assert needed == (base / "model.safetensors").stat().st_size
    check_disk(root / "fits", needed)  # a tiny model fits
    free = shutil.disk_usage(root).free
    with pytest.raises(OSError, match="not enough disk for a merge"):
        check_disk(root / "too-big", free)  # the free space is not free space and a tenth more
