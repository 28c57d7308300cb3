"""The quick commands' processes load only what they use: no pandas in `import`, `pair` and `map`
(pyarrow would load it), no Arrow, YAML parser or rich in `pair` and `map` (issue 12: `map` on a
small database answers in under 0.5 s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBED = ("pandas", "pyarrow", "yaml", "rich")


def _loaded(args: list[str]) -> tuple[set[str], str]:
    """Run ``forgetmap ARGS`` as the executable does (``python -m app.cli``); which of ``PROBED``
    the process had loaded at its end, and its output."""
    probe = (
        "import sys, runpy; sys.argv = ['forgetmap', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('app.cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        f"print('loaded:', *[m for m in {(*PROBED, 'numpy')!r} if m in sys.modules], file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True
    )
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("loaded:"), done.stdout + done.stderr
    return set(last.split()[1:]), done.stdout + done.stderr


def test_import_pair_and_map_processes_load_only_what_they_use(tmp_path):
    """pyarrow loads pandas (0.2 s) on its first array unless the process keeps it out
    (app.cli.common.keep_pandas_out); `pair` and `map` read through DuckDB's numpy results and
    print plain columns: no Arrow (0.1 s), YAML parser or rich (0.05 s), and `pair` no numpy
    (0.06 s). The commands of bench/harness_import.py, and `map`'s table."""
    from tests.paper_layout import make_items, write_run

    items = {"community|piqa_reasoning_letter:main|0": make_items("piqa", 30, options=2)}
    out = tmp_path / "out"
    for model, style in (("org/base", "base"), ("org/post", "chat")):
        write_run(out, model, "2025-07-01T10-00-00.000001",
                  {t: (its, [i % 2 == 0 for i in range(30)]) for t, its in items.items()},
                  style=style, seed=0)  # fmt: skip
    db = ["--db", str(tmp_path / "fm.duckdb")]
    for args, unwanted in (
        ([*db, "import", "lighteval", str(out / "details" / "org" / "base"), "--model", "base"],
         {"pandas"}),
        ([*db, "import", "lighteval", str(out / "details" / "org" / "post"), "--model", "post"],
         {"pandas"}),
        ([*db, "pair", "add", "base", "post"], {*PROBED, "numpy"}),
        ([*db, "map"], set(PROBED)),
        ([*db, "map", "--format", "json", "--level", "benchmark"], set(PROBED)),
    ):  # fmt: skip
        loaded, output = _loaded(args)
        assert not loaded & unwanted, output
    assert '"f_true"' in output, output


def test_a_test_process_keeps_pandas_importable(tmp_path):
    """Only the executable keeps pandas out: ``main`` run in-process (tests, CliRunner) leaves
    the process as it was, so a later ``import pandas`` (``datasets`` does one) still works."""
    from click.testing import CliRunner

    from app.cli import main
    from app.cli.common import _WithoutPandas

    result = CliRunner().invoke(main, ["--db", str(tmp_path / "fm.duckdb"), "map"])
    assert result.exit_code in (0, 2), result.output
    assert not any(isinstance(f, _WithoutPandas) for f in sys.meta_path)
