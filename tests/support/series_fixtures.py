"""A hand-built training run: a base model and checkpoints at steps 1-4, three seeds each.

mixbench (Knowledge/QA) has four questions with mixed option counts (s0, s1: k = 2; s2, s3: k = 4);
genbench (Math) has two generative questions. Correctness per seed (seeds 0, 1, 2):

    model   mixbench s0..s3                      genbench g0, g1
    base    1110 | 1110 | 1110                   11 | 11 | 11
    step 1  1110 | 1110 | 1110                   11 | 11 | 11
    step 2  0110 | 0110 | 1100                   10 | 11 | 10
    step 3  0111 | 0111 | 0111                   10 | 10 | 10
    step 4  1011 | 1011 | 1011                   11 | 11 | 11

Question fates (known = correct in at least half of the seeds): s0 forgotten at step 2 and
relearned at 4; g1 the same; s1 forgotten at step 4 and never recovered; s3 learned; s2, g0 kept.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

MIX = {
    "base": ["1110", "1110", "1110"],
    "run-step1": ["1110", "1110", "1110"],
    "run-step2": ["0110", "0110", "1100"],
    "run-step3": ["0111", "0111", "0111"],
    "run-step4": ["1011", "1011", "1011"],
}
GEN = {
    "base": ["11", "11", "11"],
    "run-step1": ["11", "11", "11"],
    "run-step2": ["10", "11", "10"],
    "run-step3": ["10", "10", "10"],
    "run-step4": ["11", "11", "11"],
}
MIX_K = [2, 2, 4, 4]
CHECKPOINTS = [("run-step1", 1), ("run-step2", 2), ("run-step3", 3), ("run-step4", 4)]


def write_results(path: Path) -> Path:
    rows: dict[str, list] = {
        k: []
        for k in (
            "model",
            "benchmark",
            "sample_id",
            "seed",
            "correct",
            "num_choices",
            "category",
            "prompt",
        )
    }
    for model in MIX:
        for seed in range(3):
            for bench, data, category in (
                ("mixbench", MIX, "Knowledge/QA"),
                ("genbench", GEN, "Math"),
            ):
                for i, bit in enumerate(data[model][seed]):
                    rows["model"].append(model)
                    rows["benchmark"].append(bench)
                    rows["sample_id"].append(f"{'s' if bench == 'mixbench' else 'g'}{i}")
                    rows["seed"].append(seed)
                    rows["correct"].append(bit == "1")
                    rows["num_choices"].append(MIX_K[i] if bench == "mixbench" else None)
                    rows["category"].append(category)
                    rows["prompt"].append(f"question {i} of {bench}")
    table = pa.table(rows)
    table = table.set_column(5, "num_choices", pa.array(rows["num_choices"], pa.int64()))
    pq.write_table(table, path)
    return path


def load_run(cli, tmp_path: Path, name: str = "run") -> None:
    """Import the results and add series ``name`` with its four checkpoints."""
    cli("import", "table", write_results(tmp_path / "run.parquet"))
    args = []
    for model, step in CHECKPOINTS:
        args += ["--checkpoint", f"{model}@{step}"]
    cli("series", "add", name, "--base", "base", *args)


def store_as_sweep(db: Path, name: str) -> None:
    """Store the imported run a second time as a merge sweep ``name``: its checkpoints at steps
    1-4 become mixes 0.25, 0.5, 0.75 and 1 (steps 250 to 1000 of a series along the mix)."""
    from forgetmap.db import open_store
    from forgetmap.db import series as series_db

    store = open_store(db)
    try:
        with store.transaction() as conn:
            steps = [(model, 250 * step) for model, step in CHECKPOINTS]
            series_db.add_checkpoints(conn, name, "base", steps, stage="merge", axis="mix")
    finally:
        store.close()
