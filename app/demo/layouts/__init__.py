"""Synthetic evaluation output in the real layouts, for the benchmarks in bench/ and the tests:
lm-eval ``samples_*.jsonl`` and lighteval details parquet as each release writes them
(``lm_eval``, ``lighteval``, their shared documents in ``common``), one model's tree in the
paper's lighteval 0.10 layout (``paper``), and both Open LLM Leaderboard generations' details
datasets in huggingface_hub's cache layout (``leaderboard``)."""
