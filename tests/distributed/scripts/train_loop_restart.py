"""A TorchTrainer train loop that checkpoints every epoch; with --kill-at E, rank 1 SIGKILLs itself at
the start of epoch E on the first attempt, and FailureConfig(max_failures=1) restarts both workers.

    python train_loop_restart.py OUT_DIR [--kill-at E] [--epochs N]

Prints one JSON line: the result's metrics and history, the final weights, and which (attempt, epoch)
each rank ran. The driver and every worker append "<rank or driver> <attempt> <pid>" to OUT_DIR/pids.
"""

import argparse
import json
import os
import signal
import tempfile
from pathlib import Path

import numpy as np
import torch

import ember
from ember import train
from ember.train import Checkpoint, FailureConfig, RunConfig, ScalingConfig, TorchTrainer

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--kill-at", type=int, default=-1)
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--max-failures", type=int, default=1)
args = p.parse_args()
out = Path(args.out)
with (out / "pids").open("a") as f:
    f.write(f"driver 0 {os.getpid()}\n")

rng = np.random.default_rng(0)
x = rng.normal(size=(256, 8)).astype(np.float32)
y = (x @ rng.normal(size=(8, 1)).astype(np.float32) + 0.1).astype(np.float32)


def loop(config):
    rank = train.get_context().get_world_rank()
    attempt = int(os.environ.get("EMBER_RESTART_COUNT", 0))  # read here: the workers never run the top level
    with (out / "pids").open("a") as f:
        f.write(f"{rank} {attempt} {os.getpid()}\n")
    torch.manual_seed(0)
    model = train.prepare_model(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)  # momentum: state that must resume
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
        with (out / "epochs").open("a") as f:
            f.write(f"{rank} {attempt} {epoch}\n")
        if attempt == 0 and rank == 1 and epoch == config["kill_at"]:
            os.kill(os.getpid(), signal.SIGKILL)
        for batch in shard.iter_torch_batches(batch_size=32):
            loss = torch.nn.functional.mse_loss(model(batch["x"]), batch["y"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with tempfile.TemporaryDirectory() as folder:
            if rank == 0:
                torch.save(
                    {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
                    Path(folder) / "state.pt",
                )
            train.report(
                {"epoch": epoch, "loss": loss.item()},
                checkpoint=Checkpoint.from_directory(folder) if rank == 0 else None,
            )


trainer = TorchTrainer(
    loop,
    train_loop_config={"epochs": args.epochs, "kill_at": args.kill_at},
    datasets={"train": ember.data.from_items([{"x": x[i], "y": y[i]} for i in range(len(x))])},
    scaling_config=ScalingConfig(num_workers=2),
    run_config=RunConfig(
        name="run", storage_path=str(out), failure_config=FailureConfig(max_failures=args.max_failures)
    ),
)
result = trainer.fit()
with result.checkpoint.as_directory() as folder:
    weights = torch.load(Path(folder) / "state.pt", weights_only=True)["model"]
epochs = [tuple(map(int, line.split())) for line in (out / "epochs").read_text().splitlines()]
print(
    json.dumps(
        {
            "metrics": result.metrics,
            "history": [m["epoch"] for m in result.metrics_history],
            "weights": {k: v.flatten().tolist() for k, v in weights.items()},
            "epochs": sorted(epochs),
        }
    )
)
