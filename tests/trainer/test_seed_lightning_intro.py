"""The PyTorch-Lightning introduction of shared/seeds/001, as its reader writes it: a LightningModule with
__init__, forward, training_step (self.log of accuracy and loss), validation_step, configure_optimizers,
prepare_data and *_dataloader; Trainer(accelerator, devices, max_epochs); trainer.fit(model); the curves read
back from TensorBoard. Run on Lightning and on ember (Fashion-MNIST, installed locally, standing for MNIST):
the same TensorBoard run folder with the same scalars.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Subset

import ember
from ember.datasets import FashionMNIST, transforms

pl = pytest.importorskip("lightning.pytorch")
pytest.importorskip("tensorboard")
FASHION = Path("/usr/share/datasets/fashion-mnist")


def _mnist_model(L):
    class MNISTModel(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.l1 = nn.Linear(28 * 28, 10)

        def forward(self, x):
            return torch.relu(self.l1(x.view(x.size(0), -1)))

        def training_step(self, batch, batch_idx):
            x, y = batch
            logits = self(x)
            loss = F.cross_entropy(logits, y)
            self.log("train_acc", (logits.argmax(1) == y).float().mean())
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, batch_idx):
            x, y = batch
            self.log("val_loss", F.cross_entropy(self(x), y))

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=0.02)

        def prepare_data(self):
            FashionMNIST(str(FASHION), train=True, download=True)

        def train_dataloader(self):
            data = FashionMNIST(str(FASHION), train=True, transform=transforms.ToTensor())
            return DataLoader(Subset(data, range(256)), batch_size=32)

        def val_dataloader(self):
            data = FashionMNIST(str(FASHION), train=False, transform=transforms.ToTensor())
            return DataLoader(Subset(data, range(64)), batch_size=32)

    return MNISTModel()


def _scalars(folder: Path) -> dict[str, list[int]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder))
    events.Reload()
    return {tag: [e.step for e in events.Scalars(tag)] for tag in sorted(events.Tags()["scalars"])}


def _run(L, root: Path) -> dict:
    cwd = os.getcwd()
    root.mkdir()
    os.chdir(root)
    try:
        torch.manual_seed(0)
        trainer = L.Trainer(
            accelerator="cpu", devices=1, max_epochs=2, log_every_n_steps=2, enable_progress_bar=False
        )
        trainer.fit(_mnist_model(L))
    finally:
        os.chdir(cwd)
    folder = root / "lightning_logs" / "version_0"
    names = sorted(p.name if "tfevents" not in p.name else "events" for p in folder.rglob("*") if p.is_file())
    return {"files": names, "scalars": _scalars(folder), "logger": type(trainer.logger).__name__}


@pytest.mark.skipif(
    not (FASHION / "train-images-idx3-ubyte.gz").exists(), reason="apt-get install dataset-fashion-mnist"
)
def test_the_introductions_module_trains_and_its_curves_are_in_tensorboard(tmp_path):
    theirs, ours = _run(pl, tmp_path / "lightning"), _run(ember, tmp_path / "ember")
    assert ours == theirs
    assert ours["logger"] == "TensorBoardLogger" and {"train_acc", "train_loss", "val_loss"} <= set(
        ours["scalars"]
    )
    assert ours["scalars"]["train_loss"] == [1, 3, 5, 7, 9, 11, 13, 15]  # every 2nd of 16 steps
