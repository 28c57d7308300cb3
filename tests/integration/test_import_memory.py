"""An import's peak memory is bounded by a batch, not by a task: one task 16 times larger (a
chain of thought of ~4,000 tokens per answer, as the paper's reasoning runs write them) imports
in a fresh ``forgetmap`` process within 1.25x + 150 MB of the small one's peak (issue 56's goal;
bench/import_scale.py --grow rows measures it at MMLU's size)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from forgetmap.demo.layouts.paper import make_items, write_run

TASK = "community|mmlu_reasoning_letter:main|0"
PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.stdout,
      done.stderr[-2000:])
"""


def _tree(out: Path, questions: int) -> Path:
    items = make_items("mmlu", questions)
    correct = [i % 3 == 0 for i in range(questions)]
    run, outcomes = "2025-07-01T10-00-00.000001", {TASK: (items, correct)}
    write_run(out, "org/model", run, outcomes, style="chat", seed=0, answer_tokens=4000)
    return out


def _import_peak_mb(tree: Path, db: Path) -> float:
    """Peak RSS (MB) of ``forgetmap import lighteval`` in a process of its own."""
    forgetmap = str(Path(sys.executable).with_name("forgetmap"))
    command = [forgetmap, "--db", str(db), "import", "lighteval", str(tree)]
    done = subprocess.run([sys.executable, "-c", PEAK, *command], capture_output=True, text=True)
    code, peak_kb, *output = done.stdout.split(" ", 2)
    assert code == "0", done.stdout + done.stderr
    assert "imported" in output[0], output
    return int(peak_kb) / 1024


def test_a_task_16_times_larger_imports_under_the_same_peak(tmp_path):
    small = _import_peak_mb(_tree(tmp_path / "x1", 500), tmp_path / "x1.duckdb")
    large = _import_peak_mb(_tree(tmp_path / "x16", 8000), tmp_path / "x16.duckdb")
    print(f"peak RSS: {small:.0f} MB at 500 questions, {large:.0f} MB at 8,000")
    assert large <= 1.25 * small + 150, (small, large)
