"""The paper's own lighteval runs, as they come: a whole output tree per model in one command.

Files are written exactly as lighteval 0.10 writes them (app/demo/layouts/paper.py): flat details
with the paper's task names, rows shuffled per file, one run per seed with the seed in its results
JSON; the base model prompted few-shot, the post model through a chain-of-thought chat template.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from forgetmap.demo.layouts.paper import Item, make_items, write_run

NAVIGATE = "community|bbh_reasoning_letter:navigate|0"
ANATOMY = "community|mmlu_reasoning_letter:anatomy|0"
DYCK = "community|bbh_reasoning_letter:dyck_languages|0"
SEEDS = (0, 1, 2)
BASE_MODEL, POST_MODEL = "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct"

# per benchmark: base correctness (the same every seed) and post correctness per seed
BASE = {NAVIGATE: [1, 1, 0, 0, 1, 0], ANATOMY: [1, 1, 1, 0, 0, 1, 1, 0], DYCK: [1, 0, 1]}
POST = {
    NAVIGATE: {0: [1, 0, 1, 0, 1, 1], 1: [0, 0, 1, 0, 1, 0], 2: [1, 1, 0, 0, 1, 0]},
    ANATOMY: {
        0: [1, 0, 1, 0, 1, 1, 1, 1],
        1: [1, 1, 1, 0, 0, 1, 0, 0],
        2: [0, 0, 0, 0, 1, 1, 1, 1],
    },
    DYCK: {0: [0, 0, 0], 1: [0, 0, 0], 2: [0, 0, 0]},
}
ITEMS = {
    NAVIGATE: make_items("navigate", 6),
    ANATOMY: make_items("anatomy", 8),
    DYCK: make_items("dyck", 3),
}


def _write_tree(out: Path, *, base_seeds=SEEDS, post_seeds=SEEDS, base_style="base") -> None:
    for s in base_seeds:
        tasks = {t: (ITEMS[t], BASE[t]) for t in ITEMS}
        write_run(
            out,
            BASE_MODEL,
            f"2025-07-01T10-0{s}-00.000001",
            tasks,
            style=base_style,
            seed=s,
            shuffle_seed=10 + s,
        )
    for s in post_seeds:
        tasks = {t: (ITEMS[t], POST[t][s]) for t in ITEMS}
        write_run(
            out,
            POST_MODEL,
            f"2025-07-02T10-0{s}-00.000001",
            tasks,
            style="chat",
            seed=s,
            shuffle_seed=20 + s,
        )


def _expected(base: list[int], post: list[int], k: int) -> dict:
    """The metric by hand: counts, F, BT, chance term, F_true, BT_true."""
    n = len(base)
    n10 = sum(1 for b, p in zip(base, post, strict=True) if b and not p)
    n01 = sum(1 for b, p in zip(base, post, strict=True) if p and not b)
    acc_pre, acc_post = sum(base) / n, sum(post) / n
    chance = (1 - acc_pre) * (1 - acc_post) / (k - 1)
    return {
        "n": n,
        "n_10": n10,
        "n_01": n01,
        "f_true": max(n10 / n - chance, 0.0),
        "bt_true": max(n01 / n - chance, 0.0),
    }


@pytest.mark.parametrize("base_style", ["base", "loglik"])
def test_fewshot_base_and_chat_post_pair_fully(cli, tmp_path, base_style):
    """The base model answering in words (generative letters) or scored by log-likelihood (a
    score per option, the options written " A".." D"): its samples pair with the chat model's."""
    out = tmp_path / "out"
    _write_tree(out, base_style=base_style)
    # the model's details folder, holding one run per seed: one command each
    base = cli("import", "lighteval", out / "details" / BASE_MODEL, "--model", "base")
    assert "imported 51 new rows" in base.stdout  # (6 + 8 + 3) x 3 seeds
    cli("import", "lighteval", out / "details" / POST_MODEL, "--model", "post")
    report = cli("pair", "add", "base", "post").stdout
    assert (
        "paired 51 samples on 3 of 3 benchmarks; 0 only in base, 0 only in post, 0 ambiguous"
        in report
    )
    assert "question key" in report

    records = cli.json("map", "--level", "benchmark", "--format", "json")
    got = {(r["benchmark"], r["seed"]): r for r in records}
    names = {NAVIGATE: "bbh:navigate", ANATOMY: "mmlu:anatomy", DYCK: "bbh:dyck_languages"}
    for task, name in names.items():
        for s in SEEDS:
            want = _expected(BASE[task], POST[task][s], 4)
            rec = got[(name, s)]
            assert rec["num_choices"] == 4
            assert {k: rec[k] for k in ("n", "n_10", "n_01")} == {
                k: want[k] for k in ("n", "n_10", "n_01")
            }
            assert rec["f_true"] == pytest.approx(want["f_true"], abs=1e-12)
            assert rec["bt_true"] == pytest.approx(want["bt_true"], abs=1e-12)
    # one written out: navigate, seed 0: 1->0 at item 1, 0->1 at items 2 and 5;
    # acc .5 -> .6667, c = .5 * .3333 / 3 = .05556, F_true = 1/6 - c, BT_true = 2/6 - c
    assert got[("bbh:navigate", 0)]["f_true"] == pytest.approx(1 / 6 - 0.5 / 3 / 3)
    assert got[("bbh:navigate", 0)]["bt_true"] == pytest.approx(2 / 6 - 0.5 / 3 / 3)
    assert got[("bbh:dyck_languages", 0)]["category"] == "Not scored"

    cats = {r["category"]: r for r in cli.json("map", "--format", "json")}
    assert set(cats) == {"Logic", "Science/Tech", "Not scored", "Total"}
    # Total: per seed the mean of Logic and Science/Tech (dyck_languages is not scored), then
    # the mean over seeds
    per_seed = [
        (
            _expected(BASE[NAVIGATE], POST[NAVIGATE][s], 4)["f_true"]
            + _expected(BASE[ANATOMY], POST[ANATOMY][s], 4)["f_true"]
        )
        / 2
        for s in SEEDS
    ]
    assert cats["Total"]["f_true"] == pytest.approx(sum(per_seed) / 3, abs=1e-12)
    assert cats["Total"]["n_benchmarks"] == 2
    assert cats["Total"]["seeds"] == 3


def test_output_folder_with_one_model_imports_in_one_command(cli, tmp_path):
    out = tmp_path / "out"
    _write_tree(out, post_seeds=())
    result = cli("import", "lighteval", out, "--model", "base")
    assert "imported 51 new rows" in result.stdout


def test_output_folder_of_two_models_imports_both_under_their_own_names(cli, tmp_path):
    """Without --model, an output folder's models are stored under the names lighteval gave
    them (OUT/details/<org>/<model>/): one command for both, the same map as one per model."""
    out = tmp_path / "out"
    _write_tree(out)
    result = cli("import", "lighteval", out)
    assert "imported 102 new rows" in result.stdout, result.stdout  # 51 per model
    assert f"for {BASE_MODEL}, {POST_MODEL} on 3 benchmarks" in result.stdout
    cli("pair", "add", BASE_MODEL, POST_MODEL)
    together = cli.json("map", "--level", "benchmark", "--format", "json")

    got = {(r["benchmark"], r["seed"]): (r["n_10"], r["n_01"], r["f_true"]) for r in together}
    for task, name in {NAVIGATE: "bbh:navigate", ANATOMY: "mmlu:anatomy"}.items():
        for s in SEEDS:
            want = _expected(BASE[task], POST[task][s], 4)
            assert got[(name, s)][:2] == (want["n_10"], want["n_01"])
            assert got[(name, s)][2] == pytest.approx(want["f_true"], abs=1e-12)


def test_a_name_for_a_folder_of_two_models_is_refused(cli, tmp_path):
    """--model on a folder holding two models' runs would store both as one model (and --latest
    would keep one model's answers for the other's): refused with both names, nothing written."""
    out = tmp_path / "out"
    _write_tree(out)
    before = cli.contents()
    for extra in ((), ("--latest",)):
        result = cli("import", "lighteval", out, "--model", "both", *extra, ok=False)
        assert "holds the runs of 2 models" in result.stderr, result.stderr
        assert BASE_MODEL in result.stderr and POST_MODEL in result.stderr
        assert "leave --model out" in result.stderr
    assert cli.contents() == before


def test_runs_outside_a_details_folder_need_a_model_name(cli, tmp_path):
    out = tmp_path / "out"
    _write_tree(out, post_seeds=())
    moved = tmp_path / "copied-runs"
    (out / "details" / BASE_MODEL).rename(moved)
    result = cli("import", "lighteval", moved, "--seed", "0", ok=False)
    assert "cannot tell which model" in result.stderr and "--model NAME" in result.stderr


def test_duplicated_question_is_reported_not_mispaired(cli, tmp_path):
    """Two rows of one file with the same question, options and gold: they cannot be told apart,
    so neither pairs (pairing them by row order would be a guess in a shuffled file)."""
    items = make_items("navigate", 4)
    twice = [*items, items[1]]  # item 1 appears twice
    out = tmp_path / "out"
    write_run(
        out,
        BASE_MODEL,
        "2025-07-01T10-00-00.000001",
        {NAVIGATE: (twice, [1, 1, 0, 0, 0])},
        style="base",
        seed=0,
        shuffle_seed=1,
    )
    write_run(
        out,
        POST_MODEL,
        "2025-07-02T10-00-00.000001",
        {NAVIGATE: (twice, [1, 0, 0, 1, 1])},
        style="chat",
        seed=0,
        shuffle_seed=2,
    )
    cli("import", "lighteval", out / "details" / BASE_MODEL, "--model", "base")
    cli("import", "lighteval", out / "details" / POST_MODEL, "--model", "post")
    report = cli("pair", "add", "base", "post").stdout
    assert "paired 3 samples" in report and "4 ambiguous" in report
    [rec] = cli.json("map", "--level", "benchmark", "--format", "json")
    # items 0, 2, 3: 1->1, 0->0, 0->1
    assert (rec["n"], rec["n_11"], rec["n_10"], rec["n_01"], rec["n_00"]) == (3, 1, 0, 1, 1)


def _greedy_run(out, timestamp, tasks, *, model=BASE_MODEL):
    """A run as lighteval writes a greedy one: ``"seed": null`` in its generation parameters."""
    write_run(out, model, timestamp, tasks, style="base", seed=None)
    results = out / "results" / model / f"results_{timestamp}.json"
    document = json.loads(results.read_text())
    document["config_general"]["generation_parameters"]["seed"] = None
    results.write_text(json.dumps(document))
    return results


def test_the_only_unseeded_run_of_a_task_imports_as_seed_0_and_says_so(cli, tmp_path):
    out = tmp_path / "out"
    _greedy_run(out, "2025-07-01T11-00-00.000001", {NAVIGATE: (ITEMS[NAVIGATE], BASE[NAVIGATE])})
    result = cli("import", "lighteval", out / "details" / BASE_MODEL, "--model", "base")
    told = [line for line in result.stderr.splitlines() if "no seed" in line]
    assert len(told) == 1
    assert "run 2025-07-01T11-00-00.000001" in told[0] and "imported as seed 0" in told[0]
    assert {r[2] for r in cli.contents()["results"]} == {0}
    assert len(cli.contents()["results"]) == len(ITEMS[NAVIGATE])
    # a details folder without its results file is an unseeded run too
    other = tmp_path / "other"
    write_run(
        other,
        POST_MODEL,
        "2025-07-02T11-00-00.000001",
        {NAVIGATE: (ITEMS[NAVIGATE], POST[NAVIGATE][0])},
        style="chat",
        seed=None,
    )
    (other / "results" / POST_MODEL / "results_2025-07-02T11-00-00.000001.json").unlink()
    result = cli("import", "lighteval", other / "details" / POST_MODEL, "--model", "post")
    assert "no results_2025-07-02T11-00-00.000001.json was found" in result.stderr
    assert "imported as seed 0" in result.stderr
    report = cli("pair", "add", "base", "post").stdout
    assert f"paired {len(ITEMS[NAVIGATE])} samples" in report


def test_several_unseeded_runs_of_a_task_are_refused_naming_them(cli, tmp_path):
    out = tmp_path / "out"
    for timestamp in ("2025-07-01T11-00-00.000001", "2025-07-01T12-00-00.000001"):
        _greedy_run(out, timestamp, {NAVIGATE: (ITEMS[NAVIGATE], BASE[NAVIGATE])})
    before = cli.contents()
    result = cli("import", "lighteval", out / "details" / BASE_MODEL, "--model", "base", ok=False)
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1
    assert "2 runs without a seed" in message and "--seed" in message
    assert "2025-07-01T11-00-00.000001" in message and "2025-07-01T12-00-00.000001" in message
    assert "nothing was imported" in message
    assert cli.contents() == before
    # each run's folder with its own seed resolves it
    for seed, timestamp in enumerate(("2025-07-01T11-00-00.000001", "2025-07-01T12-00-00.000001")):
        folder = out / "details" / BASE_MODEL / timestamp
        cli("import", "lighteval", folder, "--model", "base", "--seed", str(seed))
    assert {r[2] for r in cli.contents()["results"]} == {0, 1}
    # an unseeded run beside a run of seed 0 of the same task: two runs for seed 0
    _write_tree(tmp_path / "mixed", post_seeds=())
    _greedy_run(
        tmp_path / "mixed",
        "2025-07-05T11-00-00.000001",
        {NAVIGATE: (ITEMS[NAVIGATE], BASE[NAVIGATE])},
    )
    result = cli(
        "import",
        "lighteval",
        tmp_path / "mixed" / "details" / BASE_MODEL,
        "--model",
        "mixed",
        ok=False,
    )
    assert "seed 0 comes from two runs" in result.stderr


def test_two_runs_of_a_task_with_one_seed_need_latest(cli, tmp_path):
    out = tmp_path / "out"
    first = [0, 0, 0, 0, 0, 0]
    write_run(
        out,
        BASE_MODEL,
        "2025-07-01T10-00-00.000001",
        {NAVIGATE: (ITEMS[NAVIGATE], first)},
        style="base",
        seed=0,
    )
    write_run(
        out,
        BASE_MODEL,
        "2025-07-03T10-00-00.000001",
        {NAVIGATE: (ITEMS[NAVIGATE], BASE[NAVIGATE])},
        style="base",
        seed=0,
    )
    result = cli("import", "lighteval", out / "details" / BASE_MODEL, "--model", "base", ok=False)
    assert "seed 0 comes from two runs" in result.stderr and "--latest" in result.stderr
    assert "2025-07-01T10-00-00.000001" in result.stderr
    assert "2025-07-03T10-00-00.000001" in result.stderr
    cli("import", "lighteval", out / "details" / BASE_MODEL, "--model", "base", "--latest")
    contents = cli.contents()
    stored = sorted(
        r[5] for r in contents["results"]
    )  # results: model, benchmark, seed, id, run, correct
    assert stored == sorted(bool(c) for c in BASE[NAVIGATE])  # the later run's answers


def test_seed_option_overrides_results_files(cli, tmp_path):
    out = tmp_path / "out"
    write_run(
        out,
        BASE_MODEL,
        "2025-07-01T10-00-00.000001",
        {NAVIGATE: (ITEMS[NAVIGATE], BASE[NAVIGATE])},
        style="base",
        seed=None,
    )
    cli("import", "lighteval", out, "--model", "base", "--seed", "7")
    assert {r[2] for r in cli.contents()["results"]} == {7}  # results: model, benchmark, seed, ...


def test_unmatched_keys_are_linked_by_question_text(cli, tmp_path):
    """A one-question file keeps its whole query as the question (nothing is shared to strip), so
    its key differs from the other model's; the post question found inside the base prompt links
    them."""
    item = Item(
        "Which way do you face after turning left twice from north?",
        ("north", "south", "east", "west"),
        1,
    )
    others = make_items("navigate", 3)
    out = tmp_path / "out"
    write_run(
        out,
        BASE_MODEL,
        "2025-07-01T10-00-00.000001",
        {NAVIGATE: ([item], [1])},
        style="base",
        seed=0,
    )
    write_run(
        out,
        POST_MODEL,
        "2025-07-02T10-00-00.000001",
        {NAVIGATE: ([item, *others], [0, 1, 1, 1])},
        style="chat",
        seed=0,
    )
    cli("import", "lighteval", out / "details" / BASE_MODEL, "--model", "base")
    cli("import", "lighteval", out / "details" / POST_MODEL, "--model", "post")
    report = cli("pair", "add", "base", "post").stdout
    assert "paired 1 samples" in report and "3 only in post" in report
    assert "question text" in report
    [rec] = cli.json("map", "--level", "benchmark", "--format", "json")
    assert (rec["n"], rec["n_10"]) == (1, 1)


def test_pages_say_what_paired_and_show_questions(cli, tmp_path):
    """The pair page's pairing table, the map's note on a pair that paired nothing, and lists that
    show the question rather than the few-shot template."""
    from fastapi.testclient import TestClient
    from forgetmap.web import create_app

    out = tmp_path / "out"
    items = make_items("navigate", 4)
    twice = [*items, items[1]]
    write_run(
        out,
        BASE_MODEL,
        "2025-07-01T10-00-00.000001",
        {NAVIGATE: (twice, [1, 1, 0, 0, 1])},
        style="base",
        seed=0,
    )
    write_run(
        out,
        POST_MODEL,
        "2025-07-02T10-00-00.000001",
        {NAVIGATE: (twice, [0, 0, 0, 1, 1])},
        style="chat",
        seed=0,
    )
    cli("import", "lighteval", out / "details" / BASE_MODEL, "--model", "base")
    cli("import", "lighteval", out / "details" / POST_MODEL, "--model", "post")
    cli("pair", "add", "base", "post")
    # a second pair whose post model ran another benchmark: nothing pairs
    write_run(
        out,
        "org/other",
        "2025-07-03T10-00-00.000001",
        {ANATOMY: (ITEMS[ANATOMY], POST[ANATOMY][0])},
        style="chat",
        seed=0,
    )
    cli("import", "lighteval", out / "details" / "org" / "other", "--model", "other")
    cli("pair", "add", "base", "other")
    assert "paired no samples" in cli("map").stdout or cli.json("map", "--format", "json")
    with TestClient(create_app(cli.db)) as client:
        page = client.get("/pairs/1").text
        assert 'id="pairing"' in page and "question key" in page
        assert "4 ambiguous" in page or ">4<" in page
        home = client.get("/").text
        assert 'id="unpaired-pairs"' in home and "/pairs/2#pairing" in home
        flipped = client.get("/pairs/1/samples?transition=10").text
        # item 0 was forgotten: its question is listed, the few-shot block is not
        assert items[0].question in flipped
        assert "The following are questions with answers." not in flipped
        empty = client.get("/pairs/2").text
        assert "This pair has no paired samples yet" in empty and "only post" in empty


def _stored_prompts(db: Path) -> dict[tuple[str, str, int, str], str]:
    """(model, benchmark, seed, question) -> the whole prompt as the store gives it back."""
    from forgetmap.db import open_store
    from forgetmap.db.prompts import full_prompt

    store = open_store(db)
    try:
        with store.read() as conn:
            rows = conn.execute(
                f"SELECT m.name, b.name, r.seed, r.question, {full_prompt('r')} FROM results r "
                "JOIN models m ON m.id = r.model_id JOIN benchmarks b ON b.id = r.benchmark_id"
            ).fetchall()
    finally:
        store.close()
    return {(m, b, s, q): p for m, b, s, q, p in rows}


def _file_prompts(folder: Path) -> list[str]:
    """Every full_prompt of a run folder's details files (the prompts as lighteval wrote them)."""
    import pyarrow.parquet as pq

    return [
        prompt
        for f in sorted(folder.glob("details_*.parquet"))
        for prompt in pq.read_table(f, columns=["full_prompt"])["full_prompt"].to_pylist()
    ]


def test_prompts_come_back_whole_after_the_reader_splits_their_templates(cli, tmp_path):
    """The reader cuts each file's template out (few-shot block, chat turns) and keeps only each
    row's own part: every stored prompt reads back exactly as the file wrote it, for rows
    written straight (a first import) and for rows added beside stored ones (a second import
    into the same (model, benchmark, seed), which compares with what is stored)."""
    out = tmp_path / "out"
    few = {NAVIGATE: (ITEMS[NAVIGATE][:4], BASE[NAVIGATE][:4])}
    first = write_run(out, BASE_MODEL, "2025-07-01T10-00-00.000001", few, style="base", seed=0)
    all_items = {
        NAVIGATE: (ITEMS[NAVIGATE], BASE[NAVIGATE]),
        ANATOMY: (ITEMS[ANATOMY], BASE[ANATOMY]),
    }
    second = write_run(
        out / "later",
        BASE_MODEL,
        "2025-07-03T10-00-00.000001",
        all_items,
        style="base",
        seed=0,
        shuffle_seed=5,
    )
    chat = write_run(out, POST_MODEL, "2025-07-02T10-00-00.000001", all_items, style="chat", seed=0)
    cli("import", "lighteval", first, "--model", "base")
    added = cli("import", "lighteval", second, "--model", "base").stdout
    assert "imported 10 new rows (4 already stored)" in added
    cli("import", "lighteval", chat, "--model", "post")

    stored = _stored_prompts(cli.db)
    assert len(stored) == 14 + 14
    for model, folder in (("base", second), ("post", chat)):
        written = sorted(_file_prompts(folder))
        got = sorted(p for (m, *_), p in stored.items() if m == model)
        assert got == written
    # the few-shot block and the chat turns are stored once each, not per row
    from forgetmap.db import open_store

    store = open_store(cli.db)
    try:
        with store.read() as conn:
            templates = conn.execute("SELECT count(*) FROM prompt_templates").fetchall()[0][0]
            whole = conn.execute(
                "SELECT count(*) FROM results WHERE prompt_template_id IS NULL"
            ).fetchall()[0][0]
    finally:
        store.close()
    assert whole == 0  # rows added beside stored ones keep their template too, as fresh rows do
    assert 1 <= templates <= 3


def _sample_runs(keys: list[tuple]) -> list[tuple]:
    """The (benchmark, sample) of each run of consecutive rows with the same one."""
    return [k[:2] for i, k in enumerate(keys) if i == 0 or k[:2] != keys[i - 1][:2]]


def test_the_seeds_of_a_sample_are_stored_side_by_side_as_a_sorted_insert_stores_them(tmp_path):
    """The reader puts the rows of one sample (each seed's file shuffled differently) side by side
    in seed order and the store inserts them as they come: the same rows, ids and counts as
    an insert that sorts them, and in the file the seeds of a question lie together (what lets
    DuckDB's compression store their shared texts once)."""
    from forgetmap.db import open_store
    from forgetmap.db.ingest import ingest
    from forgetmap.importers import prepare, read_source

    from tests.support.store_contents import table_contents

    out = tmp_path / "out"
    _write_tree(out, post_seeds=())
    table, benchmarks = prepare(
        read_source("lighteval", out / "details" / BASE_MODEL, model="base"), source="tree"
    )
    keys = list(
        zip(
            table["benchmark"].to_pylist(),
            table["sample_id"].to_pylist(),
            table["seed"].to_pylist(),
            strict=True,
        )
    )
    # each (benchmark, sample) is one run of rows, seeds ascending within it
    runs = _sample_runs(keys)
    assert len(runs) == len(set(runs)) == 6 + 8 + 3
    assert all(a[2] < b[2] for a, b in zip(keys, keys[1:], strict=False) if a[:2] == b[:2])

    contents = {}
    for grouped in (True, False):
        store = open_store(tmp_path / f"grouped_{grouped}.duckdb")
        try:
            with store.transaction() as conn:
                ingest(
                    conn,
                    table,
                    benchmarks,
                    config={"source": "import:lighteval"},
                    grouped_by_sample=grouped,
                )
            with store.read() as conn:
                contents[grouped] = table_contents(conn)
                stored = conn.execute(
                    "SELECT benchmark_id, sample_id, seed FROM results ORDER BY rowid"
                ).fetchall()
        finally:
            store.close()
        stored_runs = _sample_runs(stored)
        assert len(stored_runs) == len(set(stored_runs)) == 17
    for name in ("results", "prompt_templates", "benchmarks"):  # (other tables hold times)
        assert contents[True][name] == contents[False][name]
    assert len(contents[True]["results"]) == 51


def test_chain_of_thought_answers_past_one_string_arrays_limit_import_alike(tmp_path, monkeypatch):
    """Answers as long as the paper's chains of thought (the fixture's ``answer_tokens``): each
    text column past what one Arrow ``string`` array holds (2 GB: 1,128,000 answers of ~400 tokens
    are 2.4 GB) is combined as ``large_string`` and stored as any other. Here the limit is lowered
    to 1,000 bytes so that every text column of a small tree crosses it: the store ends up the
    same, row for row, as with the limit out of reach. The prediction is the letter lighteval's
    extractive metric took out of each answer, the response the whole answer."""
    from forgetmap.core import columns
    from forgetmap.db import open_store, texts
    from forgetmap.db.pairing import add_pair
    from forgetmap.importers import import_file
    from forgetmap.importers.lighteval import reader as lighteval

    from tests.support.store_contents import table_contents

    out = tmp_path / "out"
    for s in SEEDS:
        base = {t: (ITEMS[t], BASE[t]) for t in ITEMS}
        write_run(
            out,
            BASE_MODEL,
            f"2025-07-01T10-0{s}-00.000001",
            base,
            style="base",
            seed=s,
            shuffle_seed=s,
            answer_tokens=60,
        )
        post = {t: (ITEMS[t], POST[t][s]) for t in ITEMS}
        write_run(
            out,
            POST_MODEL,
            f"2025-07-02T10-0{s}-00.000001",
            post,
            style="chat",
            seed=s,
            shuffle_seed=s,
            answer_tokens=60,
        )
    # a task of files a benchmark: the columns come in several chunks, to be combined
    monkeypatch.setattr(lighteval, "TASK_BYTES", (1, 1))
    contents = {}
    for limit in (columns.OFFSET_LIMIT, 1_000):
        monkeypatch.setattr(columns, "OFFSET_LIMIT", limit)
        large = limit == 1_000
        store = open_store(tmp_path / f"limit_{limit}.duckdb")
        try:
            import_file(store, "lighteval", out)
            with store.transaction() as conn:
                add_pair(conn, BASE_MODEL, POST_MODEL, label=None, stage=None)
            with store.read() as conn:
                contents[large] = table_contents(conn)
                stored = conn.execute(
                    "SELECT r.response, r.prediction, r.response_ref FROM results r JOIN models m "
                    "ON m.id = r.model_id WHERE m.name = ?",
                    [POST_MODEL],
                ).fetchall()
                # chains of thought lie in the answer files beside the database
                in_files = texts.read_texts(conn, [ref for _, _, ref in stored])
                answers = [(text or in_files[ref], p) for text, p, ref in stored]
        finally:
            store.close()
    for name in ("results", "prompt_templates", "transitions", "coverage", "cross_seed_cells"):
        assert contents[True][name] == contents[False][name], name
    assert len(contents[True]["results"]) == 2 * 3 * (6 + 8 + 3)
    assert len(answers) == 3 * (6 + 8 + 3)
    for response, prediction in answers:
        assert len(response.split()) >= 30  # 30 to 90 words of reasoning, then the answer line
        assert response.endswith(f"Answer: {prediction}") and prediction in "ABCDEFGH"
