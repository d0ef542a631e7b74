"""Seed 002: the Ray Data + PyTorch guide's TorchTrainer example, with `ray` replaced by `ember`.

    python examples/distributed/seed_002_torch_trainer.py [RESULTS_DIR]

Differences from the guide, and why:
- the breast-cancer CSV is the one scikit-learn ships on disk (no S3 here). Its first line is
  "569,30,malignant,benign" rather than column names, so read_options names the 30 features and
  the target, exactly the columns the guide's file has;
- the loop reports its loss at the end of each epoch, so the result has metrics to show.
Everything else (model, loss, optimizer, iter_torch_batches(batch_size=128, dtypes=torch.float32),
ScalingConfig(num_workers=2)) is the guide's code.
"""

import importlib.util
import sys
from pathlib import Path

import pyarrow.csv
import torch
from torch import nn

import ember
from ember import train
from ember.train import RunConfig, ScalingConfig
from ember.train.torch import TorchTrainer

# Located without importing scikit-learn (that import alone takes seconds, in every worker).
CSV = Path(importlib.util.find_spec("sklearn").origin).parent / "datasets" / "data" / "breast_cancer.csv"
COLUMNS = [f"feature_{i}" for i in range(30)] + ["target"]


def train_func(config):
    model = nn.Sequential(nn.Linear(30, 1), nn.Sigmoid())
    loss_fn = torch.nn.BCELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)

    # Datasets can be accessed in your train_func via ``get_dataset_shard``.
    train_data_shard = train.get_dataset_shard("train")

    for epoch_idx in range(2):
        for batch in train_data_shard.iter_torch_batches(batch_size=128, dtypes=torch.float32):
            features = torch.stack([batch[col_name] for col_name in batch.keys() if col_name != "target"], axis=1)  # noqa: SIM118 (the guide's code)
            predictions = model(features)
            train_loss = loss_fn(predictions, batch["target"].unsqueeze(1))
            train_loss.backward()
            optimizer.step()
        train.report({"epoch": epoch_idx, "loss": train_loss.item(), "rank": train.get_context().get_world_rank()})


train_dataset = ember.data.read_csv(CSV, read_options=pyarrow.csv.ReadOptions(skip_rows=1, column_names=COLUMNS))
trainer = TorchTrainer(
    train_func,
    datasets={"train": train_dataset},
    scaling_config=ScalingConfig(num_workers=2),
    run_config=RunConfig(name="seed_002", storage_path=sys.argv[1] if len(sys.argv) > 1 else None),
)
result = trainer.fit()
print(f"seed 002 finished: {result.metrics}")
