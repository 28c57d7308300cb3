"""Each answer's status (``forgetmap.core.answer_status``) from files in the harnesses' real
layouts: lighteval 0.10 flat and 0.11+ nested details (an empty extraction is ``no_answer``, a
cut prompt ``truncated``), lm-eval samples whose filters found no answer (``[invalid]``, under
``strict-match`` and ``flexible-extract``), tables (an empty prediction beside a response, an
explicit ``answer_status`` column, the older ``truncated``), inspect_ai logs written by
inspect_ai itself (``mockllm``), a worker's upload, and the worker's own choice."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import get_args

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from forgetmap.contract.results import AnswerStatus, ResultRow, ResultsIn
from forgetmap.contract.shards import ShardConfig
from forgetmap.core.answer_status import STATUSES
from forgetmap.core.errors import InputError
from forgetmap.demo.layouts.lighteval import write_lighteval_details
from forgetmap.demo.layouts.lm_eval import write_lm_eval_samples
from forgetmap.importers import read_source
from forgetmap.importers.lighteval import files as lighteval_files
from forgetmap.importers.lighteval import uniform
from forgetmap.importers.lighteval.reader import read_lighteval
from forgetmap.importers.lm_eval.reader import read_lm_eval
from forgetmap.importers.table import read_table
from forgetmap.worker.benchmarks.items import Item
from forgetmap.worker.engines.base import Generation
from forgetmap.worker.evaluate import _evaluate, generated_status
from pydantic import ValidationError

GSM8K = "lighteval|gsm8k|0"
MMLU = "leaderboard|mmlu:anatomy|5"
LAYOUTS = ["flat", "nested"]  # lighteval 0.10, 0.11+


def _stringified(path: Path, out: Path) -> Path:
    """The same details file with every cell stored as ``str(value)`` (lighteval's fallback):
    only the row reader reads it."""
    rows = pq.read_table(path).to_pylist()
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.Table.from_pylist([{k: str(v) for k, v in r.items()} for r in rows]), out / path.name
    )
    return out / path.name


def _lighteval_statuses(path: Path, tmp_path: Path) -> list[str | None]:
    """The statuses the reader gives, checked against its row reader's. A nested file is read
    by the kernels (a flat generative one, whose ``choices`` are empty lists, goes row by row)."""
    table, nested = lighteval_files.read_columns(path)
    if nested:
        uniform.uniform_table(table, nested, None)  # no _SlowPath
    by_kernels = read_lighteval(path, model="m", seed=0)
    by_rows = read_lighteval(_stringified(path, tmp_path / "text"), model="m", seed=0)
    assert by_kernels.to_pylist() == by_rows.to_pylist()
    return by_kernels["answer_status"].to_pylist()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_lighteval_empty_extraction_is_no_answer_and_a_cut_prompt_truncated(tmp_path, layout):
    # row 1: a chain of thought that ends before its answer (extracted_predictions == []);
    # row 2: lighteval cut 120 tokens from the prompt (truncated / truncated_tokens_count)
    path = write_lighteval_details(
        tmp_path, GSM8K, [1, 0, 0], schema=layout, kind="generative", no_answer={1}, prompt_cut={2}
    )
    rows = read_lighteval(path, model="m", seed=0).to_pylist()
    assert sorted(r["answer_status"] for r in rows) == ["answered", "no_answer", "truncated"]
    empty = next(r for r in rows if r["answer_status"] == "no_answer")
    assert not empty["correct"] and "final answer" not in empty["response"]
    cut = next(r for r in rows if r["answer_status"] == "truncated")
    assert cut["prediction"] is not None  # its answer was extracted: the prompt was cut, though
    assert sorted(_lighteval_statuses(path, tmp_path)) == ["answered", "no_answer", "truncated"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_lighteval_log_likelihood_rows_are_answered_unless_the_prompt_was_cut(tmp_path, layout):
    path = write_lighteval_details(tmp_path, MMLU, [1, 0, 1, 0], schema=layout, prompt_cut={3})
    statuses = read_lighteval(path, model="m", seed=0)["answer_status"].to_pylist()
    assert sorted(statuses) == ["answered"] * 3 + ["truncated"]
    assert sorted(_lighteval_statuses(path, tmp_path)) == ["answered"] * 3 + ["truncated"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_lighteval_a_text_graded_whole_says_nothing(tmp_path, layout):
    """No extractive metric (no extracted answers) and no prompt cut: the file says nothing."""
    path = write_lighteval_details(tmp_path, GSM8K, [1, 0], schema=layout, kind="generative")
    rows = pq.read_table(path).to_pylist()
    for row in rows:
        if layout == "flat":
            row["specifics"] = None
        else:
            row["doc"]["specific"] = None
    pq.write_table(pa.Table.from_pylist(rows), path)
    assert read_lighteval(path, model="m", seed=0)["answer_status"].to_pylist() == [None, None]
    assert _lighteval_statuses(path, tmp_path) == [None, None]


@pytest.mark.parametrize("chosen", ["strict-match", "flexible-extract"])
@pytest.mark.parametrize("style", ["dict", "list"])  # the list form goes to the row reader
def test_lm_eval_invalid_is_no_answer_under_either_filter(tmp_path, chosen, style):
    scores = {"strict-match": [1, 0, 0, 1], "flexible-extract": [1, 0, 1, 1]}
    write_lm_eval_samples(
        tmp_path, "gsm8k", scores, kind="generate_until", no_answer={1}, arguments_style=style
    )
    table = read_lm_eval(tmp_path, model="m", filter_name=chosen)
    assert table["prediction"].to_pylist()[1] == "[invalid]"
    # lm-eval logs no finish reason: never truncated
    assert table["answer_status"].to_pylist() == ["answered", "no_answer", "answered", "answered"]


def test_lm_eval_multiple_choice_is_answered(tmp_path):
    write_lm_eval_samples(tmp_path / "a", "mmlu_anatomy", [1, 0, 1])
    write_lm_eval_samples(tmp_path / "b", "mmlu_anatomy", [1, 0, 1], arguments_style="list")
    for folder in ("a", "b"):
        table = read_lm_eval(tmp_path / folder, model="m")
        assert table["answer_status"].to_pylist() == ["answered"] * 3


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "results.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_table_with_empty_predictions_beside_responses(tmp_path):
    path = _csv(
        tmp_path,
        "model,benchmark,sample_id,correct,response,prediction\n"
        "m,gsm8k,0,1,The answer is 72,72\n"
        "m,gsm8k,1,0,Let me think about it step by,\n"
        "m,gsm8k,2,0,,\n"
        "m,gsm8k,3,0,   ,7\n"
        "m,gsm8k,4,1,The answer is 5,\n",
    )
    # row 4 is right: its grader found the answer the table does not repeat
    assert read_table(path)["answer_status"].to_pylist() == [
        "answered",
        "no_answer",
        None,
        None,
        "answered",
    ]


def test_a_table_without_a_prediction_column_says_nothing(tmp_path):
    path = _csv(tmp_path, "model,benchmark,sample_id,correct,response\nm,b,0,0,some text\n")
    assert read_table(path)["answer_status"].to_pylist() == [None]


def test_a_table_answer_status_column_wins_and_truncated_still_reads(tmp_path):
    path = _csv(
        tmp_path,
        "model,benchmark,sample_id,correct,answer_status,truncated,response,"
        "prediction\n"
        "m,b,0,0,refused,,I cannot help with that,\n"
        "m,b,1,0, Truncated ,1,Let me,\n"
        "m,b,2,0,,1,Let me,\n"
        "m,b,3,0,,0,Let me,\n"
        "m,b,4,1,answered,0,B,B\n"
        "m,b,5,0,no_answer,,,\n",
    )
    assert read_table(path)["answer_status"].to_pylist() == [
        "refused",
        "truncated",
        "truncated",
        "no_answer",
        "answered",
        "no_answer",
    ]


def test_a_bad_answer_status_is_one_line_naming_the_file_row_and_values(tmp_path):
    path = _csv(
        tmp_path,
        "model,benchmark,sample_id,correct,answer_status\nm,b,0,1,answered\nm,b,1,0,cut off\n",
    )
    with pytest.raises(InputError) as info:
        read_table(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("results.csv: row 2: answer_status must be one of ")
    assert all(status in message for status in STATUSES) and "'cut off'" in message


def test_a_table_whose_truncated_and_answer_status_disagree_is_refused(tmp_path):
    path = _csv(
        tmp_path,
        "model,benchmark,sample_id,correct,answer_status,truncated\n"
        "m,b,0,0,truncated,1\nm,b,1,0,answered,1\n",
    )
    with pytest.raises(
        InputError,
        match=r"^results.csv: row 2: truncated is 1 but "
        r"answer_status is 'answered'",
    ):
        read_table(path)
    path = _csv(
        tmp_path, "model,benchmark,sample_id,correct,answer_status,truncated\nm,b,0,0,truncated,0\n"
    )
    with pytest.raises(InputError, match=r"row 1: truncated is 0 but answer_status is 'trunc"):
        read_table(path)


def _inspect_log(tmp_path: Path, task, answers: dict[str, tuple[str, str]]) -> Path:
    """One epoch of ``task`` on mockllm, each question answered (text, stop reason)."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    def reply(messages, tools, tool_choice, config) -> ModelOutput:  # mockllm's signature
        prompt = messages[-1].text
        text, stop = next(a for q, a in answers.items() if q in prompt)
        output = ModelOutput.from_content(model="mockllm/model", content=text, stop_reason=stop)
        output.usage = ModelUsage(input_tokens=5, output_tokens=5, total_tokens=10)
        return output

    previous = os.environ.get("INSPECT_LOG_DIR")
    os.environ["INSPECT_LOG_DIR"] = str(tmp_path)
    try:
        with ThreadPoolExecutor(1) as pool:  # inspect_ai runs its own event loop
            [log] = pool.submit(
                inspect_eval,
                task,
                model=get_model("mockllm/m", custom_outputs=reply),
                log_dir=str(tmp_path),
                display="none",
                max_samples=1,
            ).result()
    finally:
        if previous is None:
            os.environ.pop("INSPECT_LOG_DIR", None)
        else:
            os.environ["INSPECT_LOG_DIR"] = previous
    return Path(log.location)


def test_inspect_stop_reasons_and_scorers_without_an_answer(tmp_path):
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.scorer import choice, pattern
    from inspect_ai.solver import generate, multiple_choice

    options = ["w", "x", "y", "z"]
    mc = Task(
        name="arc",
        solver=multiple_choice(),
        scorer=choice(),
        dataset=MemoryDataset(
            [
                Sample(id=i, input=f"arc question {i}?", choices=options, target="A")
                for i in range(4)
            ]
        ),
    )
    sums = Task(
        name="sums",
        solver=generate(),
        scorer=pattern(r"ANSWER: (\d+)"),
        dataset=MemoryDataset(
            [Sample(id=i, input=f"sum number {i}.", target="2") for i in range(3)]
        ),
    )
    mc_log = _inspect_log(
        tmp_path / "mc",
        mc,
        {
            "arc question 0?": ("ANSWER: A", "stop"),
            "arc question 1?": ("ANSWER: B", "stop"),  # wrong, but an answer
            "arc question 2?": ("I am not sure which of these it is", "stop"),  # no ANSWER: line
            "arc question 3?": ("Let me weigh each option in", "max_tokens"),
        },
    )
    sums_log = _inspect_log(
        tmp_path / "sums",
        sums,
        {
            "sum number 0.": ("ANSWER: 2", "stop"),
            "sum number 1.": ("I would rather not", "stop"),  # pattern() finds nothing
            "sum number 2.": ("First add the", "model_length"),
        },
    )
    assert _statuses(mc_log) == {
        "0": "answered",
        "1": "answered",
        "2": "no_answer",
        "3": "truncated",
    }
    assert _statuses(sums_log) == {"0": "answered", "1": "no_answer", "2": "truncated"}


def _statuses(log: Path) -> dict[str, str | None]:
    rows = read_source("inspect", log, model=None).to_pylist()
    return {row["sample_id"]: row["answer_status"] for row in rows}


def test_the_upload_field_takes_the_statuses_and_the_older_flag():
    assert get_args(AnswerStatus) == STATUSES
    body = ResultsIn.model_validate(
        {
            "shard_id": 1,
            "rows": [
                {"sample_id": "a", "correct": True, "answer_status": "answered"},
                {"sample_id": "b", "correct": False, "answer_status": "no_answer"},
                {"sample_id": "c", "correct": False, "truncated": True},  # an older worker
                {"sample_id": "d", "correct": False, "truncated": False},
                {
                    "sample_id": "e",
                    "correct": False,
                    "truncated": True,
                    "answer_status": "truncated",
                },
                {"sample_id": "f", "correct": False},
            ],
        }
    )
    columns = body.columns()
    assert "truncated" not in columns
    assert columns["answer_status"] == [
        "answered",
        "no_answer",
        "truncated",
        None,
        "truncated",
        None,
    ]


@pytest.mark.parametrize(
    "row",
    [
        {"truncated": True, "answer_status": "no_answer"},
        {"truncated": False, "answer_status": "truncated"},
        {"answer_status": "cut"},
    ],
)
def test_an_upload_row_that_contradicts_itself_or_names_no_status_is_refused(row):
    with pytest.raises(ValidationError):
        ResultRow.model_validate({"sample_id": "a", "correct": False, **row})


@pytest.mark.parametrize(
    ("reason", "tokens", "prediction", "status"),
    [
        ("length", 32, "B", "truncated"),  # the engine says the limit ended it
        ("length", 12, None, "truncated"),
        ("stop", 32, "B", "answered"),  # a finish reason wins over the count
        ("stop", 32, None, "no_answer"),
        (None, 32, "B", "truncated"),  # no reason: every token allowed was used
        (None, 31, "B", "answered"),
        (None, None, "", "no_answer"),
        ("stop", 5, "  ", "no_answer"),
    ],
)
def test_the_worker_status_of_a_generated_answer(reason, tokens, prediction, status):
    assert generated_status(reason, tokens, 32, prediction) == status


class _Engine:
    """What ``_evaluate`` asks of an engine, answering from a script."""

    name = "scripted"

    def __init__(self, answers: list[tuple[str, str | None, int]]):
        self.answers = answers

    def apply_chat_template(self, messages) -> str:
        return "\n".join(m["content"] for m in messages)

    def generate(self, prompts, params) -> list[Generation]:
        return [Generation(text, 10, n, reason) for text, reason, n in self.answers]

    def choice_logprobs(self, contexts, choices) -> list[list[float]]:
        return [[-1.0, -0.5, -2.0, -3.0] for _ in contexts]


def test_the_worker_uploads_each_rows_status():
    items = [
        Item(
            benchmark="mmlu:anatomy",
            sample_id=f"s{i}",
            question=f"Q{i}?",
            choices=("a", "b", "c", "d"),
            gold="B",
            gold_index=1,
            category=None,
        )
        for i in range(3)
    ]
    engine = _Engine(
        [
            ("Answer: B", "stop", 3),
            ("I cannot tell which", "stop", 5),
            ("Let me think step by", "length", 32),
        ]
    )
    generate = ShardConfig(mode="generate", prompting="base", shots=0, max_tokens=32)
    rows = _evaluate(engine, items, items, generate, 0)
    assert [r.answer_status for r in rows] == ["answered", "no_answer", "truncated"]
    assert all(r.truncated is None for r in rows)
    loglik = ShardConfig(mode="loglik", prompting="base", shots=0, max_tokens=32)
    rows = _evaluate(engine, items, items, loglik, 0)
    assert [r.answer_status for r in rows] == ["answered"] * 3
