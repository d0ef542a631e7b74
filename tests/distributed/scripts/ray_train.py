"""A 2-worker ember TorchTrainer on a local Ray cluster that this script starts, bound to loopback only.

    python ray_train.py OUT_DIR    -> prints one JSON line: node addresses, metrics, checkpoint, session dir

The training data is an ember Dataset (converted to ray.data by ember), the validation data a
ray.data Dataset (accepted as is), and a third, ember Dataset every worker reads whole
(`DataConfig(datasets_to_split=["train", "valid"])`); each rank reports how many rows of each it got.
"""

import json
import os
import sys
import tempfile

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # before Ray starts: keep 127.0.0.1 as the node address

import ray  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import ember  # noqa: E402
from ember import train  # noqa: E402
from ember.train import Checkpoint, DataConfig, RunConfig, ScalingConfig  # noqa: E402
from ember.train.torch import TorchTrainer  # noqa: E402


def train_func(config):
    torch.manual_seed(0)
    model = train.torch.prepare_model(torch.nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
    rows = valid_rows = 0
    for batch in train.get_dataset_shard("train").iter_torch_batches(batch_size=4, dtypes=torch.float32):
        x = torch.stack([batch["a"], batch["b"]], dim=1)
        loss = torch.nn.functional.mse_loss(model(x), batch["y"].unsqueeze(1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        rows += len(x)
    for batch in train.get_dataset_shard("valid").iter_batches(batch_size=8):
        valid_rows += len(batch["a"])
    whole_rows = sum(len(batch["a"]) for batch in train.get_dataset_shard("whole").iter_batches(batch_size=8))
    ctx = train.get_context()
    counts = [torch.zeros(4) for _ in range(ctx.get_world_size())]
    dist.all_gather(
        counts, torch.tensor([float(rows), float(valid_rows), float(os.getpid()), float(whole_rows)])
    )
    with tempfile.TemporaryDirectory() as folder:
        if ctx.get_world_rank() == 0:
            torch.save(model.module.state_dict(), os.path.join(folder, "model.pt"))
        train.report(
            {
                "loss": loss.item(),
                "world_size": ctx.get_world_size(),
                "rows_per_rank": [int(c[0]) for c in counts],
                "valid_rows_per_rank": [int(c[1]) for c in counts],
                "pids": [int(c[2]) for c in counts],
                "whole_rows_per_rank": [int(c[3]) for c in counts],
            },
            checkpoint=Checkpoint.from_directory(folder),
        )


# address="local": always a new cluster of our own, never one somebody else started on this machine
ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=2)
addresses = sorted({node["NodeManagerAddress"] for node in ray.nodes()})
session_dir = ray._private.worker._global_node.get_session_dir_path()
rows = [{"a": i / 40, "b": 1 - i / 40, "y": 3 * i / 40 + 1} for i in range(41)]  # 41: not divisible by 2
result = TorchTrainer(
    train_func,
    train_loop_config={"lr": 0.1},
    datasets={
        "train": ember.data.from_items(rows),
        "valid": ray.data.from_items(rows[:10]),
        "whole": ember.data.from_items(rows[:6]),
    },
    dataset_config=DataConfig(datasets_to_split=["train", "valid"]),
    scaling_config=ScalingConfig(num_workers=2, resources_per_worker={"CPU": 0.5}),  # 1 CPU left for Ray Data
    run_config=RunConfig(name="ray_run", storage_path=sys.argv[1]),
).fit()
print(
    json.dumps(
        {
            "addresses": addresses,
            "metrics": result.metrics,
            "session_dir": session_dir,
            "checkpoint_files": sorted(os.listdir(result.checkpoint.path)),
            "driver_pid": os.getpid(),
        }
    )
)
ray.shutdown()
