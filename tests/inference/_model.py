"""Classes the inference tests load by name: the classic MNIST Net as an ember Module, a predictor."""

from __future__ import annotations

import os

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import ember


class ClassicNet(ember.Module):
    def __init__(self, lr: float = 0.05) -> None:
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
        x = F.relu(self.fc1(x.view(-1, 320)))
        return F.log_softmax(self.fc2(x), dim=1)

    def training_step(self, batch, batch_idx):
        images, labels = batch
        return F.nll_loss(self(images), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.5)


class Scale:
    """A tiny predictor class for the Ray test (importable by name in Ray's worker processes)."""

    def __init__(self, factor):
        self.factor, self.pid = factor, os.getpid()

    def __call__(self, batch):
        return {
            "id": batch["id"],
            "mean": batch["image"].reshape(len(batch["id"]), -1).mean(1) * self.factor,
            "pid": np.full(len(batch["id"]), self.pid),
        }
