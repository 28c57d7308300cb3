"""forgetmap demo: a procedural benchmark suite and a zoo of tiny models trained on the CPU in
which post-training forgetting really happens (suite, trainer, zoo, evaluate)."""
