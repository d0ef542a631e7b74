"""A TorchTrainer run whose RunConfig(storage_path=...) is given on the command line (s3://... or a folder).

    python train_to_storage.py STORAGE EPOCHS

The loop resumes from train.get_checkpoint() (the run's newest reported checkpoint, which for an
object store comes back from the store) and reports a checkpoint every epoch. Prints one JSON line:
the result's path and metrics and the final weights.
"""

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

import ember
from ember import train
from ember.train import Checkpoint, RunConfig, ScalingConfig, TorchTrainer

rng = np.random.default_rng(0)
x = rng.normal(size=(128, 8)).astype(np.float32)
y = (x @ rng.normal(size=(8, 1)).astype(np.float32)).astype(np.float32)


def loop(config):
    torch.manual_seed(0)
    model = train.prepare_model(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    start = 0
    checkpoint = train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            state = torch.load(Path(folder) / "state.pt", weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["epoch"] + 1
    for epoch in range(start, config["epochs"]):
        for batch in train.get_dataset_shard("train").iter_torch_batches(batch_size=16):
            loss = torch.nn.functional.mse_loss(model(batch["x"]), batch["y"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with tempfile.TemporaryDirectory() as folder:
            torch.save(
                {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
                Path(folder) / "state.pt",
            )
            train.report({"epoch": epoch, "loss": loss.item()}, checkpoint=Checkpoint.from_directory(folder))


trainer = TorchTrainer(
    loop,
    train_loop_config={"epochs": int(sys.argv[2])},
    datasets={"train": ember.data.from_items([{"x": a, "y": b} for a, b in zip(x, y, strict=True)])},
    scaling_config=ScalingConfig(num_workers=1),  # the driver alone talks to the store
    run_config=RunConfig(name="exp", storage_path=sys.argv[1]),
)
result = trainer.fit()
with result.checkpoint.as_directory() as folder:
    weights = torch.load(Path(folder) / "state.pt", weights_only=True)["model"]
print(
    json.dumps(
        {
            "path": result.path,
            "metrics": result.metrics,
            "weights": {k: v.flatten().tolist() for k, v in weights.items()},
        }
    )
)
