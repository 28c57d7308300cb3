"""Every typed body that crosses a boundary (HTTP, queue, CLI, form): pydantic models with their
limits, written and read by the same classes on both sides. ``base`` (strict models, checking),
``limits`` (the ranges every entry point shares, without pydantic), ``jobs`` (what a job is made
of), ``job_in`` (the body of ``POST /api/jobs``, any kind), ``shards`` (a shard's spec, the worker's
calls about it), ``results`` (per-sample uploads), ``recovery`` (recoverability jobs and uploads),
``imports`` (an import's options and summary), ``errors``.

This package imports none of its modules: a command that needs one (``forgetmap import`` reads
``imports`` and ``limits``) does not pay for pydantic and every job model (0.17 s).
"""
