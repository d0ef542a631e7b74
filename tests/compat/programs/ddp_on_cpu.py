"""Lightning's doc page "GPU training (Intermediate)" (accelerators/gpu_intermediate):
`Trainer(strategy="ddp", devices=2)`, here on the CPU (`accelerator="cpu"`) with seeded random data so it runs
anywhere with no network. Lightning (and ember) start the second process by re-running this script; under
`python -m ember` that process must see the same mapping. The last line, printed by rank 0, is RESULT {...}.
"""

import json

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset


class Regression(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


if __name__ == "__main__":
    pl.seed_everything(3)
    x = torch.randn(64, 4, generator=torch.Generator().manual_seed(1))
    y = x.sum(dim=1, keepdim=True)
    model = Regression()
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=2,
        strategy="ddp",
        max_epochs=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, DataLoader(TensorDataset(x, y), batch_size=8))
    if trainer.global_rank == 0:
        weight = model.layer.weight.detach().flatten().tolist()
        print(
            "RESULT "
            + json.dumps(
                {
                    "train_loss": float(trainer.callback_metrics["train_loss"]),
                    "weight": weight,
                    "global_step": trainer.global_step,
                }
            )
        )
