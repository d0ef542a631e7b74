"""A one-worker TorchTrainer run that reports a checkpoint every epoch, keeping one (num_to_keep=1).

    python train_tiny_run.py STORAGE EPOCHS [--restore]

With --restore the run folder STORAGE/exp is restored (TorchTrainer.restore) and trained up to EPOCHS.

Prints one JSON line: the result's path, metrics and checkpoint folder name.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

import torch

import ember
from ember import train
from ember.train import Checkpoint, CheckpointConfig, RunConfig, ScalingConfig, TorchTrainer

storage = sys.argv[1]
os.environ["TINY_EPOCHS"] = sys.argv[2]  # the workers inherit it (a restored run keeps its first config)
data = ember.data.from_items([{"x": [float(i)], "y": [2.0 * i]} for i in range(16)])


def loop(config):
    model = torch.nn.Linear(1, 1)
    start = 0
    checkpoint = train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            start = torch.load(Path(folder) / "state.pt", weights_only=True)["epoch"] + 1
    for epoch in range(start, int(os.environ["TINY_EPOCHS"])):
        with tempfile.TemporaryDirectory() as folder:
            torch.save({"model": model.state_dict(), "epoch": epoch}, Path(folder) / "state.pt")
            train.report({"epoch": epoch}, checkpoint=Checkpoint.from_directory(folder))


if "--restore" in sys.argv:
    trainer = TorchTrainer.restore(
        f"{storage.rstrip('/')}/exp", train_loop_per_worker=loop, datasets={"train": data}
    )
else:
    trainer = TorchTrainer(
        loop,
        datasets={"train": data},
        scaling_config=ScalingConfig(num_workers=1),
        run_config=RunConfig(
            name="exp", storage_path=storage, checkpoint_config=CheckpointConfig(num_to_keep=1)
        ),
    )
result = trainer.fit()
print(
    json.dumps(
        {"path": result.path, "metrics": result.metrics, "checkpoint": Path(result.checkpoint.path).name}
    )
)
