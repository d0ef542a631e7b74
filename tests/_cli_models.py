"""A tiny classifier on sklearn's digits (real data, 1,797 rows), for the command-line tests.

`LIGHTNING_TWIN` is the same model written for Lightning: the tests print its config with the real
`LightningCLI --print_config` and run that config with `ember fit`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import ember


class DigitsClassifier(ember.Module):
    def __init__(self, hidden: int = 32, lr: float = 0.1) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10)
        )

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_acc", (self.net(x).argmax(1) == y).float().mean())

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_acc", (self.net(x).argmax(1) == y).float().mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


class DigitsData(ember.DataModule):
    def __init__(self, batch_size: int = 64, val_size: int = 297) -> None:
        super().__init__()
        self.batch_size, self.val_size = batch_size, val_size

    def setup(self, stage: str) -> None:
        from sklearn.datasets import load_digits

        x, y = load_digits(return_X_y=True)
        x = torch.tensor(x / 16.0, dtype=torch.float32)
        y = torch.tensor(y)
        n = len(x) - self.val_size
        self.train_set, self.val_set = TensorDataset(x[:n], y[:n]), TensorDataset(x[n:], y[n:])

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=500)

    def test_dataloader(self):
        return DataLoader(self.val_set, batch_size=500)


LIGHTNING_TWIN = """
import torch
import lightning.pytorch as pl
from lightning.pytorch.cli import LightningCLI


class DigitsClassifier(pl.LightningModule):
    def __init__(self, hidden: int = 32, lr: float = 0.1):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10)
        )


class DigitsData(pl.LightningDataModule):
    def __init__(self, batch_size: int = 64, val_size: int = 297):
        super().__init__()


if __name__ == "__main__":
    LightningCLI(DigitsClassifier, DigitsData, subclass_mode_model=True, subclass_mode_data=True)
"""
