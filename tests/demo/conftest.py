"""The demo zoo, built once per session and shared by every demo test (about 2 minutes on 2 shared
cores; set FORGETMAP_TEST_ZOO_DIR to keep it between runs: it is cached by recipe), and one
in-process evaluation of it (seeds 0, 1, 2: the seed picks the few-shot examples, as in the
worker)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support.services import require_modules


@pytest.fixture(scope="session")
def zoo_dir(tmp_path_factory) -> Path:
    keep = os.environ.get("FORGETMAP_TEST_ZOO_DIR")
    return Path(keep) if keep else tmp_path_factory.mktemp("demo-zoo")


@pytest.fixture(scope="session")
def zoo(zoo_dir):
    require_modules("torch", "transformers", "tokenizers")
    from forgetmap.demo import zoo as zoo_mod

    stages: list[tuple[str, int, int]] = []
    started = time.monotonic()
    manifest = zoo_mod.build_zoo(
        zoo_dir, progress=lambda s, d, t: stages.append((s, d, t)), verbose=True
    )
    seconds = time.monotonic() - started
    print(f"\nzoo: {'cached' if manifest.cached else 'built'} in {seconds:.1f}s")
    if not manifest.cached:
        names = [s for s, _, _ in stages]
        assert names[0] == "suite"
        assert [n for n in dict.fromkeys(names)] == zoo_mod.stage_names(manifest.recipe)
        assert all(d <= t for _, d, t in stages)
    return manifest


@pytest.fixture(scope="session")
def runs(zoo) -> dict:
    """The zoo's checkpoint series by stage: "sft" and "sft+replay"."""
    return {run.stage: run for run in zoo.series}


@pytest.fixture(scope="session")
def report(zoo, runs):
    """Every model of the zoo, and the first checkpoint of narrow SFT (its last is
    demo-sft-math)."""
    from forgetmap.demo.evaluate import evaluate_zoo, format_report

    rep = evaluate_zoo(zoo, checkpoints=[runs["sft"].checkpoints[0].model])
    print("\n" + format_report(rep))
    return rep
