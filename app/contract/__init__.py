"""Every typed body that crosses a boundary (HTTP, queue, CLI, form): pydantic models with their
limits, written and read by the same classes on both sides. ``base`` (strict models, checking),
``jobs`` (what a job is made of), ``shards`` (a shard's spec, the worker's calls about it),
``results`` (per-sample uploads), ``recovery`` (recoverability jobs and uploads), ``errors``."""
