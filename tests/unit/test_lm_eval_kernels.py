"""lm-eval's Arrow path against its row reader: the same file gives the same table either way.

Each case is a samples file in a shape lm-eval writes (or could); the kernels must read the usual
shapes without falling back, and the unusual ones must fall back rather than read differently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest
from forgetmap.demo.layouts.lm_eval import write_lm_eval_samples
from forgetmap.importers.common import build_table
from forgetmap.importers.lm_eval.reader import _arrow_columns, _parse, _SlowPath, read_lm_eval
from forgetmap.importers.lm_eval.rows import records, row_columns

NAME = "samples_{task}_2024-05-13T16-13-22.123456.jsonl"


def write_lines(directory: Path, task: str, lines: list[dict[str, Any]]) -> Path:
    path = directory / NAME.format(task=task)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def mc_line(i: int, lls: list[Any], *, acc: Any = 1.0, **over: Any) -> dict[str, Any]:
    """A log-likelihood line as lm-eval >= 0.4.3 writes it (leaves as strings)."""
    args = {
        f"gen_args_{j}": {"arg_0": f"Q{i}?\nAnswer:", "arg_1": f" {'ABCDEFGH'[j]}"}
        for j in range(len(lls))
    }
    line = {
        "doc_id": i,
        "doc": {"q": f"Q{i}?"},
        "target": "1",
        "arguments": args,
        "resps": [[[str(v), "False"]] for v in lls],
        "filtered_resps": [[str(v), "False"] for v in lls],
        "filter": "none",
        "metrics": ["acc"],
        "doc_hash": f"h{i}",
        "acc": acc,
    }
    line.update(over)
    return line


def both_ways(path: Path, task: str, metric: str | None = None, filter_name: str | None = None):
    """(kernels' table, row reader's table) of one file's rows of one filter."""
    table = _parse(path)
    assert table is not None, "pyarrow's JSON reader should take this file"
    lines = list(records(path))
    if filter_name is not None:
        table = table.filter(pc.equal(table["filter"], filter_name))
        lines = [(n, r) for n, r in lines if r.get("filter") == filter_name]
    fast = build_table(_arrow_columns(table, task, metric))
    slow = build_table(row_columns(lines, file=path, task=task, metric=metric))
    return fast, slow


def assert_same(fast, slow) -> None:
    for name in fast.column_names:
        assert fast[name].to_pylist() == slow[name].to_pylist(), name


@pytest.mark.parametrize("num_choices", [2, 4, 10])
def test_multiple_choice_from_the_fixture_writer(tmp_path: Path, num_choices: int) -> None:
    path = write_lm_eval_samples(
        tmp_path, "mmlu_anatomy", [1, 0, 1, 1, 0, 0, 1], num_choices=num_choices
    )
    assert_same(*both_ways(path, "mmlu_anatomy"))


@pytest.mark.parametrize("task", ["gsm8k", "bbh_cot_fewshot_navigate"])
@pytest.mark.parametrize("chosen", ["strict-match", "flexible-extract"])
def test_generative_two_filters(tmp_path: Path, task: str, chosen: str) -> None:
    scores = {"strict-match": [1, 0, 0, 1], "flexible-extract": [1, 1, 0, 1]}
    path = write_lm_eval_samples(tmp_path, task, scores, kind="generate_until")
    fast, slow = both_ways(path, task, filter_name=chosen)
    assert_same(fast, slow)
    assert fast["correct"].to_pylist() == [bool(v) for v in scores[chosen]]


def test_hand_computed_scores_ties_and_infinity(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path,
        "mmlu_x",
        [
            mc_line(0, [-1.25, -0.5, -0.5, -3.0]),  # a tie: the first of equals
            mc_line(1, [float("-inf"), -2.0], acc=0.0),
            mc_line(2, [-0.00001, -7.0, -1e-9]),
        ],
    )
    fast, slow = both_ways(path, "mmlu_x")
    assert_same(fast, slow)
    assert fast["response"].to_pylist() == [
        "[-1.25,-0.5,-0.5,-3]",
        "[-Infinity,-2]",
        "[-0.00001,-7,-1e-9]",
    ]
    assert fast["prediction"].to_pylist() == ["1", "1", "2"]
    assert fast["num_choices"].to_pylist() == [4, 2, 3]
    assert json.loads(fast["choices"][2].as_py()) == [" A", " B", " C"]
    assert fast["correct"].to_pylist() == [True, False, True]
    assert fast["sample_id"].to_pylist() == ["0", "1", "2"]


def test_shared_continuation_keeps_the_contexts_as_options(tmp_path: Path) -> None:
    # winogrande: the options are the contexts, the continuation is the same
    line = mc_line(0, [-1.0, -2.0], target=0)
    line["arguments"] = {
        "gen_args_0": {"arg_0": "Anna gave it to Bea because Anna", "arg_1": " was kind."},
        "gen_args_1": {"arg_0": "Anna gave it to Bea because Bea", "arg_1": " was kind."},
    }
    path = write_lines(tmp_path, "winogrande", [line, mc_line(1, [-1.0, -0.5], target=1)])
    fast, slow = both_ways(path, "winogrande")
    assert_same(fast, slow)
    assert json.loads(fast["choices"][0].as_py())[1] == "Anna gave it to Bea because Bea"
    assert json.loads(fast["choices"][1].as_py()) == [" A", " B"]
    assert fast["gold"].to_pylist() == ["0", "1"]  # an integer target, as text


def test_numbers_nested_responses_and_no_filtered_column(tmp_path: Path) -> None:
    lines = [mc_line(i, [-1.0 - i, -0.5, -2.0]) for i in range(3)]
    for line in lines:
        line["resps"] = [[[float(v[0][0])]] for v in line["resps"]]  # numbers, nested
        del line["filtered_resps"]
    lines[1]["doc_id"] = 7.0  # a whole float id
    path = write_lines(tmp_path, "mmlu_x", lines)
    fast, slow = both_ways(path, "mmlu_x")
    assert_same(fast, slow)
    assert fast["sample_id"].to_pylist() == ["0", "7", "2"]


def test_differing_numbers_of_options_and_text_ids(tmp_path: Path) -> None:
    lines = [mc_line(0, [-1.0, -2.0]), mc_line(1, [-3.0, -2.0, -1.0, -4.0, -5.0])]
    lines[0]["doc_id"], lines[1]["doc_id"] = "a-0", "a-1"
    lines[0]["acc"], lines[1]["acc"] = False, True  # booleans
    path = write_lines(tmp_path, "truthfulqa_mc1", lines)
    fast, slow = both_ways(path, "truthfulqa_mc1")
    assert_same(fast, slow)
    assert fast["num_choices"].to_pylist() == [2, 5]
    assert fast["prediction"].to_pylist() == ["0", "2"]


def test_single_request_rows(tmp_path: Path) -> None:
    # one (context, continuation) request: scored, but no options to count
    path = write_lines(tmp_path, "lambada", [mc_line(0, [-0.7]), mc_line(1, [-2.5], acc=0)])
    fast, slow = both_ways(path, "lambada")
    assert_same(fast, slow)
    assert fast["num_choices"].to_pylist() == [None, None]
    assert fast["response"].to_pylist() == ["[-0.7]", "[-2.5]"]
    assert fast["prediction"].to_pylist() == [None, None]


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda ls: ls[1].update(acc="1"), id="stringified metric"),
        pytest.param(lambda ls: ls[1].update(acc=0.5), id="non-binary metric"),
        pytest.param(
            lambda ls: ls[1].update(filtered_resps=[["nan", "False"]] * 3), id="NaN score"
        ),
        pytest.param(lambda ls: ls[1].update(doc_id="  "), id="blank id"),
        pytest.param(lambda ls: ls[1].update(target=2.5), id="float target"),
        pytest.param(
            lambda ls: ls[1]["arguments"].pop("gen_args_2"), id="fewer requests than scores"
        ),
        pytest.param(
            lambda ls: ls[1]["arguments"]["gen_args_1"].update(arg_1="x\x1fy"),
            id="separator inside an option",
        ),
    ],
)
def test_unusual_rows_go_to_the_row_reader(tmp_path: Path, change) -> None:
    lines = [mc_line(i, [-1.0, -2.0, -0.5]) for i in range(3)]
    change(lines)
    path = write_lines(tmp_path, "mmlu_x", lines)
    table = _parse(path)  # None: a type that changes between lines stops the JSON reader
    if table is not None:
        with pytest.raises(_SlowPath):
            _arrow_columns(table, "mmlu_x", None)


def test_the_importer_falls_back_and_gives_the_row_readers_answer(tmp_path: Path) -> None:
    lines = [mc_line(i, [-1.0, -2.0, -0.5]) for i in range(3)]
    lines[2]["acc"] = "true"  # the row reader reads it; the kernels do not
    path = write_lines(tmp_path, "mmlu_x", lines)
    table = read_lm_eval(path, model="m")
    assert table["correct"].to_pylist() == [True, True, True]
    assert table["response"].to_pylist() == ["[-1,-2,-0.5]"] * 3


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"doc_id": 0, "resps": [[["-1", false]]]}\n', id="older [ll, false] pairs"),
        pytest.param('{"doc_id": 0}\n[1, 2]\n', id="a line that is not an object"),
        pytest.param('{"doc_id": 0, "x": 1}\n{"doc_id": 1, "x": "a"}\n', id="a type that changes"),
        pytest.param('{"doc_id": 0, "x": "\udcff"}\n', id="not UTF-8"),
        pytest.param("\n\n", id="no lines"),
    ],
)
def test_files_the_json_reader_cannot_take(tmp_path: Path, text: str) -> None:
    path = tmp_path / NAME.format(task="t")
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    assert _parse(path) is None


def test_filters_outside_the_defaults_take_the_first_in_file_order(tmp_path: Path) -> None:
    lines = []
    for name in ("zeta", "alpha"):
        for i in range(2):
            line = mc_line(i, [-1.0, -0.5], acc=float(name == "zeta"), filter=name)
            lines.append(line)
    path = write_lines(tmp_path, "mmlu_x", lines)
    told = []
    table = read_lm_eval(path, model="m", on_filter=lambda *args: told.append(args))
    assert told == [("mmlu_x", "zeta", ["zeta", "alpha"], "default")]
    assert table["correct"].to_pylist() == [True, True]
    table = read_lm_eval(path, model="m", filter_name="alpha")
    assert table["correct"].to_pylist() == [False, False]
