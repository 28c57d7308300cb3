"""Every quick command in the process a user runs (issue 55, point 5): `import` (each format read
from a file or folder), `pair` (add, list, suggest) and `map` (each format and level) run as
the `forgetmap` executable, which keeps pandas out, sets Arrow's and OpenBLAS's pools, freezes
the collector and ends through ``quick_exit`` (``forgetmap.cli.LEAN_COMMANDS``), and in-process
(``main`` under click's runner, as the rest of the suite drives it), each on a database of its
own. Both must answer the same, exit the same and leave the same rows: the machinery the
executable adds changes nothing but time. (`import hub` runs as the executable in
tests/integration/test_hub_import.py.)"""

from __future__ import annotations

import datetime
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from forgetmap.cli import main
from forgetmap.db import open_store
from forgetmap.demo.layouts.lm_eval import write_lm_eval_samples
from forgetmap.demo.layouts.paper import make_items, write_run

from tests.support import eee_files
from tests.support.services import require_module
from tests.support.store_contents import table_contents
from tests.support.worker_env import FORGETMAP

TIME = re.compile(r"\b\d+(\.\d+)? ?(s|ms)\b")
"""A duration in a command's output: the one thing two runs of a command may say differently."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Two models' results in each format the quick commands import from files."""
    root = tmp_path_factory.mktemp("runs")
    (root / "rows.csv").write_text(
        "model,benchmark,sample_id,correct\n"
        + "".join(f"t-base,mmlu:anatomy,{i},{int(i % 3 != 0)}\n" for i in range(12))
        + "".join(f"t-post,mmlu:anatomy,{i},{int(i % 2 == 0)}\n" for i in range(12))
    )
    items = {"community|piqa_reasoning_letter:main|0": make_items("piqa", 20, options=2)}
    for model, style, shift in (("org/base", "base", 0), ("org/post", "chat", 1)):
        write_run(
            root / "lighteval",
            model,
            "2025-07-01T10-00-00.000001",
            {t: (its, [(i + shift) % 3 != 0 for i in range(20)]) for t, its in items.items()},
            style=style,
            seed=0,
        )
    write_lm_eval_samples(root / "lm" / "base", "mmlu_anatomy", [1, 0, 1, 1, 0, 1])
    write_lm_eval_samples(root / "lm" / "post", "mmlu_anatomy", [0, 0, 1, 1, 1, 0])
    eee_files.write_pair(root / "eee")
    require_module("inspect_ai", "inspect_ai writes the logs `import inspect` reads")
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    from tests.support.inspect_logs import run_eval

    sums = [Sample(id=str(i), input=f"What is {i}+{i}?", target=str(2 * i)) for i in range(5)]
    for model, right in (("i-base", {0, 1, 2, 3}), ("i-post", {0, 2, 4})):
        answers = {
            s.input: [f"The answer is {s.target}" if i in right else "no idea"]
            for i, s in enumerate(sums)
        }
        task = Task(name="sums", dataset=MemoryDataset(sums), solver=generate(), scorer=match())
        run_eval(task, model, answers, root / "inspect" / model, epochs=1)
    return root


def _commands(runs: Path) -> list[list[str]]:
    return [
        ["import", "table", str(runs / "rows.csv")],
        ["import", "table", str(runs / "rows.csv")],  # again: nothing new
        ["import", "table", str(runs / "none.csv")],  # refused: exit 2, one line
        ["import", "lighteval", str(runs / "lighteval" / "details" / "org" / "base")],
        ["import", "lighteval", str(runs / "lighteval" / "details" / "org" / "post")],
        ["import", "lm-eval", str(runs / "lm" / "base"), "--model", "l-base"],
        ["import", "lm-eval", str(runs / "lm" / "post"), "--model", "l-post"],
        ["import", "eee", str(runs / "eee")],
        ["import", "inspect", str(runs / "inspect" / "i-base")],
        ["import", "inspect", str(runs / "inspect" / "i-post")],
        ["pair", "add", "t-base", "t-post"],
        ["pair", "add", "org/base", "org/post"],
        ["pair", "add", "l-base", "l-post"],
        ["pair", "add", "mockllm/i-base", "mockllm/i-post"],
        ["pair", "add", "t-base", "nobody"],  # refused: no such model
        ["pair", "suggest", "--format", "json"],
        ["pair", "suggest", "--accept", "all"],
        ["pair", "list"],
        ["map"],
        ["map", "--aggregate", "micro", "--format", "csv"],
        ["map", "--level", "benchmark", "--format", "json"],
        ["map", "--level", "benchmark", "--exclude", "no_answer"],
    ]


def _said(text: str) -> str:
    return TIME.sub("<time>", text)


UUID = re.compile(r"[0-9a-f]{32}")
"""The random part of an answer file's name (forgetmap.db.texts): two runs draw different ones."""


def _value(v):
    if isinstance(v, datetime.date | datetime.time):
        return None
    return UUID.sub("<uuid>", v) if isinstance(v, str) else v


def _rows(db: Path) -> dict[str, list[tuple]]:
    """Every row of every table, with what two runs write differently left out: the times of
    day, and the random part of answer files' names."""
    store = open_store(db)
    try:
        with store.read() as conn:
            contents = table_contents(conn)
    finally:
        store.close()
    return {
        table: [tuple(_value(v) for v in row) for row in rows] for table, rows in contents.items()
    }


def test_each_quick_command_answers_the_same_in_its_own_process(runs, tmp_path):
    own_db, here_db = tmp_path / "own.duckdb", tmp_path / "here.duckdb"
    runner = CliRunner()
    for args in _commands(runs):
        own = subprocess.run(
            [FORGETMAP, "--db", str(own_db), *args], capture_output=True, text=True, timeout=120
        )
        here = runner.invoke(main, ["--db", str(here_db), *args])
        said = f"forgetmap {' '.join(args)}:\n{own.stdout}{own.stderr}\n---\n{here.output}"
        assert own.returncode == here.exit_code, said
        assert _said(own.stdout) == _said(here.stdout), said
        assert _said(own.stderr) == _said(here.stderr), said
        if args[:2] == ["import", "table"] and "none.csv" in args[2]:
            assert own.returncode == 2 and "none.csv: no such file" in own.stderr, said
        elif args[-1] == "nobody":
            assert own.returncode != 0, said
        else:
            assert own.returncode == 0, said
    assert _rows(own_db) == _rows(here_db)
    assert len(_rows(own_db)["pairs"]) >= 5  # four added, the eee pair accepted from suggest
