"""Ray Train's doc page "Get started with PyTorch Lightning" (train/getting-started-pytorch-lightning): a
LightningModule trained inside TorchTrainer's workers with `ray.train.lightning`'s RayDDPStrategy,
RayLightningEnvironment, RayTrainReportCallback and prepare_trainer. The page's FashionMNIST download is
replaced by seeded random tensors, so it runs with no network. Run unchanged by Ray and by ember (`python -m
ember ...`): both families of names (lightning and ray.train)
are mapped inside the workers. The last line is RESULT {...}.
"""

import json
import os

import lightning.pytorch as pl
import ray.train.lightning
import torch
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer
from torch.utils.data import DataLoader, TensorDataset


class Classifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.model(x), y)
        self.log("loss", loss, on_step=True, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def train_func():
    torch.manual_seed(0)
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(1))
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    train_dataloader = DataLoader(TensorDataset(x, y), batch_size=8)
    model = Classifier()
    trainer = pl.Trainer(
        max_epochs=2,
        devices="auto",
        accelerator="auto",
        strategy=ray.train.lightning.RayDDPStrategy(),
        callbacks=[ray.train.lightning.RayTrainReportCallback()],
        plugins=[ray.train.lightning.RayLightningEnvironment()],
        enable_progress_bar=False,
    )
    trainer = ray.train.lightning.prepare_trainer(trainer)
    trainer.fit(model, train_dataloaders=train_dataloader)


if __name__ == "__main__":
    trainer = TorchTrainer(
        train_func,
        scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
        run_config=RunConfig(storage_path=os.path.abspath("results"), name="run"),
    )
    result = trainer.fit()
    print(
        "RESULT "
        + json.dumps(
            {
                "loss": float(result.metrics["loss"]),
                "epoch": result.metrics["epoch"],
                "step": result.metrics["step"],
                "has_checkpoint": result.checkpoint is not None,
            }
        )
    )
