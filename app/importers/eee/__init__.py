"""Every Eval Ever (the EvalEval coalition's shared schema, 0.3.0): an aggregate JSON per
evaluation run and its instance-level sidecar ``<uuid>_samples.jsonl``. ``format`` holds what the
reader and the exporter (app/services/eee_export.py) share: the schema's version, the keys
forgetmap writes into an instance's ``metadata``, the seed rule; ``files`` finds instance files
and the aggregate each one names; ``reader`` streams their lines as normalized rows."""
