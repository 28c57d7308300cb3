"""Benchmarks of the evaluation worker: registry, loaders, prompts, answer extraction, grading."""
