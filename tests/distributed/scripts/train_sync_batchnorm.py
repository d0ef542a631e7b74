"""Linear -> BatchNorm1d -> Linear trained with Trainer(sync_batchnorm=True) (or False) under DDP on 2 CPU
processes; test_sync_batchnorm.py runs it.

    python train_sync_batchnorm.py OUT_DIR [--no-sync] [--steps S]

Rank zero writes OUT_DIR/final.pt: the weights, every rank's BatchNorm running statistics, the BatchNorm
layer's class. Every process appends "<rank or driver> 0 <pid>" to OUT_DIR/pids.
"""

import argparse
import os
from pathlib import Path

import torch
import torch.nn.functional as F

import ember

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--no-sync", action="store_true")
p.add_argument("--steps", type=int, default=3)
args = p.parse_args()
out = Path(args.out)
with (out / "pids").open("a") as f:
    f.write(f"{os.environ.get('RANK', 'driver')} 0 {os.getpid()}\n")


class Net(ember.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(5, 4), torch.nn.BatchNorm1d(4), torch.nn.Tanh(), torch.nn.Linear(4, 1)
        )

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


gen = torch.Generator().manual_seed(0)
x = torch.randn(64, 5, generator=gen) * torch.arange(1, 6)  # channels of different scales
y = x[:, :1].sin()
# 2 ranks x batch 8: the DistributedSampler ember adds shuffles (seed 0), as Lightning's does
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
torch.manual_seed(0)
model = Net()
trainer = ember.Trainer(
    strategy="ddp",
    devices=2,
    accelerator="cpu",
    max_steps=args.steps,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    enable_checkpointing=False,
    sync_batchnorm=not args.no_sync,
    default_root_dir=out,
)
trainer.fit(model, loader)
bn = model.net[1]
stats = [None] * trainer.world_size
torch.distributed.all_gather_object(stats, (bn.running_mean.clone(), bn.running_var.clone()))
if trainer.is_global_zero:
    torch.save(
        {"state_dict": model.state_dict(), "stats": stats, "bn_class": type(bn).__name__}, out / "final.pt"
    )
