"""Imports stream: a tree is read and written batch by batch in one transaction, long answers go
to the answer files beside the database, and nothing of a failed import remains.

Files in the real layouts (app/demo/layouts/paper.py: lighteval 0.10 flat details as the paper's
runs hold them, chains of thought with their token ids; app/demo/layouts/lm_eval.py and
lighteval.py: lighteval 0.11+ nested details and lm-eval samples), imported through the real store
and read back through the real app.
"""

from __future__ import annotations

import hashlib
import html
import json
import random
import re

import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from forgetmap import importers
from forgetmap.core.errors import InputError
from forgetmap.db import ingest as ingest_module
from forgetmap.db import open_store, texts
from forgetmap.db.pairing import add_pair
from forgetmap.demo.layouts.lighteval import write_lighteval_details
from forgetmap.demo.layouts.lm_eval import write_lm_eval_samples
from forgetmap.demo.layouts.paper import make_items, write_run
from forgetmap.importers import import_file
from forgetmap.importers.lighteval import reader as lighteval

BASE_MODEL, POST_MODEL = "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct"
TASKS = [f"community|t{i}_reasoning_letter:main|0" for i in range(6)]
ITEMS = {t: make_items(t, 12) for t in TASKS}


def _tree(out, *, answer_tokens=400, tasks=TASKS):
    rng = random.Random(1)
    base = {t: [rng.random() < 0.6 for _ in ITEMS[t]] for t in tasks}
    post = {t: [(c if rng.random() < 0.7 else not c) for c in base[t]] for t in tasks}
    write_run(
        out,
        BASE_MODEL,
        "2025-07-01T10-00-00.000001",
        {t: (ITEMS[t], base[t]) for t in tasks},
        style="base",
        seed=0,
    )
    write_run(
        out,
        POST_MODEL,
        "2025-07-02T10-00-00.000001",
        {t: (ITEMS[t], post[t]) for t in tasks},
        style="chat",
        seed=0,
        answer_tokens=answer_tokens,
    )
    return base, post


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _answer_files(db):
    folder = texts.folder_of(db)
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.fixture
def small_batches(monkeypatch):
    """A batch a task, a task a file: a small tree then imports in many batches."""
    monkeypatch.setattr(lighteval, "TASK_BYTES", (1, 1))
    monkeypatch.setattr(lighteval, "BATCH_BYTES", 1)
    monkeypatch.setattr(importers, "JOIN_BYTES", 1)  # the store takes them one by one


def test_long_answers_are_read_back_whole_from_the_answer_files(tmp_path, small_batches):
    """Chains of thought of ~1,500 tokens (about 6,000 characters) go to the import's answer
    file; the drill-down page and API, the text search and the export give every character."""
    out = tmp_path / "out"
    base, post = _tree(out, answer_tokens=1500)
    db = tmp_path / "fm.duckdb"
    store = open_store(db)
    batches = []
    original_add = ingest_module.Ingest.add

    def counted(self, table, *args, **kwargs):
        batches.append(table.num_rows)
        return original_add(self, table, *args, **kwargs)

    try:
        ingest_module.Ingest.add = counted
        import_file(store, "lighteval", out)
    finally:
        ingest_module.Ingest.add = original_add
    assert len(batches) == 2 * len(TASKS) and sum(batches) == 2 * 6 * 12
    with store.transaction() as conn:
        pair_id = add_pair(conn, BASE_MODEL, POST_MODEL, label=None, stage=None)[0]
    with store.read() as conn:
        inline, moved = conn.execute(
            "SELECT count(response), count(response_ref) FROM results r JOIN models m "
            "ON m.id = r.model_id WHERE m.name = ?",
            [POST_MODEL],
        ).fetchall()[0]
    assert (inline, moved) == (0, 6 * 12)  # every chain of thought is in the answer file
    [answer_file] = _answer_files(db)
    written = pq.read_table(texts.folder_of(db) / answer_file)
    assert written.num_rows == 6 * 12 and min(len(t) for t in written["text"].to_pylist()) > 3000
    source = {}
    for file in (out / "details" / POST_MODEL).rglob("details_*.parquet"):
        for row in pq.read_table(file, columns=["example", "predictions"]).to_pylist():
            source[row["example"]] = row["predictions"][0]
    store.close()

    from forgetmap.web import create_app

    app = create_app(db_path=db)
    with TestClient(app) as client:
        flipped = client.get(f"/api/pairs/{pair_id}/samples", params={"transition": "10"}).json()
        sample = flipped["samples"][0]
        detail = client.get(
            f"/api/pairs/{pair_id}/sample",
            params={"benchmark": sample["benchmark"], "sample_id": sample["sample_id"]},
        ).json()
        answer = detail["seeds"][0]["post_response"]
        assert answer in source.values() and len(answer) > 3000
        page = client.get(
            f"/pairs/{pair_id}/sample",
            params={"benchmark": sample["benchmark"], "sample_id": sample["sample_id"]},
        ).text
        # every character of the answer is on the page: escaped, the answer marked, the
        # reasoning folded (its start in a <details>, the last characters after it)
        shown = [
            html.unescape(re.sub(r"<[^>]+>", "", block)).removeprefix("\u2026")
            for block in re.findall(r'<pre class="response">(.*?)</pre>', page, re.S)
        ]
        assert any(a + b == answer for a, b in zip(shown, shown[1:], strict=False))
        # a word only the long answers hold finds flips through the answer files
        found = client.get(
            f"/api/pairs/{pair_id}/samples", params={"transition": "10", "q": "eliminate"}
        ).json()
        assert found["total"] == flipped["total"] > 0
        none = client.get(
            f"/api/pairs/{pair_id}/samples", params={"transition": "10", "q": "zebra-crossing"}
        ).json()
        assert none["total"] == 0


def test_a_failure_in_the_last_file_leaves_the_database_byte_identical(tmp_path, small_batches):
    """Every batch before the last file's is written in the import's transaction, then the last
    file is refused: the database file is byte for byte what it was, and no answer file of the
    failed import remains; the fixed tree then imports once."""
    db = tmp_path / "fm.duckdb"
    first = tmp_path / "first"
    _tree(first, tasks=TASKS[:2])
    store = open_store(db)
    import_file(store, "lighteval", first / "details" / POST_MODEL, model="earlier")
    store.close()
    before, files_before = _digest(db), _answer_files(db)
    assert len(files_before) == 1

    out = tmp_path / "out"
    _tree(out)
    last = sorted((out / "details" / POST_MODEL).rglob("details_*.parquet"))[-1]
    table = pq.read_table(last)
    metrics = table["metrics"].to_pylist()
    metrics[-1] = {"extractive_match": 0.5}  # not a 0/1 score: refused with its row
    table = table.set_column(table.schema.get_field_index("metrics"), "metrics", [metrics])
    pq.write_table(table, last)
    store = open_store(db)
    written = []
    original_add = ingest_module.Ingest.add

    def counted(self, batch, *args, **kwargs):
        original_add(self, batch, *args, **kwargs)
        written.append(batch.num_rows)

    try:
        ingest_module.Ingest.add = counted
        with pytest.raises(InputError, match="non-binary"):
            import_file(store, "lighteval", out / "details" / POST_MODEL, model="post")
    finally:
        ingest_module.Ingest.add = original_add
        store.close()
    assert len(written) == len(TASKS) - 1  # the batches before the last file's were written
    assert _digest(db) == before
    assert _answer_files(db) == files_before

    metrics[-1] = {"extractive_match": 1.0}
    pq.write_table(
        table.set_column(table.schema.get_field_index("metrics"), "metrics", [metrics]), last
    )
    store = open_store(db)
    try:
        summary = import_file(store, "lighteval", out / "details" / POST_MODEL, model="post")
        again = import_file(store, "lighteval", out / "details" / POST_MODEL, model="post")
    finally:
        store.close()
    assert summary.rows_added == len(TASKS) * 12 and again.rows_added == 0
    assert len(_answer_files(db)) == 2  # the second import of the same rows wrote none


def test_answer_files_of_a_crash_are_settled_at_the_next_open(tmp_path):
    """A crash between the commit and the rename leaves a committed ``.partial``: the next open
    gives it its name; a file no committed import names (a crash before the commit) is
    deleted."""
    out = tmp_path / "out"
    _tree(out, tasks=TASKS[:1])
    db = tmp_path / "fm.duckdb"
    store = open_store(db)
    import_file(store, "lighteval", out / "details" / POST_MODEL, model="post")
    store.close()
    folder = texts.folder_of(db)
    [name] = _answer_files(db)
    (folder / name).rename(folder / (name + texts.PARTIAL))
    (folder / "00000099-orphan.parquet.partial").write_bytes(b"half")
    store = open_store(db)
    store.close()
    assert _answer_files(db) == [name]


def test_nested_details_and_lm_eval_samples_with_long_answers(tmp_path):
    """lighteval 0.11+ nested details and lm-eval samples whose answers run past
    ``LONG_TEXT_BYTES``: stored in the answer files, read back whole."""
    long_tail = " and so on" * 300
    nested = write_lighteval_details(
        tmp_path / "nested", "lighteval|gsm8k|0", [1, 0, 1, 1], schema="nested", kind="generative"
    )
    table = pq.read_table(nested)
    responses = table["model_response"].to_pylist()
    for r in responses:
        r["text"] = [r["text"][0] + long_tail]
    table = table.set_column(
        table.schema.get_field_index("model_response"), "model_response", [responses]
    )
    pq.write_table(table, nested)
    samples = write_lm_eval_samples(tmp_path / "lm", "gsm8k", [1, 0, 1], kind="generate_until")
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    for line in lines:
        line["resps"] = [[line["resps"][0][0] + long_tail]]
        line["filtered_resps"] = [line["filtered_resps"][0]]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = tmp_path / "fm.duckdb"
    store = open_store(db)
    try:
        import_file(store, "lighteval", nested, model="nested")
        import_file(store, "lm-eval", samples.parent, model="lm")
        with store.read() as conn:
            rows = conn.execute(
                "SELECT m.name, r.response, r.response_ref FROM results r JOIN models m "
                "ON m.id = r.model_id ORDER BY m.name, r.sample_id"
            ).fetchall()
            stored = texts.read_texts(conn, [ref for _, _, ref in rows])
    finally:
        store.close()
    assert [name for name, _, _ in rows] == ["lm"] * 3 + ["nested"] * 4
    assert all(response is None and ref is not None for _, response, ref in rows)
    assert all(stored[ref].endswith(long_tail) for _, _, ref in rows)
    assert len(_answer_files(db)) == 2


@pytest.mark.parametrize("named", [True, False], ids=["0.4.7 lines", "0.4.5 lines"])
def test_a_large_lm_eval_samples_file_streams_in_blocks_with_the_same_rows(
    tmp_path, monkeypatch, named
):
    """A samples file past ``STREAM_BYTES`` is read in blocks, twice (each line's filter first:
    in 0.4.3-0.4.6 the n-th line of a document is its n-th filter): the same rows as reading it
    whole, the chosen filter said the same way, two filters and long answers included."""
    from forgetmap.demo.layouts.lm_eval import write_lm_eval_results
    from forgetmap.importers.lm_eval import reader as lm_eval
    from forgetmap.importers.lm_eval.reader import read_lm_eval

    scores = {
        "strict-match": [1, 0, 0, 1, 0, 1, 1, 0] * 5,
        "flexible-extract": [1, 1, 0, 1, 1, 1, 1, 0] * 5,
    }
    folder = tmp_path / "lm"
    samples = write_lm_eval_samples(
        folder, "gsm8k", scores, kind="generate_until", filters_named=named
    )
    if not named:
        write_lm_eval_results(folder, {"gsm8k": ["strict-match", "flexible-extract"]})
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    for i, line in enumerate(lines):
        line["resps"] = [[line["resps"][0][0] + f" step {i} and so on" * 40]]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))

    told = []
    whole = read_lm_eval(folder, model="m", on_filter=lambda *a: told.append(a))
    monkeypatch.setattr(lm_eval, "STREAM_BYTES", 1)
    monkeypatch.setattr(lm_eval, "_BLOCK_SIZE", 16 << 10)  # ~16 lines a block
    blocks = []
    original = lm_eval._arrow_columns

    def counted(table, *args):
        blocks.append(table.num_rows)
        return original(table, *args)

    monkeypatch.setattr(lm_eval, "_arrow_columns", counted)
    told_streamed = []
    streamed = read_lm_eval(folder, model="m", on_filter=lambda *a: told_streamed.append(a))
    assert len(blocks) > 4  # read in blocks: checked on every line, then the chosen ones
    assert streamed.num_rows == whole.num_rows == 40
    assert streamed.to_pylist() == whole.to_pylist()
    assert told_streamed == told and told[0][1] == "flexible-extract"
    assert sorted(streamed["correct"].to_pylist()) == sorted(
        bool(v) for v in scores["flexible-extract"]
    )
