"""A 2-rank CPU DDP run for test_module_extras: all_gather and print from a Module under DDP.

    python _extras_ddp.py OUT_DIR

Each rank writes OUT_DIR/gathered-<rank>.pt: what all_gather returned for a tensor holding its rank, a
dict of them, and a number; the printed lines go to stdout (rank 0 only, as Lightning's self.print).
"""

import os
import sys
from pathlib import Path

import torch
from torch.utils.data import DataLoader

import ember

out = Path(sys.argv[1])


class Gathering(ember.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        if batch_idx == 0:
            rank = self.global_rank
            mine = torch.full((2,), float(rank))
            gathered = {
                "tensor": self.all_gather(mine),
                "dict": self.all_gather({"r": mine * 10}),
                "number": self.all_gather(rank + 1),
            }
            torch.save(gathered, out / f"gathered-{rank}.pt")
            self.print(f"printed by rank {rank}")
        return self.layer(batch).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = ember.Trainer(
    strategy="ddp",
    devices=2,
    accelerator="cpu",
    max_epochs=1,
    limit_train_batches=2,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    default_root_dir=out,
)
trainer.fit(Gathering(), DataLoader(torch.randn(16, 4), batch_size=4))
if os.environ.get("RANK", "0") == "0":
    (out / "finished").write_text("trained")
