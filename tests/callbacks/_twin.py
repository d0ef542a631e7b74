"""The same tiny model on the same real data (sklearn digits), fitted by ember and by the real Lightning 2.6.

Tests compare what a callback does in both (files written, values kept, weights) on identical runs: the
model body is written once and mixed into each library's module class. Lightning is a dev-only dependency.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import ember


def digits_loaders(
    n_train: int = 256, n_val: int = 128, batch_size: int = 32
) -> tuple[DataLoader, DataLoader]:
    """Unshuffled, so both libraries see the same batches in the same order."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    train = TensorDataset(x[:n_train], y[:n_train])
    val = TensorDataset(x[n_train : n_train + n_val], y[n_train : n_train + n_val])
    return DataLoader(train, batch_size=batch_size), DataLoader(val, batch_size=64)


class Body:
    """64 -> 16 (+ BatchNorm) -> 10, SGD; logs `train_loss`, `val_loss`, `val/acc` (a name with "/")."""

    lr = 0.1
    optimizer = "sgd"

    def build(self) -> None:
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(64, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("val/acc", (logits.argmax(1) == y).float().mean())

    def configure_optimizers(self) -> Any:
        if self.optimizer == "adam":
            return torch.optim.Adam(self.parameters(), lr=self.lr)
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)


def lightning() -> Any:
    pytest.importorskip("lightning", reason="Lightning is a dev-only dependency")
    import lightning.pytorch as pl

    return pl


def make_module(library: str, body: type = Body, **attributes: Any) -> Any:
    base = lightning().LightningModule if library == "lightning" else ember.Module

    class Twin(body, base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            base.__init__(self)
            for name, value in attributes.items():
                setattr(self, name, value)
            self.build()

    return Twin()


def fit(library: str, root: Path, callbacks: list[Any], module: Any = None, **trainer_args: Any) -> Any:
    """Fit one twin with `callbacks`; returns the trainer. Defaults: 3 epochs, no logger, no sanity check."""
    options: dict[str, Any] = {
        "max_epochs": 3,
        "logger": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "num_sanity_val_steps": 0,
        "default_root_dir": str(root),
        "callbacks": callbacks,
    }
    options.update(trainer_args)
    train, val = digits_loaders()
    module = module if module is not None else make_module(library)
    if library == "lightning":
        trainer = lightning().Trainer(accelerator="cpu", devices=1, **options)
    else:
        trainer = ember.Trainer(accelerator="cpu", devices=1, **options)
    trainer.fit(module, train, val)
    return trainer


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in Path(folder).iterdir()) if Path(folder).exists() else []
