"""One TorchTrainer program run three ways by tests/train/test_local_workers.py: as a file, as
`python -c "<this text>"` and piped on stdin (`python - < this file`). The workers must run only
`train_func` (never this text again): every run of the top level appends a line to OUT/toplevel.

    python train_func_anywhere.py OUT
"""

import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow.csv
import torch

import ember
from ember import train
from ember.train import RunConfig, ScalingConfig, TorchTrainer

OUT = Path(sys.argv[1])
with (OUT / "toplevel").open("a") as f:
    f.write(f"{os.getpid()}\n")

CSV = Path(importlib.util.find_spec("sklearn").origin).parent / "datasets" / "data" / "breast_cancer.csv"
COLUMNS = [f"f{i}" for i in range(30)] + ["target"]
data = ember.data.read_csv(CSV, read_options=pyarrow.csv.ReadOptions(skip_rows=1, column_names=COLUMNS))
table = data.to_arrow()
features = np.stack([table[c].to_numpy() for c in COLUMNS[:-1]], axis=1)
MEAN, STD = features.mean(axis=0), features.std(axis=0)  # globals the function uses: they travel by value


def train_func(config):
    rank = train.get_context().get_world_rank()
    torch.manual_seed(0)
    model = train.prepare_model(torch.nn.Sequential(torch.nn.Linear(30, 1), torch.nn.Sigmoid()))
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"])
    mean, std = torch.tensor(MEAN, dtype=torch.float32), torch.tensor(STD, dtype=torch.float32)
    shard = train.get_dataset_shard("train")
    for epoch in range(config["epochs"]):
        rows, total = 0, 0.0
        for batch in shard.iter_torch_batches(batch_size=64, dtypes=torch.float32):
            x = (torch.stack([batch[c] for c in COLUMNS[:-1]], dim=1) - mean) / std
            loss = torch.nn.functional.binary_cross_entropy(model(x), batch["target"].unsqueeze(1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            rows, total = rows + len(x), total + loss.item() * len(x)
        with (OUT / f"rank_{rank}").open("a") as f:
            seen = {"epoch": epoch, "rows": rows, "pid": os.getpid(), "ppid": os.getppid()}
            seen.update(threads=torch.get_num_threads(), omp=os.environ.get("OMP_NUM_THREADS"))
            f.write(json.dumps(seen) + "\n")
        train.report(
            {
                "epoch": epoch,
                "loss": total / rows,
                "rows": rows,
                "world_size": train.get_context().get_world_size(),
            }
        )


result = TorchTrainer(
    train_func,
    train_loop_config={"epochs": 3, "lr": 0.1},
    datasets={"train": data},
    scaling_config=ScalingConfig(num_workers=2),
    run_config=RunConfig(name="run", storage_path=str(OUT)),
).fit()
print(json.dumps({"driver_pid": os.getpid(), "history": result.metrics_history, "metrics": result.metrics}))
