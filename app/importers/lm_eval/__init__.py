"""lm-eval ``--log_samples`` output (samples_*.jsonl, every release from 0.4.0).
``reader`` streams a tree's rows; ``rows`` is the row-by-row reader; ``filters`` names each line's
filter; ``legacy`` finds 0.4.0-0.4.2 runs."""
