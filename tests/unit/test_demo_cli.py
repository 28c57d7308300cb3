"""`forgetmap demo --scale N`: the flag is checked before anything is built and reaches the
recipe the zoo is built from (the build itself, minutes of training, is tests/demo's)."""

from __future__ import annotations

import dataclasses

import pytest
from click.testing import CliRunner
from forgetmap.cli import main
from forgetmap.demo import run as demo_run
from forgetmap.demo import suite
from forgetmap.demo.manifest import DEFAULT_RECIPE
from forgetmap.demo.zoo import recipe_hash


@pytest.fixture
def started(monkeypatch):
    """What `forgetmap demo` hands to the build-evaluate-serve loop (recorded, not run)."""
    monkeypatch.delenv("FORGETMAP_DB", raising=False)
    calls: list[tuple] = []
    monkeypatch.setattr(demo_run, "run_demo", lambda *args: calls.append(args))
    return calls


@pytest.mark.parametrize("scale", ["0", "61", "-3"])
def test_scale_outside_1_to_60_is_one_line_error_and_builds_nothing(tmp_path, started, scale):
    zoo = tmp_path / "zoo"
    result = CliRunner().invoke(main, ["demo", "--zoo", str(zoo), "--scale", scale])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        f"error: --scale: suite scale must be an integer in 1..60, got {scale}"
    ]
    assert started == [] and not zoo.exists()


def test_scale_that_is_not_a_number_is_refused(tmp_path, started):
    result = CliRunner().invoke(main, ["demo", "--zoo", str(tmp_path), "--scale", "big"])
    assert result.exit_code == 2 and "'big' is not a valid integer" in result.output
    assert started == []


@pytest.mark.parametrize("scale", [1, 3, 60])
def test_scale_reaches_the_recipe(tmp_path, started, scale):
    zoo = tmp_path / "zoo"
    result = CliRunner().invoke(
        main, ["demo", "--zoo", str(zoo), "--port", "8123", "--scale", str(scale)]
    )
    assert result.exit_code == 0, result.output
    [(db, host, port, zoo_dir, recipe)] = started
    # a scaled zoo's models have the default's names: its results go to a database of its own
    own = "demo.duckdb" if scale == 1 else f"demo-scale{scale}.duckdb"
    assert (db, host, port, zoo_dir) == (zoo / own, "127.0.0.1", 8123, zoo)
    assert recipe == dataclasses.replace(DEFAULT_RECIPE, suite_scale=scale)
    # the zoo it builds: every benchmark `scale` times its default size, cached apart from others
    sizes = [b.size for b in suite.benchmarks(recipe.suite_scale)]
    assert sizes == [scale * b.size for b in suite.benchmarks(1)]
    assert (recipe_hash(recipe) == recipe_hash(DEFAULT_RECIPE)) == (scale == 1)


def test_without_scale_the_demo_builds_the_default_zoo(tmp_path, started):
    assert CliRunner().invoke(main, ["demo", "--zoo", str(tmp_path)]).exit_code == 0
    [(db, *_, recipe)] = started
    assert (db, recipe) == (tmp_path / "demo.duckdb", DEFAULT_RECIPE)


def test_a_named_database_is_used_at_any_scale(tmp_path, started):
    db = tmp_path / "mine.duckdb"
    args = ["--db", str(db), "demo", "--zoo", str(tmp_path), "--scale", "2"]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert started[0][0] == db


def test_help_documents_scale():
    out = CliRunner().invoke(main, ["demo", "--help"]).output
    assert "--scale INTEGER" in out and "1-60" in out
