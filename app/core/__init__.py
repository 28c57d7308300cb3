"""Pure building blocks, no I/O on the store: the metric, the taxonomy, sample identity and the
Arrow kernels the importers share. Nothing here imports from another room of app/ (``digests``
computes over an in-memory DuckDB, never a file). Modules are imported by name; this package
re-exports nothing, so importing one of them never loads the others."""
