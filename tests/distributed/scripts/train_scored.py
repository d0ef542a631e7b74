"""A TorchTrainer run that reports a checkpoint and a score every epoch, for the checkpoint-management tests.

    python train_scored.py STORAGE_PATH NAME [--epochs N] [--num-to-keep K] [--score ATTR] [--order max|min]
                           [--sleep S] [--restore]

The "score" of epoch e is SCORES[e] (a fixed, non-monotonic sequence); each checkpoint holds the
model and optimizer state and the epoch, so a continued run resumes exactly. With --restore the
script calls TorchTrainer.restore(STORAGE_PATH/NAME, ...) instead of building the trainer (after its
first driver was killed). Prints one JSON line: the Result's fields.
"""

import argparse
import importlib.util
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import ember
from ember import train
from ember.train import Checkpoint, CheckpointConfig, RunConfig, ScalingConfig, TorchTrainer

SCORES = [0.3, 0.9, 0.5, 0.8, 0.1, 0.7, 0.6, 0.2]

p = argparse.ArgumentParser()
p.add_argument("storage")
p.add_argument("name")
p.add_argument("--epochs", type=int, default=5)
p.add_argument("--num-to-keep", type=int, default=None)
p.add_argument("--score", default=None)
p.add_argument("--order", default="max")
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--restore", action="store_true")
args = p.parse_args()

# load_digits' own file, read as it reads it, without importing scikit-learn (seconds at each start)
digits = np.loadtxt(
    Path(importlib.util.find_spec("sklearn").origin).parent / "datasets" / "data" / "digits.csv.gz",
    delimiter=",",
)
data = ember.data.from_items(
    [{"x": digits[i, :-1].astype("float32") / 16, "y": int(digits[i, -1])} for i in range(512)]
)


def loop(config):
    ctx = train.get_context()
    torch.manual_seed(0)
    model = train.prepare_model(torch.nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    start = 0
    checkpoint = train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            state = torch.load(Path(folder) / "state.pt", weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["epoch"] + 1
    shard = train.get_dataset_shard("train")
    for epoch in range(start, config["epochs"]):
        if ctx.get_world_rank() == 0:
            with open(Path(ctx.get_storage_path()) / "epochs_run", "a") as f:
                f.write(f"{epoch} {os.getpid()}\n")
        for batch in shard.iter_torch_batches(batch_size=64):
            loss = torch.nn.functional.cross_entropy(model(batch["x"]), batch["y"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        time.sleep(config["sleep"])
        with tempfile.TemporaryDirectory() as folder:
            if ctx.get_world_rank() == 0:
                torch.save(
                    {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
                    Path(folder) / "state.pt",
                )
            train.report(
                {"epoch": epoch, "score": SCORES[epoch], "loss": loss.item()},
                checkpoint=Checkpoint.from_directory(folder) if ctx.get_world_rank() == 0 else None,
            )


config = {"epochs": args.epochs, "sleep": args.sleep}
if args.restore:
    path = f"{args.storage.rstrip('/')}/{args.name}"
    assert TorchTrainer.can_restore(path), path
    trainer = TorchTrainer.restore(path, train_loop_per_worker=loop, datasets={"train": data})
else:
    trainer = TorchTrainer(
        loop,
        train_loop_config=config,
        datasets={"train": data},
        scaling_config=ScalingConfig(num_workers=2),
        run_config=RunConfig(
            name=args.name,
            storage_path=args.storage,
            checkpoint_config=CheckpointConfig(args.num_to_keep, args.score, args.order),
        ),
    )
result = trainer.fit()
with result.checkpoint.as_directory() as folder:
    final = torch.load(Path(folder) / "state.pt", weights_only=True)
best = None
if args.score:
    best = result.get_best_checkpoint(args.score, args.order)
    best = Path(best.path).name
print(
    json.dumps(
        {
            "path": result.path,
            "metrics": result.metrics,
            "checkpoint": Path(result.checkpoint.path).name,
            "best_checkpoints": [[Path(c.path).name, m] for c, m in result.best_checkpoints],
            "best": best,
            "dataframe": result.metrics_dataframe.to_dict(orient="list"),
            "error": result.error,
            "weights": [v.flatten().tolist() for v in final["model"].values()],
            "history": [m["epoch"] for m in result.metrics_history],
        }
    )
)
