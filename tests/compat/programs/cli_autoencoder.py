"""Lightning's examples/pytorch/basics/autoencoder.py and its doc page "Configure hyperparameters from the
CLI" (cli/lightning_cli_intermediate): `cli_lightning_logo()`, `LightningCLI(Model, DataModule,
seed_everything_default=..., save_config_kwargs={"overwrite": True}, run=False)`, then fit and test with
`ckpt_path="best"`. The example's MNIST download is replaced by seeded random images in the DataModule.

Run unchanged by Lightning and by ember with the same command-line flags; the last line is RESULT {...}.
"""

import json

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningDataModule, LightningModule, cli_lightning_logo
from lightning.pytorch.cli import LightningCLI
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class LitAutoEncoder(LightningModule):
    def __init__(self, hidden_dim: int = 16, learning_rate: float = 1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.encoder = nn.Sequential(nn.Linear(28 * 28, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 3))
        self.decoder = nn.Sequential(nn.Linear(3, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 28 * 28))

    def _loss(self, batch):
        x, _ = batch
        x = x.view(x.size(0), -1)
        return F.mse_loss(self.decoder(self.encoder(x)), x)

    def training_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self._loss(batch))

    def test_step(self, batch, batch_idx):
        self.log("test_loss", self._loss(batch))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate)


class MyDataModule(LightningDataModule):
    def __init__(self, batch_size: int = 8):
        super().__init__()
        self.batch_size = batch_size

    def setup(self, stage):
        images = torch.rand(48, 1, 28, 28, generator=torch.Generator().manual_seed(0))
        self.data = TensorDataset(images, torch.zeros(48))

    def train_dataloader(self):
        return DataLoader(self.data, batch_size=self.batch_size)

    def val_dataloader(self):
        return DataLoader(self.data, batch_size=self.batch_size)

    def test_dataloader(self):
        return DataLoader(self.data, batch_size=self.batch_size)


def cli_main():
    cli = LightningCLI(
        LitAutoEncoder,
        MyDataModule,
        seed_everything_default=1234,
        save_config_kwargs={"overwrite": True},
        run=False,
    )
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    tested = cli.trainer.test(ckpt_path="best", datamodule=cli.datamodule)
    print(
        "RESULT "
        + json.dumps(
            {
                "test_loss": tested[0]["test_loss"],
                "hidden_dim": cli.model.hparams.hidden_dim,
                "global_step": cli.trainer.global_step,
            }
        )
    )


if __name__ == "__main__":
    cli_lightning_logo()
    cli_main()
