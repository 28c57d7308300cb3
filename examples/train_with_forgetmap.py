"""Fine-tune a causal LM with Hugging Face Trainer and let forgetmap evaluate every checkpoint.

The three lines a training script adds are marked "forgetmap". Each saved checkpoint joins the
series; its per-category F_true / BT_true come back into the W&B / MLflow / TensorBoard run at its
training step. Needs a running app and worker (`forgetmap up`), a submit token in
$FORGETMAP_API_TOKEN, and `pip install 'forgetmap[trainer,trackers]'`.

    python examples/train_with_forgetmap.py --model ./models/base --output-dir ./out \\
        --series my-sft --base base --benchmarks mmlu --staging-dir ./models/staging

The tests run this very script on a tiny model (tests/integration/test_trainer_callback.py).
"""

from __future__ import annotations

import argparse


def training_texts(tokenizer, count: int) -> list[dict]:
    """A toy instruction set: short question/answer chats, tokenized for causal LM training."""
    facts = [
        ("capital of France", "Paris"),
        ("red planet", "Mars"),
        ("two plus three", "five"),
        ("freezing point of water in Celsius", "0"),
    ]
    rows = []
    for i in range(count):
        topic, answer = facts[i % len(facts)]
        ids = tokenizer(f"Question: What is the {topic}? Answer: {answer}")["input_ids"]
        rows.append({"input_ids": ids, "labels": ids})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="the base model's folder")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--series", required=True)
    parser.add_argument("--base", required=True, help="the base model's name in forgetmap")
    parser.add_argument("--benchmarks", required=True, help="comma-separated")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--engine", default="vllm", choices=["vllm", "transformers"])
    parser.add_argument("--max-tokens", type=int, default=2048)
    parser.add_argument("--staging-dir", help="a folder under one of the app's model roots")
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--save-steps", type=int, default=50)
    parser.add_argument("--save-total-limit", type=int, default=1)
    parser.add_argument("--report-to", default="wandb,mlflow,tensorboard")
    parser.add_argument("--wait-at-end", type=float, default=600.0)
    parser.add_argument("--poll-every", type=float, default=30.0)
    opts = parser.parse_args()

    from forgetmap import ForgetmapCallback  # forgetmap
    from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

    tokenizer = AutoTokenizer.from_pretrained(opts.model)
    model = AutoModelForCausalLM.from_pretrained(opts.model)
    args = TrainingArguments(
        output_dir=opts.output_dir,
        max_steps=opts.max_steps,
        save_steps=opts.save_steps,
        save_total_limit=opts.save_total_limit,
        per_device_train_batch_size=1,
        learning_rate=1e-3,
        logging_steps=1,
        report_to=opts.report_to.split(","),
        seed=0,
        use_cpu=True,
        save_only_model=True,
    )
    callback = ForgetmapCallback(  # forgetmap
        opts.series,
        base=opts.base,
        base_path=opts.model,
        benchmarks=opts.benchmarks.split(","),
        seeds=[int(s) for s in opts.seeds.split(",")],
        staging_dir=opts.staging_dir,
        config={"engine": opts.engine, "max_tokens": opts.max_tokens},
        poll_every=opts.poll_every,
        wait_at_end=opts.wait_at_end,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=training_texts(tokenizer, opts.max_steps),
        processing_class=tokenizer,  # saved in each checkpoint: the evaluation needs it
        callbacks=[callback],  # forgetmap
    )
    trainer.train()


if __name__ == "__main__":
    main()
