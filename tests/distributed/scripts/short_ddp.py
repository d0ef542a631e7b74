"""A short 2-rank DDP run of a tiny model, for start-up and data-count failures.

    python short_ddp.py OUT_DIR sigterm-startup|uneven

sigterm-startup: each worker sleeps 60 s before building its Trainer (a slow start-up: imports, a
download), so a SIGTERM sent meanwhile reaches ranks that cannot yet stop cleanly.
uneven: each rank brings its own DistributedSampler over data of a different size (user-sharded data),
so rank 0 holds 10 batches and rank 1 holds 6.
Every process appends "<rank or driver> 0 <pid>" to OUT_DIR/pids.
"""

import os
import sys
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, DistributedSampler

import ember

out, mode = Path(sys.argv[1]), sys.argv[2]
with (out / "pids").open("a") as f:
    f.write(f"{os.environ.get('RANK', 'driver')} 0 {os.getpid()}\n")
if mode == "sigterm-startup" and "RANK" in os.environ:
    time.sleep(60)


class Tiny(ember.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


rank = int(os.environ.get("RANK", 0))
rows = 80 if rank == 0 else 48  # 2 ranks x batch 4: 10 and 6 batches
data = torch.randn(rows, 4)
loader = DataLoader(
    data,
    batch_size=4,
    sampler=DistributedSampler(data, num_replicas=2, rank=rank, shuffle=False)
    if "RANK" in os.environ
    else None,
)
trainer = ember.Trainer(
    strategy="ddp",
    devices=2,
    accelerator="cpu",
    max_epochs=2,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    default_root_dir=out,
)
trainer.fit(Tiny(), loader)
(out / "finished").write_text("trained")
