"""lm-eval 0.4.3-0.4.6 samples, whose lines do not name their filter: the n-th line of a
document is its n-th filter, named by the run's results file (app/importers/lm_eval/filters.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from forgetmap.demo.layouts.lm_eval import write_lm_eval_results, write_lm_eval_samples
from forgetmap.importers.common import InputError
from forgetmap.importers.lm_eval import filters as lm_eval_filters
from forgetmap.importers.lm_eval.filters import line_filters, read_results, results_filters
from forgetmap.importers.lm_eval.reader import read_lm_eval

STRICT = [1, 0, 0, 1, 0]
FLEXIBLE = [1, 1, 0, 1, 1]
TWO_FILTERS = {"strict-match": STRICT, "flexible-extract": FLEXIBLE}


def correct_by_id(table: pa.Table) -> dict[str, bool]:
    return dict(zip(table["sample_id"].to_pylist(), table["correct"].to_pylist(), strict=True))


def expected(values: list[int]) -> dict[str, bool]:
    return {str(i): bool(v) for i, v in enumerate(values)}


def write_run(directory: Path, *, ranks: int = 1) -> Path:
    """An lm-eval 0.4.5 run folder: gsm8k with two filters, MMLU anatomy with none listed."""
    path = write_lm_eval_samples(
        directory, "gsm8k", TWO_FILTERS, kind="generate_until", filters_named=False, ranks=ranks
    )
    write_lm_eval_samples(directory, "mmlu_anatomy", [1, 0, 1], filters_named=False)
    write_lm_eval_results(
        directory, {"gsm8k": ["strict-match", "flexible-extract"], "mmlu_anatomy": None}
    )
    return path


def test_the_fixture_writes_lines_without_filter_names(tmp_path: Path) -> None:
    path = write_run(tmp_path)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 2 * len(STRICT)
    assert all("filter" not in line and "metrics" not in line for line in lines)
    assert [line["doc_id"] for line in lines] == [0, 1, 2, 3, 4] * 2


def test_the_documented_default_filter_is_taken_and_told(tmp_path: Path) -> None:
    write_run(tmp_path)
    told = []
    table = read_lm_eval(tmp_path, model="m", on_filter=lambda *a: told.append(a))
    gsm8k = table.filter(pa.compute.equal(table["benchmark"], "gsm8k"))
    assert correct_by_id(gsm8k) == expected(FLEXIBLE)
    assert told == [("gsm8k", "flexible-extract", ["strict-match", "flexible-extract"], "default")]
    mmlu = table.filter(pa.compute.equal(table["benchmark"], "mmlu_anatomy"))
    assert correct_by_id(mmlu) == {"0": True, "1": False, "2": True}


@pytest.mark.parametrize("option", ["strict-match", ["gsm8k=strict-match"]])
def test_filter_option_selects_by_the_names_of_the_results_file(tmp_path, option) -> None:
    write_run(tmp_path)
    table = read_lm_eval(
        tmp_path / "samples_gsm8k_2024-05-13T16-13-22.123456.jsonl", model="m", filter_name=option
    )
    assert correct_by_id(table) == expected(STRICT)
    # the prediction is the strict filter's own: the number without the flexible one's period
    assert table["prediction"].to_pylist()[0] == "72"


def test_a_multi_gpu_run_pairs_each_line_with_its_filter(tmp_path: Path) -> None:
    path = write_run(tmp_path, ranks=2)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["doc_id"] for line in lines] == [0, 2, 4, 0, 2, 4, 1, 3, 1, 3]
    strict = read_lm_eval(path, model="m", filter_name="strict-match")
    flexible = read_lm_eval(path, model="m", filter_name="flexible-extract")
    assert correct_by_id(strict) == expected(STRICT)
    assert correct_by_id(flexible) == expected(FLEXIBLE)


def test_lines_read_one_by_one_get_the_same_filters(tmp_path: Path) -> None:
    path = write_run(tmp_path)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    lines[3]["target"] = 7  # a field whose type changes between lines: the row reader's file
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    for name, values in TWO_FILTERS.items():
        assert correct_by_id(read_lm_eval(path, model="m", filter_name=name)) == expected(values)


def test_repeated_documents_without_a_results_file_are_refused(tmp_path: Path) -> None:
    write_run(tmp_path)
    (tmp_path / "results_2024-05-13T16-13-22.123456.json").unlink()
    with pytest.raises(InputError) as info:
        read_lm_eval(tmp_path, model="m")
    message = str(info.value)
    assert "task 'gsm8k'" in message and "doc_id 0 has 2 lines" in message
    assert "results_2024-05-13T16-13-22.123456.json" in message and "0.4.3-0.4.6" in message


def test_a_document_count_that_disagrees_with_the_results_is_refused(tmp_path: Path) -> None:
    path = write_run(tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # doc 4's second line gone
    with pytest.raises(
        InputError,
        match=r"2 filters .*strict-match, flexible-extract.*doc_id 4 "
        r"has 1 lines",
    ):
        read_lm_eval(tmp_path, model="m")


def test_a_results_file_of_another_run_is_not_taken(tmp_path: Path) -> None:
    write_run(tmp_path)
    results = tmp_path / "results_2024-05-13T16-13-22.123456.json"
    results.rename(tmp_path / "results_2024-06-01T09-00-00.000001.json")
    with pytest.raises(InputError, match="results_2024-05-13T16-13-22.123456.json"):
        read_lm_eval(tmp_path, model="m")


def test_lines_that_name_their_filter_keep_it() -> None:
    named = pa.array(["a", None, "b"])
    got = line_filters(named, pa.array([0, 0, 0]), file=Path("f"), task="t", results=None)
    assert got.to_pylist() == ["a", "none", "b"]


def test_documents_once_each_have_the_single_filter_none() -> None:
    got = line_filters(None, pa.array([3, 1, 2]), file=Path("f"), task="t", results=None)
    assert got.to_pylist() == ["none"] * 3


def test_the_nth_line_of_each_document_takes_the_nth_filter(tmp_path: Path) -> None:
    results = write_lm_eval_results(tmp_path, {"t": ["x", "y", "z"]})
    doc_ids = pa.array(["b", "a", "b", "a", "a", "b"])
    got = line_filters(None, doc_ids, file=Path("f"), task="t", results=results)
    assert got.to_pylist() == ["x", "x", "y", "y", "z", "z"]


def test_results_filters_reads_the_task_config(tmp_path: Path) -> None:
    results = write_lm_eval_results(
        tmp_path, {"gsm8k": ["strict-match", "flexible-extract"], "arc_easy": None}
    )
    assert results_filters(results, "gsm8k") == ["strict-match", "flexible-extract"]
    assert results_filters(results, "arc_easy") == ["none"]
    assert results_filters(results, "hellaswag") is None
    assert results_filters(tmp_path / "missing.json", "gsm8k") is None
    results.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="not an lm-eval results file"):
        results_filters(results, "gsm8k")


def test_a_results_file_with_a_byte_order_mark_reads_as_without(tmp_path: Path) -> None:
    results = write_lm_eval_results(tmp_path, {"gsm8k": ["strict-match", "flexible-extract"]})
    results.write_bytes(b"\xef\xbb\xbf" + results.read_bytes())
    assert results_filters(results, "gsm8k") == ["strict-match", "flexible-extract"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [("[1, 2]", "a JSON list, not an object"), (b"{\xff}", "utf-8"), ("{", "Expecting")],
)
def test_what_is_not_a_results_file_is_named(tmp_path: Path, content, reason: str) -> None:
    results = tmp_path / "results_2024-01-01T00-00-00.json"
    if isinstance(content, bytes):
        results.write_bytes(content)
    else:
        results.write_text(content, encoding="utf-8")
    with pytest.raises(
        InputError, match=rf"{results.name}: not an lm-eval results file \(.*{reason}"
    ):
        read_results(results)
    with pytest.raises(InputError, match="not an lm-eval results file"):
        results_filters(results, "gsm8k")


def test_an_oversized_results_file_is_not_parsed(tmp_path: Path, monkeypatch) -> None:
    results = write_lm_eval_results(tmp_path, {"gsm8k": None})
    size = results.stat().st_size
    monkeypatch.setattr(lm_eval_filters, "RESULTS_MAX_BYTES", size - 1)
    with pytest.raises(InputError, match=f"{size:,} bytes; they hold kilobytes"):
        results_filters(results, "gsm8k")


def test_a_line_without_doc_id_is_named(tmp_path: Path) -> None:
    path = write_run(tmp_path)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    del lines[2]["doc_id"]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(InputError, match=rf"{path.name}:3: .*doc_id"):
        read_lm_eval(path, model="m")
