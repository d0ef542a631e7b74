"""Small real models and real data for Trainer tests (also imported by subprocess scripts)."""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import ember


def digits_tensors() -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's handwritten digits (1797 real 8x8 images), as float features and labels.

    Read from the file ``sklearn.datasets.load_digits`` reads, the way it reads it, without importing
    scikit-learn: that import costs 1-2 s in each of the many training processes the resume tests start
    (tests/trainer/test_models_data.py checks the two give equal tensors)."""
    with gzip.open(_digits_csv(), "rt") as f:
        data = np.loadtxt(f, delimiter=",")
    x = torch.tensor(data[:, :-1], dtype=torch.float32) / 16.0
    y = torch.tensor(data[:, -1].astype(int), dtype=torch.int64)
    return x, y


def _digits_csv() -> Path:
    """scikit-learn's bundled digits.csv.gz (found without importing scikit-learn)."""
    spec = importlib.util.find_spec("sklearn")
    return Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"


def digits_loaders(
    batch_size: int = 32, shuffle: bool = True, num_workers: int = 0
) -> tuple[DataLoader, DataLoader]:
    x, y = digits_tensors()
    train = TensorDataset(x[:1500], y[:1500])
    val = TensorDataset(x[1500:], y[1500:])
    return (
        DataLoader(train, batch_size=batch_size, shuffle=shuffle, num_workers=num_workers),
        DataLoader(val, batch_size=128),
    )


class DigitsMLP(ember.Module):
    """64 → 32 → 10 with dropout, so RNG state matters for exact resume."""

    def __init__(self, lr: float = 0.1, hidden: int = 32) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Dropout(0.2), nn.Linear(hidden, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(1) == y).float().mean())

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_acc", (self(x).argmax(1) == y).float().mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)


def hand_written_fit(
    model: nn.Module, loader: DataLoader, epochs: int, lr: float = 0.1, val_loader: DataLoader | None = None
) -> nn.Module:
    """The loop people write by hand: what the Trainer must match bit for bit."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        if val_loader is not None:
            model.eval()
            with torch.no_grad():
                for x, _y in val_loader:
                    model(x)
    return model


def weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def assert_bitwise_equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), (
            f"{key} differs (max abs diff {(a[key] - b[key]).abs().max():.3g})"
        )


def seeded(seed: int = 0) -> None:
    ember.seed_everything(seed)
    np.random.seed(seed)
