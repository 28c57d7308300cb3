"""lighteval details (v0.10 flat and v0.11+ nested parquet) and whole output trees.
``reader`` streams a tree's rows; ``files`` reads one details file's columns; ``rows`` is the
row-by-row reader for odd shapes; ``runs`` finds each run's seed in its results file."""
