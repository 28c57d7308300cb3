"""inspect_ai eval logs, written by inspect_ai itself, through `forgetmap import inspect` into
the map, values by hand; the choices the reader makes (scorers, letters, epochs, runs that did
not finish, files that are not logs), on the file, through the app that owns it, and uploaded to
a remote app."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from click.testing import CliRunner
from forgetmap.cli import main
from forgetmap.core.errors import InputError
from forgetmap.importers import read_source
from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import choice, includes, match
from inspect_ai.solver import generate, multiple_choice

from tests.support.cli import Cli, cli_both_ways
from tests.support.inspect_logs import failing_on, from_metadata, mc_answer, run_eval
from tests.support.server import Server

cli = cli_both_ways(shared_owner=True)  # each test on the file, then through a real serve

ARC = [
    Sample(id=i, input=f"arc question {i}?", choices=["w", "x", "y", "z"], target="ABCD"[i - 1])
    for i in range(1, 5)
]
SUMS = [
    Sample(id="a", input="What is 1+1?", target="2"),
    Sample(id="b", input="What is 2+3?", target="5"),
    Sample(id="c", input="What is 3+4?", target="7"),
]
# correct per sample, epoch 1 (seed 0) then epoch 2 (seed 1)
BASE = {"arc": ([1, 1, 0, 1], [1, 1, 1, 0]), "sums": ([1, 0, 1], [1, 1, 0])}
POST = {"arc": ([1, 0, 1, 1], [1, 1, 0, 0]), "sums": ([0, 0, 1], [1, 1, 1])}
HALF_RIGHT = "5 apples"
"""The base model's first answer to sample b: match() (at the end) finds no 5, includes() does."""


def _tasks() -> list[Task]:
    return [
        Task(
            name="inspect_evals/arc_easy",
            dataset=MemoryDataset(ARC),
            solver=multiple_choice(),
            scorer=choice(),
        ),
        Task(
            name="sums",
            dataset=MemoryDataset(SUMS),
            solver=generate(),
            scorer=[match(), includes()],
        ),
    ]


def _answers(correct: dict, *, half_right: bool) -> dict[str, list[str]]:
    answers = {}
    for i, sample in enumerate(ARC):
        answers[sample.input] = [mc_answer(sample, bool(epoch[i])) for epoch in correct["arc"]]
    for i, sample in enumerate(SUMS):
        answers[sample.input] = [
            f"The answer is {sample.target}" if epoch[i] else "I do not know"
            for epoch in correct["sums"]
        ]
    if half_right:
        answers["What is 2+3?"][0] = HALF_RIGHT
    return answers


VALUES = {
    "letters": ["C", "I", "N", True, 0, 1.0],
    "dicts": [{"exact": 1, "f1": 0.5}, {"exact": 0, "f1": 1}],
    "partial": ["C", "P"],
    "graded": ["C", 0.5],
}
"""Per task, the value its scorer (``from_metadata``) gives each sample."""


def _value_tasks() -> tuple[list[Task], dict[str, list[str]]]:
    tasks, answers = [], {}
    for name, values in VALUES.items():
        samples = [
            Sample(id=i, input=f"{name} {i}.", target="x", metadata={"value": value})
            for i, value in enumerate(values)
        ]
        answers.update({sample.input: ["x"] for sample in samples})
        dataset = MemoryDataset(samples)
        tasks.append(Task(name=name, dataset=dataset, solver=generate(), scorer=from_metadata()))
    return tasks, answers


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Base as .eval logs, post as .json logs (two tasks, two epochs), and small logs of one
    task each for the reader's choices."""
    root = tmp_path_factory.mktemp("inspect")
    run_eval(_tasks(), "base", _answers(BASE, half_right=True), root / "base")
    run_eval(_tasks(), "post", _answers(POST, half_right=False), root / "post", log_format="json")
    tasks, questions = _value_tasks()
    scored = run_eval(tasks, "values", questions, root / "values", epochs=1)
    questions = MemoryDataset([Sample(id=i, input=f"q{i}", target="2") for i in range(3)])
    failing = Task(name="broken", dataset=questions, solver=failing_on("q1"), scorer=match())
    [broken] = run_eval(failing, "broken", {"q0": ["2"]}, root / "broken", epochs=1).values()
    return {"root": root, "base": root / "base", "post": root / "post", "broken": broken, **scored}


def _read(path, **options):
    """The reader's rows of a log (before the store canonicalizes benchmark names)."""
    return read_source("inspect", path, model=None, **options)


def _told(stderr: str) -> list[str]:
    """What an import told on stderr, without its progress lines."""
    return [line for line in stderr.splitlines() if not line.startswith("importing ")]


def test_two_models_logs_to_map(cli, logs):
    base = cli("import", "inspect", logs["base"], "--scorer", "match")
    assert base.stdout.startswith("imported 14 new rows (0 already stored) for mockllm/base on 2")
    # the arc log is scored by choice() alone: --scorer match is for the logs with several
    assert "scored by choice only; took it (--scorer match names none" in base.stderr
    cli("import", "inspect", logs["post"], "--model", "post", "--scorer", "match")
    cli("pair", "add", "mockllm/base", "post")
    records = cli.json("map", "--level", "benchmark", "--format", "json")
    mine = {(r["benchmark"], r["seed"]): r for r in records if r["post"] == "post"}
    assert sorted(mine) == [("arc:easy", 0), ("arc:easy", 1), ("sums", 0), ("sums", 1)]
    counts = ("n", "n_00", "n_01", "n_10", "n_11")
    arc0, arc1, sums0, sums1 = (mine[key] for key in sorted(mine))
    assert arc0["category"] == "Logic" and arc0["num_choices"] == 4
    assert [arc0[c] for c in counts] == [4, 0, 1, 1, 2]
    # acc .75 -> .75, k = 4: chance c = .25 * .25 / 3
    assert arc0["f_true"] == pytest.approx(0.25 - 0.0625 / 3, abs=1e-12)
    assert arc0["bt_true"] == pytest.approx(0.25 - 0.0625 / 3, abs=1e-12)
    assert [arc1[c] for c in counts] == [4, 1, 0, 1, 2]
    # acc .75 -> .5: c = .25 * .5 / 3; BT = 0
    assert arc1["f_true"] == pytest.approx(0.25 - 0.125 / 3, abs=1e-12) and arc1["bt_true"] == 0
    assert sums0["category"] == "Uncategorized" and sums0["num_choices"] is None
    assert [sums0[c] for c in counts] == [3, 1, 0, 1, 1]
    assert sums0["f_true"] == pytest.approx(1 / 3, abs=1e-12) and sums0["bt_true"] == 0
    assert [sums1[c] for c in counts] == [3, 0, 1, 0, 2]
    assert sums1["bt_true"] == pytest.approx(1 / 3, abs=1e-12) and sums1["f_true"] == 0


def test_a_log_with_several_scorers_needs_scorer(cli, logs):
    before = cli.contents()
    result = cli("import", "inspect", logs["post"], "--model", "post-2", ok=False)
    assert result.exit_code == 2
    [line] = _told(result.stderr)
    [sums] = [p for p in logs["post"].iterdir() if "_sums_" in p.name]
    assert line == (
        f"error: {sums}: 2 scorers (match, includes); choose one with --scorer NAME "
        "(nothing was imported)"
    )
    assert cli.contents() == before


def test_a_run_that_did_not_finish_imports_what_it_holds(cli, logs):
    result = cli("import", "inspect", logs["broken"])
    assert result.stdout.startswith("imported 1 new rows (0 already stored) for mockllm/broken")
    name = logs["broken"]
    assert _told(result.stderr) == [
        f"{name}: left out 2 samples (2 ended in an error)",
        f"{name}: the run ended with status error (RuntimeError('the tool broke on q1')); "
        "imported the 1 scored samples it holds of 3 planned (`inspect eval-retry` completes it)",
    ]


def test_files_that_are_not_logs_are_refused(cli, tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"results": {"acc": 0.5}}))
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "logs.json").write_text("{}")  # inspect_ai's own listing, no log
    for path, message in (
        (tmp_path / "results.json", "results.json: not an inspect_ai log ("),
        (tmp_path / "folder", "folder: no inspect_ai logs found"),
        (tmp_path / "nothing.eval", "nothing.eval: no such file or directory"),
    ):
        result = cli("import", "inspect", path, ok=False)
        assert result.exit_code == 2
        [line] = _told(result.stderr)
        assert message in line and line.endswith("(nothing was imported)")


def test_two_runs_of_one_task_are_refused(cli, logs, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(logs["base"], runs / "first")
    shutil.copytree(logs["base"], runs / "second")
    result = cli("import", "inspect", runs, "--scorer", "match", ok=False)
    assert result.exit_code == 2
    assert "both hold task 'inspect_evals/arc_easy' of model 'mockllm/base'" in result.stderr


def test_rows_of_a_log(logs):
    [arc] = [p for p in logs["base"].iterdir() if "arc-easy" in p.name]
    rows = _read(arc).sort_by([("seed", "ascending"), ("sample_id", "ascending")])
    first = rows.slice(0, 1).to_pylist()[0]
    key = (first["model"], first["benchmark"], first["sample_id"], first["seed"])
    assert key == ("mockllm/base", "arc_easy", "1", 0)  # the store makes the name arc:easy
    assert first["correct"] is True and first["num_choices"] == 4
    assert json.loads(first["choices"]) == ["w", "x", "y", "z"]
    assert (first["gold"], first["prediction"], first["response"]) == ("A", "A", "ANSWER: A")
    assert first["prompt"] == first["question"] == "arc question 1?"
    assert first["answer_status"] == "answered" and first["completion_tokens"] == len("ANSWER: A")
    assert rows["seed"].to_pylist() == [0] * 4 + [1] * 4  # epochs 1 and 2
    assert rows["correct"].to_pylist() == [bool(v) for v in BASE["arc"][0] + BASE["arc"][1]]


def test_the_scorer_chosen_gives_correct(logs):
    [sums] = [p for p in logs["base"].iterdir() if "sums" in p.name]
    by = {}
    for scorer in ("match", "includes"):
        rows = _read(sums, scorer=scorer).sort_by("sample_id").to_pylist()
        by[scorer] = [
            (r["sample_id"], r["seed"], r["correct"], r["prediction"])
            for r in rows
            if r["seed"] == 0
        ]
    assert [r[2] for r in by["match"]] == [True, False, True]
    assert [r[2] for r in by["includes"]] == [True, True, True]  # "5 apples" includes 5
    assert by["match"][1][3] == HALF_RIGHT


def test_scorer_values(logs):
    letters = _read(logs["letters"]).sort_by("sample_id")
    # C, I, N (no answer), True, 0, 1.0
    assert letters["correct"].to_pylist() == [True, False, False, True, False, True]
    dicts = _read(logs["dicts"], scorer="from_metadata:exact")
    assert dicts.sort_by("sample_id")["correct"].to_pylist() == [True, False]
    for path, scorer, message in (
        (
            logs["dicts"],
            None,
            "scorer 'from_metadata' gives several values (exact, f1); choose "
            "one with --scorer from_metadata:KEY",
        ),
        (logs["dicts"], "from_metadata:f1", "scorer 'from_metadata' has the non-binary value 0.5"),
        (logs["dicts"], "from_metadata:recall", "has no value 'recall' (its keys: exact, f1)"),
        (logs["partial"], None, "sample 1 (epoch 1): scorer 'from_metadata' gave partial credit"),
        (logs["graded"], None, "scorer 'from_metadata' has the non-binary value 0.5"),
    ):
        with pytest.raises(InputError) as raised:
            _read(path, scorer=scorer)
        assert message in str(raised.value)
    told = []  # a log of one scorer takes it, and says so, when --scorer names another
    _read(logs["letters"], scorer="accuracy", notice=told.append)
    assert told == [
        f"{logs['letters']}: scored by from_metadata only; took it (--scorer accuracy "
        "names none of its scorers)"
    ]


def test_without_inspect_ai_the_import_says_how_to_install_it(logs, tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "inspect_ai" or m.startswith("inspect_ai.")]:
        monkeypatch.setitem(sys.modules, name, None)
    result = Cli(tmp_path / "fm.duckdb")("import", "inspect", logs["base"], ok=False)
    assert result.exit_code == 2
    assert result.stderr == (
        "error: import inspect needs inspect_ai: pip install 'forgetmap[inspect]' "
        "(nothing was imported)\n"
    )


def test_an_upload_to_a_remote_app_maps_as_the_import_on_the_file(logs, tmp_path, monkeypatch):
    """A .eval log (a zip the app must not unpack) and a folder of .json logs (sent as a tar)."""
    monkeypatch.chdir(tmp_path)  # where the client's default database is not
    db = tmp_path / "app.duckdb"
    token = Cli(db)("token", "create", "t", "--role", "submit").stdout.strip()
    server = Server(db)
    on_file = Cli(tmp_path / "local.duckdb")
    try:
        [arc] = [p for p in logs["base"].iterdir() if "arc-easy" in p.name]
        imports = [(arc,), (logs["post"], "--model", "post", "--scorer", "match")]
        for args in imports:
            remote = CliRunner().invoke(
                main, ["--url", server.url, "--token", token, "import", "inspect", *map(str, args)]
            )
            assert remote.exit_code == 0, remote.stderr
            assert remote.stdout == on_file("import", "inspect", *args).stdout
        read = Cli(db, server=server)
        for way in (read, on_file):
            way("pair", "add", "mockllm/base", "post")
        assert read.json("map", "--format", "json") == on_file.json("map", "--format", "json")
    finally:
        server.stop()
