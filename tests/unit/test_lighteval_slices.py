"""A large lighteval details file is read a slice of rows at a time (forgetmap.importers.lighteval
.slices) and gives exactly the rows the whole file gives: the same sample ids (a question asked
twice marked as such whichever slices hold it), questions, prompt templates and answers; and the
store checks its keys across batches as it does within one."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from forgetmap.db.store import open_store
from forgetmap.demo.layouts.lighteval import write_lighteval_details
from forgetmap.demo.layouts.paper import make_items, write_run
from forgetmap.importers import InputError, import_file
from forgetmap.importers.lighteval import slices
from forgetmap.importers.lighteval.files import layout_of
from forgetmap.importers.lighteval.reader import read_lighteval

TASK = "community|mmlu_reasoning_letter:main|0"


def _sliced(monkeypatch, rows_per_slice_bytes: int = 1) -> None:
    """Every file is read in slices (of one row by default)."""
    monkeypatch.setattr(slices, "CANDIDATE_BYTES", 0)
    monkeypatch.setattr(slices, "SLICED_FILE_BYTES", 0)
    monkeypatch.setattr(slices, "SLICE_BYTES", rows_per_slice_bytes)


def _paper_tree(out: Path, style: str, tokens: int = 0) -> Path:
    """Three seeds of one task, the first question asked twice (the same text, options, gold)."""
    items = make_items("mmlu", 40)
    items = [*items, items[0]]
    for seed in range(3):
        correct = [(i + seed) % 3 == 0 for i in range(len(items))]
        run = f"2025-07-01T10-0{seed}-00.000001"
        outcomes = {TASK: (items, correct)}
        write_run(
            out,
            "org/model",
            run,
            outcomes,
            style=style,
            seed=seed,
            shuffle_seed=seed,
            answer_tokens=tokens,
        )
    return out


def _nested_tree(out: Path, kind: str, with_ids: bool) -> Path:
    folder = out / "details" / "org" / "model" / "2025-07-01T10-00-00.000001"
    no_answer = (3, 4) if kind == "generative" else ()
    correct = [i % 2 for i in range(37)]
    write_lighteval_details(
        folder,
        "leaderboard|mmlu:anatomy|5",
        correct,
        kind=kind,
        with_ids=with_ids,
        shuffle_seed=1,
        no_answer=no_answer,
    )
    return out / "details" / "org" / "model"


def _bytes_of_rows(files: list[Path], rows: int) -> int:
    """The ``SLICE_BYTES`` that reads the densest of the files ``rows`` rows a slice."""
    densest = 0.0
    for file in files:
        parquet = pq.ParquetFile(file)
        layout = layout_of(parquet, file)
        decoded = slices.decoded_bytes(parquet.metadata, layout.columns)
        densest = max(densest, decoded / parquet.metadata.num_rows)
    return max(1, int(rows * densest))


def _all_rows(table: pa.Table) -> list[tuple]:
    return sorted(tuple(sorted(row.items(), key=str)) for row in table.to_pylist())


@pytest.mark.parametrize(
    "write",
    [
        lambda out: _paper_tree(out, "base"),  # a few-shot template around each question
        lambda out: _paper_tree(out, "chat", tokens=60),  # chains of thought in a chat template
        lambda out: _nested_tree(out, "multiple_choice", with_ids=True),  # log-likelihoods
        lambda out: _nested_tree(out, "generative", with_ids=False),  # no answer in two rows
    ],
    ids=["flat-base", "flat-chat", "nested-loglik", "nested-generative"],
)
@pytest.mark.parametrize("rows_per_slice", [1, 7])
def test_a_file_read_in_slices_gives_the_rows_of_the_whole_file(
    tmp_path, monkeypatch, write, rows_per_slice
):
    tree = write(tmp_path / "tree")
    whole = read_lighteval(tree, model="m")
    files = sorted(tree.rglob("details_*.parquet"))
    _sliced(monkeypatch, _bytes_of_rows(files, rows_per_slice))
    planned = [slices.sliced_file(n, f, f.stat().st_size) for n, f in enumerate(files)]
    assert all(p is not None and p.slices >= 5 for p in planned)
    assert rows_per_slice - 1 <= min(p.rows_per_slice for p in planned) <= rows_per_slice
    by_slices = read_lighteval(tree, model="m")
    assert _all_rows(by_slices) == _all_rows(whole)
    ids = by_slices["sample_id"].to_pylist()
    if "base" in str(files[0]) or len(files) == 3:
        # the question asked twice is told apart in every seed, wherever its slices cut
        assert sum("~ambiguous" in i for i in ids) == 2 * len(files)


def test_a_large_file_whose_keys_are_stored_as_text_is_read_whole(tmp_path, monkeypatch):
    folder = tmp_path / "details" / "org" / "model" / "2025-07-01T10-00-00.000001"
    correct = [1, 0, 1, 1, 0, 0, 1]
    write_lighteval_details(folder, "leaderboard|mmlu:anatomy|5", correct, stringify=True)
    whole = read_lighteval(tmp_path, model="m")
    _sliced(monkeypatch, rows_per_slice_bytes=1)
    file = next(folder.glob("*.parquet"))
    sliced = slices.sliced_file(0, file, file.stat().st_size)
    assert sliced is not None and sliced.take() is None and sliced.whole
    assert _all_rows(read_lighteval(tmp_path, model="m")) == _all_rows(whole)


def _with_ids(table: pa.Table, ids: list[str]) -> pa.Table:
    """A nested details table with ``doc.id`` replaced."""
    doc = table["doc"].combine_chunks()
    fields = {doc.type.field(i).name: doc.field(i) for i in range(doc.type.num_fields)}
    fields["id"] = pa.array(ids)
    column = pa.StructArray.from_arrays(list(fields.values()), list(fields))
    return table.set_column(table.schema.get_field_index("doc"), "doc", column)


def test_keys_repeated_across_slices_are_refused_and_nothing_is_stored(tmp_path, monkeypatch):
    folder = tmp_path / "details" / "org" / "model" / "2025-07-01T10-00-00.000001"
    path = write_lighteval_details(folder, "leaderboard|mmlu:anatomy|5", [1, 0] * 20)
    table = pq.read_table(path)
    ids = [f"d{i % 30}" for i in range(len(table))]  # rows 30.. repeat ids of rows 0..
    pq.write_table(_with_ids(table, ids), path)
    _sliced(monkeypatch)
    store = open_store(tmp_path / "fm.duckdb")
    try:
        with pytest.raises(InputError, match="duplicate"):
            import_file(store, "lighteval", tmp_path, model="m")
        with store.read() as conn:
            assert conn.execute("SELECT count(*) FROM results").fetchall()[0][0] == 0
        # with distinct ids the same slices import, and again adds nothing
        pq.write_table(_with_ids(table, [f"d{i}" for i in range(len(table))]), path)
        first = import_file(store, "lighteval", tmp_path, model="m")
        again = import_file(store, "lighteval", tmp_path, model="m")
        assert (first.rows_added, again.rows_added, again.rows_unchanged) == (40, 0, 40)
    finally:
        store.close()
