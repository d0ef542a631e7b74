"""TorchTrainer with Ray Train's TorchConfig and DataConfig, 2 local workers
(tests/train/test_torch_config.py): each rank writes what its group is
(backend, collective timeout) and which rows of each dataset it read.

    python train_func_configs.py OUT
"""

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist

import ember
from ember import train
from ember.train import DataConfig, RunConfig, ScalingConfig, TorchTrainer
from ember.train.torch import TorchConfig

OUT = Path(sys.argv[1])


def train_func():
    rank = train.get_context().get_world_rank()
    group = dist.distributed_c10d._get_default_group()
    seen = {
        name: sorted(
            int(i) for batch in train.get_dataset_shard(name).iter_batches(batch_size=4) for i in batch["id"]
        )
        for name in ("train", "valid")
    }
    (OUT / f"rank_{rank}.json").write_text(
        json.dumps(
            {
                "backend": dist.get_backend(),
                "timeout_s": group._get_backend(torch.device("cpu")).options._timeout.total_seconds(),
                "seen": seen,
            }
        )
    )
    train.report({"rank": rank})


TorchTrainer(
    train_func,
    datasets={"train": ember.data.range(10), "valid": ember.data.range(6)},
    scaling_config=ScalingConfig(num_workers=2),
    torch_config=TorchConfig(backend="gloo", timeout_s=42),
    dataset_config=DataConfig(datasets_to_split=["train"]),
    run_config=RunConfig(name="run", storage_path=str(OUT)),
).fit()
