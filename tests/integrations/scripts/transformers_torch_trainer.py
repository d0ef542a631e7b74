"""A transformers.Trainer inside ember.train.TorchTrainer workers, with Ray's callback and prepare_trainer.

    python transformers_torch_trainer.py RESULTS_DIR

The training data travels Hugging Face dataset -> ember.data.from_huggingface -> each worker's
shard -> iter_torch_batches -> prepare_trainer; evaluation uses a Hugging Face dataset directly.
2 workers, 2 epochs; RayTrainReportCallback reports metrics and the checkpoint at each epoch's save.
"""

import json
import sys
from pathlib import Path

import datasets
import numpy as np
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _hf_models import digits_tokens, tiny_bert  # noqa: E402

import ember.data  # noqa: E402
from ember import train  # noqa: E402
from ember.train import RunConfig, ScalingConfig, TorchTrainer  # noqa: E402
from ember.train.huggingface.transformers import RayTrainReportCallback, prepare_trainer  # noqa: E402

RESULTS = Path(sys.argv[1])
BATCH, TRAIN_ROWS, WORKERS, EPOCHS = 50, 600, 2, 2
STEPS_PER_EPOCH = TRAIN_ROWS // WORKERS // BATCH


def stack_tokens(batch):
    """Fixed-length token lists arrive as an object array of rows; the model wants one (B, 64) array."""
    return {"input_ids": np.stack(batch["input_ids"]), "labels": batch["labels"]}


def train_func(config):
    tokens, labels = digits_tokens()
    evaluation = datasets.Dataset.from_dict({"input_ids": tokens[1500:], "labels": labels[1500:]})
    shard = train.get_dataset_shard("train")
    args = transformers.TrainingArguments(
        output_dir=config["output_dir"],
        max_steps=EPOCHS * STEPS_PER_EPOCH,
        learning_rate=2e-3,
        per_device_eval_batch_size=100,
        save_strategy="epoch",
        eval_strategy="epoch",
        logging_strategy="epoch",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    trainer = transformers.Trainer(
        model=tiny_bert(),
        args=args,
        eval_dataset=evaluation.with_format("torch"),
        train_dataset=shard.iter_torch_batches(batch_size=BATCH),
    )
    trainer.add_callback(RayTrainReportCallback())
    trainer = prepare_trainer(trainer)
    trainer.train()


if __name__ == "__main__":
    tokens, labels = digits_tokens()
    features = datasets.Features(
        {
            "input_ids": datasets.Sequence(datasets.Value("int64"), length=64),
            "labels": datasets.Value("int64"),
        }
    )
    hf_train = datasets.Dataset.from_dict(
        {"input_ids": tokens[:TRAIN_ROWS].tolist(), "labels": labels[:TRAIN_ROWS]}, features=features
    )
    result = TorchTrainer(
        train_func,
        train_loop_config={"output_dir": str(RESULTS / "hf_output")},
        datasets={"train": ember.data.from_huggingface(hf_train).map_batches(stack_tokens)},
        scaling_config=ScalingConfig(num_workers=WORKERS),
        run_config=RunConfig(name="hf", storage_path=str(RESULTS)),
    ).fit()
    print(
        json.dumps(
            {"metrics": result.metrics, "checkpoint": result.checkpoint.path if result.checkpoint else None}
        )
    )
