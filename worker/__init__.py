"""The evaluation worker (Celery tasks running vLLM or transformers): built in the worker issue."""
