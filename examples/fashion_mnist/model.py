"""The classic PyTorch MNIST `Net`, trained on Fashion-MNIST through ember.

This is the model of the classic hand-written script (seed 000): two conv layers with
Dropout2d, two linear layers, log_softmax, SGD with momentum. Everything the script did by
hand (device choice, `.to(device)`, `zero_grad/backward/step`, `train()/eval()`, `no_grad`,
checkpoints of model and optimizer, `--resume`) is done by the Trainer.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, random_split

import ember
from ember.datasets import FashionMNIST


class ClassicNet(ember.Module):
    """conv 1→10 k5, conv 10→20 k5 + Dropout2d, fc 320→50, fc 50→10, log_softmax."""

    def __init__(self, lr: float = 0.01, momentum: float = 0.5) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)

    def training_step(self, batch, batch_idx):
        images, labels = batch
        loss = F.nll_loss(self(images), labels)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def _evaluate(self, batch, stage: str) -> None:
        images, labels = batch
        output = self(images)
        self.log(f"{stage}_loss", F.nll_loss(output, labels), prog_bar=True)
        self.log(f"{stage}_acc", (output.argmax(1) == labels).float().mean(), prog_bar=True)

    def validation_step(self, batch, batch_idx):
        self._evaluate(batch, "val")

    def test_step(self, batch, batch_idx):
        self._evaluate(batch, "test")

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=self.hparams.momentum)


class WideNet(ClassicNet):
    """A wider 2-conv network (32/64 channels, batch norm, dropout) that reaches ≥ 0.92 test accuracy."""

    def __init__(self, lr: float = 0.01, momentum: float = 0.9, epochs: int = 8) -> None:
        ember.Module.__init__(self)
        self.save_hyperparameters()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.3), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
                                  nn.Dropout(0.3), nn.Linear(128, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(self.head(self.features(x)), dim=1)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=self.hparams.momentum,
                                    nesterov=True, weight_decay=5e-4)
        schedule = torch.optim.lr_scheduler.OneCycleLR(
            optimizer, max_lr=self.hparams.lr * 10, total_steps=self.trainer.estimated_stepping_batches
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


class FashionMNISTData(ember.DataModule):
    """Fashion-MNIST: 55k train / 5k validation (a fixed split) / 10k test, normalized."""

    def __init__(self, batch_size: int = 64, test_batch_size: int = 1000, num_workers: int = 0,
                 root: str | None = None, val_size: int = 5000, download: bool = False) -> None:
        super().__init__()
        self.batch_size, self.test_batch_size = batch_size, test_batch_size
        self.num_workers, self.root, self.val_size, self.download = num_workers, root, val_size, download

    def prepare_data(self) -> None:
        """Once per machine: fetch the files when asked to (checksummed); otherwise they must be on disk."""
        if self.download:
            FashionMNIST(self.root, train=True, download=True)
            FashionMNIST(self.root, train=False, download=True)

    def setup(self, stage: str) -> None:
        if stage in ("fit", "validate"):
            full = FashionMNIST(self.root, train=True, normalize=True)
            split = torch.Generator().manual_seed(0)
            self.train_set, self.val_set = random_split(full, [len(full) - self.val_size, self.val_size], generator=split)
        if stage == "test":
            self.test_set = FashionMNIST(self.root, train=False, normalize=True)

    def _loader(self, dataset, batch_size: int, shuffle: bool) -> DataLoader:
        return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, num_workers=self.num_workers,
                          pin_memory=torch.cuda.is_available(), persistent_workers=self.num_workers > 0)

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_set, self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val_set, self.test_batch_size, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.test_set, self.test_batch_size, shuffle=False)
