"""What `trainer.callback_metrics` holds under 2-process CPU DDP for values logged with sync_dist=True, read
by a callback mid-epoch, at the epoch-end hooks and after the run; the same module under ember or Lightning.

    python sync_dist_metrics.py OUT_DIR ember|lightning

Each rank logs values built from its rank, so a value that was not reduced differs between the ranks. Each
rank writes OUT_DIR/<library>-<rank>.json: {moment: {name: value}}.
"""

import json
import os
import sys
import warnings
from pathlib import Path

import torch
from torch.utils.data import DataLoader

warnings.filterwarnings("ignore")
out, library = Path(sys.argv[1]), sys.argv[2]
if library == "lightning":
    import lightning.pytorch as pl

    Base = pl.LightningModule
else:
    import ember as pl

    Base = pl.Module
seen: dict = {}


def snap(trainer, moment):
    seen[moment] = {k: round(float(v), 4) for k, v in sorted(trainer.callback_metrics.items())}


class Spy(pl.Callback):
    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if batch_idx == 1:  # between flushes (log_every_n_steps=50)
            snap(trainer, "train_batch_end")

    def on_train_epoch_end(self, trainer, module):
        snap(trainer, "train_epoch_end")

    def on_validation_epoch_end(self, trainer, module):
        snap(trainer, "validation_epoch_end")


class Ranked(Base):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        rank = float(self.global_rank)
        self.log("s_step", torch.tensor(rank + batch_idx), sync_dist=True)
        self.log("s_epoch", torch.tensor(rank * 10 + batch_idx), on_step=False, on_epoch=True, sync_dist=True)
        self.log(
            "s_both", torch.tensor(rank * 4.0), on_step=True, on_epoch=True, sync_dist=True, reduce_fx="max"
        )
        self.log(
            "s_sum", torch.tensor(rank + 1.0), on_step=True, on_epoch=True, sync_dist=True, reduce_fx="sum"
        )
        self.log("own", torch.tensor(rank))
        return self.layer(batch).pow(2).mean()

    def validation_step(self, batch, batch_idx):
        self.log("v", torch.tensor(float(self.global_rank) * 2 + batch_idx), sync_dist=True)

    def on_train_epoch_end(self):
        self.log("e", torch.tensor(float(self.global_rank) * 6), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = pl.Trainer(
    max_epochs=1,
    limit_train_batches=3,
    limit_val_batches=2,
    num_sanity_val_steps=0,
    strategy="ddp",
    devices=2,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    log_every_n_steps=50,
    callbacks=[Spy()],
    default_root_dir=out,
)
trainer.fit(
    Ranked(), DataLoader(torch.randn(32, 2), batch_size=4), DataLoader(torch.randn(32, 2), batch_size=4)
)
snap(trainer, "after_fit")
seen["validate_result"] = trainer.validate(
    trainer.lightning_module, DataLoader(torch.randn(32, 2), batch_size=4), verbose=False
)
snap(trainer, "after_validate")
(out / f"{library}-{trainer.global_rank}.json").write_text(json.dumps(seen, sort_keys=True))
if os.environ.get("RANK", "0") == "0":
    (out / f"{library}-finished").write_text("done")
