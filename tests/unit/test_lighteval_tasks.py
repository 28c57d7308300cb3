"""The lighteval reader works in tasks of whole (model, task) groups on two threads: each task
reads, keys and orders its files' rows, whatever path each file takes (Arrow kernels or the row
reader), so the rows of one sample come side by side in seed order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from forgetmap.demo.layouts.paper import make_items, write_run
from forgetmap.importers.lighteval import files as lighteval_files
from forgetmap.importers.lighteval import reader as lighteval
from forgetmap.importers.lighteval import uniform
from forgetmap.importers.lighteval.reader import _tasks, read_lighteval

TASKS = (
    "community|piqa_reasoning_letter:main|0",
    "community|arc_reasoning_custom_prompt_letter:easy|0",
)


def _tree(out: Path, n: int = 12) -> Path:
    """One model's details folder: two tasks x three seeds (one run per seed, shuffled rows)."""
    items = {t: make_items(t, n, options=2) for t in TASKS}
    for seed in range(3):
        write_run(
            out,
            "org/base",
            f"2025-07-01T10-0{seed}-00.000001",
            {t: (its, [(i + seed) % 3 == 0 for i in range(n)]) for t, its in items.items()},
            style="base",
            seed=seed,
            shuffle_seed=seed,
        )
    return out / "details" / "org" / "base"


def _stringify(path: Path) -> None:
    """Rewrite a details file with every cell as ``str(value)`` (lighteval's fallback): only the
    row reader reads it."""
    rows = pq.read_table(path).to_pylist()
    pq.write_table(pa.Table.from_pylist([{k: str(v) for k, v in r.items()} for r in rows]), path)


def _rows(table: pa.Table) -> list[tuple]:
    return [
        (r["benchmark"], r["sample_id"], r["seed"], r["correct"], r["question"], r["gold"])
        for r in table.to_pylist()
    ]


def test_a_task_mixing_both_readers_keeps_each_sample_together_in_seed_order(tmp_path):
    folder = _tree(tmp_path / "kernels")
    mixed = _tree(tmp_path / "mixed")
    slow = sorted(mixed.rglob(f"details_{TASKS[0]}_*10-01-*.parquet"))
    assert len(slow) == 1
    _stringify(slow[0])  # seed 1 of the first task: row by row, seeds 0 and 2 by kernels
    with pytest.raises(uniform.SlowPath):
        table, nested = lighteval_files.read_columns(slow[0])
        uniform.uniform_table(table, nested, None)
    by_kernels = read_lighteval(folder, model="base")
    by_both = read_lighteval(mixed, model="base")
    assert sorted(_rows(by_both)) == sorted(_rows(by_kernels))
    for table in (by_kernels, by_both):
        rows = _rows(table)
        # each (benchmark, sample) is one run of rows, seeds 0, 1, 2 in that order
        runs = [k for i, k in enumerate(r[:2] for r in rows) if i == 0 or rows[i - 1][:2] != k]
        assert len(runs) == len(set(runs)) == len(TASKS) * 12
        assert [r[2] for r in rows] == [0, 1, 2] * (len(rows) // 3)


def test_tasks_hold_whole_groups_in_file_order_each_a_quarter_of_what_is_left(
    tmp_path, monkeypatch
):
    def files_of(sizes):
        paths = []
        for i, size in enumerate(sizes):
            paths.append(tmp_path / f"f{len(sizes)}-{i}.parquet")
            paths[-1].write_bytes(b"x" * size)
        return paths

    files = files_of([10, 10, 10, 5, 5, 5, 7])  # 52 bytes
    groups = np.array([0, 0, 0, 1, 1, 1, 2])

    def cut(bounds, files=files, groups=groups):
        monkeypatch.setattr(lighteval, "TASK_BYTES", bounds)
        return [[n for n, _ in t] for t in _tasks(files, groups)]

    assert cut((1, 1)) == [[0, 1, 2], [3, 4, 5], [6]]  # every group its own task
    # a task ends at the first group boundary past a quarter of what is left (13, then 5)
    assert cut((1, 10**9)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert cut((40, 10**9)) == [[0, 1, 2, 3, 4, 5], [6]]  # at least 40
    assert cut((10**9, 10**9)) == [list(range(7))]
    # eight groups of 10 bytes: the tasks shrink as the bytes left do (budgets 20, 15, 10, 7,
    # 5, 2), so that the last ones are small and both threads finish together
    assert cut((1, 10**9), files_of([10] * 8), np.arange(8)) == [[0, 1], [2, 3], [4], [5], [6], [7]]
    assert cut((1, 10), files_of([10] * 8), np.arange(8)) == [
        [0],
        [1],
        [2],
        [3],
        [4],
        [5],
        [6],
        [7],
    ]
    assert _tasks([], groups[:0]) == []


def _with_metrics(table: pa.Table, acc: list, extractive: list) -> pa.Table:
    metrics = pa.StructArray.from_arrays(
        [pa.array(acc, pa.float64()), pa.array(extractive, pa.float64())],
        names=["acc", "extractive_match"],
    )
    return table.set_column(table.schema.get_field_index("metrics"), "metrics", metrics)


def test_the_files_of_a_task_read_together_as_each_reads_alone(tmp_path):
    """``_uniform`` runs once on a task's files of one layout; each file gets what it gets
    alone, also where the files cannot share a choice (a file scored by another metric)."""
    files = sorted(_tree(tmp_path).rglob(f"details_{TASKS[0]}_*.parquet"))
    read = [lighteval_files.read_columns(f) for f in files]
    assert len(read) == 3 and all(not nested for _, nested in read)
    n = read[0][0].num_rows

    def alone(tables):
        return [uniform.uniform_table(t, False, None).to_pylist() for t in tables]

    together = uniform.uniform_rows(read, None)
    assert [t.to_pylist() for t in together] == alone([t for t, _ in read])
    # one call: the files' rows are slices of one array
    assert len({t["correct"].chunks[0].buffers()[1].address for t in together}) == 1

    # the first file has no "acc" (the first default metric) and is scored by
    # "extractive_match"; the others have both, different: each file chooses its own
    zeros, ones = [0.0] * n, [1.0] * n
    mixed = [_with_metrics(read[0][0], [None] * n, ones)] + [
        _with_metrics(t, zeros, ones) for t, _ in read[1:]
    ]
    got = uniform.uniform_rows([(t, False) for t in mixed], None)
    assert [t.to_pylist() for t in got] == alone(mixed)
    assert [set(t["correct"].to_pylist()) for t in got] == [{True}, {False}, {False}]

    # a file of another layout is read alone, the others together
    other = read[2][0].drop_columns(["full_prompt"])
    got = uniform.uniform_rows([read[0], read[1], (other, False)], None)
    assert [t.to_pylist() for t in got] == alone([read[0][0], read[1][0], other])
