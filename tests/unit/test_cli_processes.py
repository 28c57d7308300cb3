"""The quick commands' processes load only what they use: no pandas, cloudpickle or dateutil in
`import`, `pair` and `map` (pyarrow would load them), no Arrow, YAML parser or rich in `pair` and
`map` (`map` on a small database answers in under 0.5 s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBED = ("pandas", "cloudpickle", "dateutil", "pyarrow", "yaml", "rich")


def _loaded(args: list[str]) -> tuple[set[str], str]:
    """Run ``forgetmap ARGS`` as the executable does (``python -m forgetmap.cli``); which of
    ``PROBED`` the process had loaded at its end (told by an atexit handler: these commands end
    through ``quick_exit``, which runs them), and its output."""
    probe = (
        "import atexit, sys, runpy; sys.argv = ['forgetmap', *sys.argv[1:]]\n"
        "atexit.register(lambda: print('loaded:', *[m for m in "
        f"{(*PROBED, 'numpy')!r} if m in sys.modules], file=sys.stderr))\n"
        "runpy.run_module('forgetmap.cli', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True
    )
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("loaded:"), done.stdout + done.stderr
    return set(last.split()[1:]), done.stdout + done.stderr


def test_import_pair_and_map_processes_load_only_what_they_use(tmp_path):
    """pyarrow loads pandas (0.2 s) and dateutil (11 ms) on its first array and cloudpickle as it
    loads (10-15 ms) unless the process keeps them out (forgetmap.cli.common.block_unused_imports);
    `pair` and `map` read through DuckDB's numpy results and print plain columns: no Arrow (0.1 s),
    YAML parser or rich (0.05 s), and `pair` no numpy (0.06 s). The commands of
    bench/harness_import.py, and `map`'s table."""
    from forgetmap.demo.layouts.paper import make_items, write_run

    items = {"community|piqa_reasoning_letter:main|0": make_items("piqa", 30, options=2)}
    out = tmp_path / "out"
    for model, style in (("org/base", "base"), ("org/post", "chat")):
        write_run(
            out,
            model,
            "2025-07-01T10-00-00.000001",
            {t: (its, [i % 2 == 0 for i in range(30)]) for t, its in items.items()},
            style=style,
            seed=0,
        )
    db = ["--db", str(tmp_path / "fm.duckdb")]
    for args, unwanted in (
        (
            [*db, "import", "lighteval", str(out / "details" / "org" / "base"), "--model", "base"],
            {"pandas", "cloudpickle", "dateutil"},
        ),
        (
            [*db, "import", "lighteval", str(out / "details" / "org" / "post"), "--model", "post"],
            {"pandas", "cloudpickle", "dateutil"},
        ),
        ([*db, "pair", "add", "base", "post"], {*PROBED, "numpy"}),
        ([*db, "map"], set(PROBED)),
        ([*db, "map", "--format", "json", "--level", "benchmark"], set(PROBED)),
    ):
        loaded, output = _loaded(args)
        assert not loaded & unwanted, output
    assert '"f_true"' in output, output


def test_a_test_process_keeps_pandas_importable(tmp_path):
    """Only the executable keeps pandas out: ``main`` run in-process (tests, CliRunner) leaves
    the process as it was, so a later ``import pandas`` (``datasets`` does one) still works."""
    from click.testing import CliRunner
    from forgetmap.cli import main
    from forgetmap.cli.common import _ImportBlocker

    result = CliRunner().invoke(main, ["--db", str(tmp_path / "fm.duckdb"), "map"])
    assert result.exit_code in (0, 2), result.output
    assert not any(isinstance(f, _ImportBlocker) for f in sys.meta_path)


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)


def test_quick_exit_ends_as_sys_exit_would():
    """``quick_exit`` skips the interpreter's teardown only: atexit handlers run, buffered output
    (a pipe's, not a terminal's) is written whole, and the exit status is ``sys.exit``'s: the
    code, 0 for None, 1 with the message on stderr for a string."""
    lines = 20_000  # far more than one pipe buffer
    done = _run_python(
        "import atexit\nfrom forgetmap.cli import quick_exit\n"
        "atexit.register(lambda: print('handler ran'))\n"
        f"for i in range({lines}): print(i)\n"
        "quick_exit(3)"
    )
    out = done.stdout.splitlines()
    assert done.returncode == 3
    assert out[:-1] == [str(i) for i in range(lines)] and out[-1] == "handler ran"
    assert _run_python("from forgetmap.cli import quick_exit; quick_exit(None)").returncode == 0
    refused = _run_python("from forgetmap.cli import quick_exit; quick_exit('no such model')")
    assert (refused.returncode, refused.stderr.strip()) == (1, "no such model")


def test_lean_commands_keep_their_exit_status_and_their_database(tmp_path):
    """`import`, `pair` and `map` end through ``quick_exit``: a refused import still exits 2 with
    its one-line error (``CliError``), and what an import wrote is in the file for the next
    process."""
    db = tmp_path / "fm.duckdb"
    cli = [sys.executable, "-m", "forgetmap.cli", "--db", str(db)]
    table = tmp_path / "rows.csv"
    table.write_text("model,benchmark,sample_id,correct\nm,mmlu:anatomy,1,1\nm,mmlu:anatomy,2,0\n")
    done = subprocess.run(
        [*cli, "import", "table", str(table)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    missing = subprocess.run(
        [*cli, "import", "table", str(tmp_path / "none.csv")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "none.csv: no such file" in missing.stderr, missing.stderr
    again = subprocess.run(
        [*cli, "import", "table", str(table)], cwd=ROOT, capture_output=True, text=True
    )
    assert "imported 0 new rows (2 already stored)" in again.stdout, again.stdout + again.stderr


def _settings_at_exit(args: list[str], env: dict[str, str]) -> dict[str, str]:
    """``forgetmap ARGS`` in its own process: the native-pool variables, Arrow's default pool
    and whether the collector had frozen the loaded objects, as the process had them at its end."""
    probe = (
        "import atexit, os, sys, runpy; sys.argv = ['forgetmap', *sys.argv[1:]]\n"
        "def told():\n"
        "    pool = sys.modules['pyarrow'].default_memory_pool().backend_name "
        "if 'pyarrow' in sys.modules else '-'\n"
        "    import gc\n"
        "    print('settings:', os.environ.get('ARROW_DEFAULT_MEMORY_POOL', '-'),\n"
        "          os.environ.get('OPENBLAS_NUM_THREADS', '-'), pool, gc.get_freeze_count() > 0,\n"
        "          file=sys.stderr)\n"
        "atexit.register(told)\n"
        "runpy.run_module('forgetmap.cli', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True, env=env
    )
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("settings:"), done.stdout + done.stderr
    arrow, blas, pool, frozen = last.split()[1:]
    return {"arrow": arrow, "blas": blas, "pool": pool, "frozen": frozen}


def test_lean_commands_set_native_pools_unless_the_user_did(tmp_path):
    """`import` runs with Arrow allocating from jemalloc from the start and OpenBLAS without its
    thread pool (``lean_native_settings``), and freezes what it loaded out of the collector's
    walks; a user's own value of either variable is kept, and a command outside
    ``LEAN_COMMANDS`` changes none of it."""
    import os

    table = tmp_path / "rows.csv"
    table.write_text("model,benchmark,sample_id,correct\nm,mmlu:anatomy,1,1\nm,mmlu:anatomy,2,0\n")
    plain = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ARROW_DEFAULT_MEMORY_POOL", "OPENBLAS_NUM_THREADS")
    }
    db = ["--db", str(tmp_path / "fm.duckdb")]
    assert _settings_at_exit([*db, "import", "table", str(table)], plain) == {
        "arrow": "jemalloc",
        "blas": "1",
        "pool": "jemalloc",
        "frozen": "True",
    }
    own = {**plain, "ARROW_DEFAULT_MEMORY_POOL": "system", "OPENBLAS_NUM_THREADS": "2"}
    kept = _settings_at_exit([*db, "import", "table", str(table)], own)
    assert (kept["arrow"], kept["blas"]) == ("system", "2")
    other = _settings_at_exit([*db, "model", "--help"], plain)
    assert (other["arrow"], other["blas"], other["frozen"]) == ("-", "-", "False")
