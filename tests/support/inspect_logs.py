"""Genuine inspect_ai eval logs for the tests, written by inspect_ai itself, offline.

Each log comes from ``inspect_ai.eval`` running a small ``Task`` (a ``MemoryDataset`` of
``Sample``\\ s) on the ``mockllm`` provider, whose answers a callable gives: ``answers[question]``
is the list of the model's answers to that question, one per epoch. Samples run one at a time
(``max_samples=1``), so each question's epochs run in order and epoch e gets ``answers[q][e-1]``.

Run as a script, it writes the large log of the memory measurement:

    python -m tests.support.inspect_logs big DIR [--samples 2000] [--chars 20000] [--format eval]
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, Target, accuracy, match, scorer
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

LETTERS = "ABCDEFGHIJ"


def reply_with(answers: dict[str, Sequence[str]]):
    """mockllm's ``custom_outputs``: the next answer to the question the prompt holds (every
    question text must be distinct, and no question may contain another)."""
    asked: dict[str, int] = defaultdict(int)

    def reply(messages, tools, tool_choice, config) -> ModelOutput:  # mockllm's signature
        prompt = messages[-1].text
        question = next(q for q in answers if q in prompt)
        text = answers[question][asked[question]]
        asked[question] += 1
        output = ModelOutput.from_content(model="mockllm/model", content=text)
        # with usage given, mockllm counts no tokens (which would download a tokenizer)
        output.usage = ModelUsage(
            input_tokens=len(prompt), output_tokens=len(text), total_tokens=len(prompt) + len(text)
        )
        return output

    return reply


def run_eval(
    tasks: Task | list[Task],
    model: str,
    answers: dict[str, Sequence[str]],
    log_dir: Path,
    *,
    log_format: str = "eval",
    epochs: int = 2,
    **options: Any,
) -> dict[str, Path]:
    """Run the tasks on ``mockllm/<model>`` answering from ``answers``; {task name: its log}."""
    log_dir.mkdir(parents=True, exist_ok=True)
    previous = os.environ.get("INSPECT_LOG_DIR")
    os.environ["INSPECT_LOG_DIR"] = str(log_dir)
    try:
        # in a thread of its own: inspect_ai runs its own event loop, and the test session's
        # Chromium (Playwright's sync API) keeps one running on the main thread
        with ThreadPoolExecutor(1) as pool:
            logs = pool.submit(
                inspect_eval,
                tasks,
                model=get_model(f"mockllm/{model}", custom_outputs=reply_with(answers)),
                log_format=log_format,
                log_dir=str(log_dir),
                epochs=epochs,
                display="none",
                max_samples=1,
                **options,
            ).result()
    finally:
        if previous is None:
            os.environ.pop("INSPECT_LOG_DIR", None)
        else:
            os.environ["INSPECT_LOG_DIR"] = previous
    return {log.eval.task: Path(log.location) for log in logs}


def mc_answer(sample: Sample, right: bool) -> str:
    """What ``multiple_choice()`` reads as the right option, or as the next (wrong) one."""
    target = LETTERS.index(str(sample.target))
    letter = LETTERS[target if right else (target + 1) % len(sample.choices or [])]
    return f"ANSWER: {letter}"


@scorer(metrics=[accuracy()])
def from_metadata():
    """A scorer whose value is the sample's ``metadata["value"]`` (a letter, a number, a bool or a
    dict), and whose answer is the model's completion."""

    async def score(state: TaskState, target: Target) -> Score:
        return Score(value=state.metadata["value"], answer=state.output.completion)

    return score


@solver
def failing_on(question: str) -> Solver:
    """``generate()``, except that the sample asking ``question`` fails."""

    async def solve(state: TaskState, generate_: Generate) -> TaskState:
        if state.input_text == question:
            raise RuntimeError(f"the tool broke on {question}")
        return await generate_(state)

    return solve


def big_log(folder: Path, samples: int, chars: int, log_format: str = "eval") -> Path:
    """One run of ``samples`` questions, each answered with ``chars`` characters (``match()``
    keeps the whole answer as its extracted answer and explanation too)."""
    questions = [f"question {i:05d}." for i in range(samples)]
    answers = {q: [(q + " ") * (chars // (len(q) + 1))] for q in questions}
    dataset = MemoryDataset([Sample(id=i, input=q, target="2") for i, q in enumerate(questions)])
    task = Task(name="long_answers", dataset=dataset, solver=generate(), scorer=match())
    return run_eval(task, "big", answers, folder, log_format=log_format, epochs=1)["long_answers"]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="write the large log of the memory measurement")
    parser.add_argument("what", choices=["big"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--chars", type=int, default=20_000)
    parser.add_argument("--format", default="eval", choices=["eval", "json"])
    args = parser.parse_args()
    print(big_log(args.folder, args.samples, args.chars, args.format))
