"""Where runs already are: the Trainer/TRL callback and the trackers (W&B, MLflow, TensorBoard)
that forgetting is written back to (docs/integrations.md)."""
