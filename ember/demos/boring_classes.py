"""Lightning's `lightning.pytorch.demos.boring_classes`, as ember classes with the same behaviour.

The datasets draw their values with `torch.randn` when they are built, in the same shapes and order as
Lightning's, so after the same `seed_everything` both libraries see the same data; the models have the
same layers, losses, optimizers and data hooks. Meant for tests, docs and debugging.

Example:
    >>> import torch, ember
    >>> from ember.demos.boring_classes import BoringModel, RandomDataset
    >>> _ = ember.seed_everything(0, verbose=False)
    >>> len(RandomDataset(32, 64)), RandomDataset(32, 64)[0].shape
    (64, torch.Size([32]))
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, IterableDataset, Subset

from ember.datamodule import DataModule
from ember.module import Module

__all__ = [
    "BoringDataModule",
    "BoringModel",
    "DemoModel",
    "ManualOptimBoringModel",
    "RandomDataset",
    "RandomDictDataset",
    "RandomIterableDataset",
    "RandomIterableDatasetWithLen",
]


class RandomDataset(Dataset):
    """``length`` random vectors of ``size`` values (drawn once, at construction).

    Example:
        >>> RandomDataset(4, 3).data.shape
        torch.Size([3, 4])
    """

    def __init__(self, size: int, length: int) -> None:
        self.len = length
        self.data = torch.randn(length, size)

    def __getitem__(self, index: int) -> Tensor:
        return self.data[index]

    def __len__(self) -> int:
        return self.len


class RandomDictDataset(RandomDataset):
    """Like RandomDataset, each item a dict ``{"a": x, "b": x + 2}``.

    Example:
        >>> item = RandomDictDataset(4, 3)[0]
        >>> sorted(item), bool(torch.equal(item["b"], item["a"] + 2))
        (['a', 'b'], True)
    """

    def __getitem__(self, index: int) -> dict[str, Tensor]:  # type: ignore[override]
        a = self.data[index]
        return {"a": a, "b": a + 2}


class RandomIterableDataset(IterableDataset):
    """``count`` random vectors of ``size`` values, drawn as they are iterated (no length).

    Example:
        >>> [x.shape for x in RandomIterableDataset(2, 3)]
        [torch.Size([2]), torch.Size([2]), torch.Size([2])]
    """

    def __init__(self, size: int, count: int) -> None:
        self.count, self.size = count, size

    def __iter__(self) -> Iterator[Tensor]:
        for _ in range(self.count):
            yield torch.randn(self.size)


class RandomIterableDatasetWithLen(RandomIterableDataset):
    """RandomIterableDataset with a ``len()``.

    Example:
        >>> len(RandomIterableDatasetWithLen(2, 3))
        3
    """

    def __len__(self) -> int:
        return self.count


class BoringModel(Module):
    """``Linear(32, 2)`` trained towards ones (MSE) with SGD(lr=0.1) and StepLR(step_size=1), on
    ``RandomDataset(32, 64)`` for every stage; ``training_step`` returns ``{"loss": ...}``,
    ``validation_step`` ``{"x": ...}``, ``test_step`` ``{"y": ...}``. Subclass it and override one method.

    Example:
        >>> model = BoringModel()
        >>> model.step(torch.zeros(4, 32)).shape
        torch.Size([])
    """

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)

    def forward(self, x: Tensor) -> Tensor:
        return self.layer(x)

    def loss(self, preds: Tensor, labels: Tensor | None = None) -> Tensor:
        """MSE against ``labels``, or against ones: any loss that moves the weights will do."""
        return torch.nn.functional.mse_loss(preds, torch.ones_like(preds) if labels is None else labels)

    def step(self, batch: Any) -> Tensor:
        return self.loss(self(batch))

    def training_step(self, batch: Any, batch_idx: int) -> dict[str, Tensor]:
        return {"loss": self.step(batch)}

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, Tensor]:
        return {"x": self.step(batch)}

    def test_step(self, batch: Any, batch_idx: int) -> dict[str, Tensor]:
        return {"y": self.step(batch)}

    def configure_optimizers(self) -> tuple[list[torch.optim.Optimizer], list[Any]]:
        optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)]

    def train_dataloader(self) -> DataLoader:
        return DataLoader(RandomDataset(32, 64))

    def val_dataloader(self) -> DataLoader:
        return DataLoader(RandomDataset(32, 64))

    def test_dataloader(self) -> DataLoader:
        return DataLoader(RandomDataset(32, 64))

    def predict_dataloader(self) -> DataLoader:
        return DataLoader(RandomDataset(32, 64))


class ManualOptimBoringModel(BoringModel):
    """BoringModel with manual optimization: ``training_step`` zeroes, backpropagates and steps itself.

    Example:
        >>> ManualOptimBoringModel().automatic_optimization
        False
    """

    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False

    def training_step(self, batch: Any, batch_idx: int) -> Tensor:  # type: ignore[override]
        optimizer = self.optimizers()
        loss = self.step(batch)
        optimizer.zero_grad()
        self.manual_backward(loss)
        optimizer.step()
        return loss


class BoringDataModule(DataModule):
    """256 random vectors of 32 values (``random_full``), cut into four subsets of 64: train
    (``setup("fit")``), val (fit or validate), test and predict, each served one row per batch.

    Example:
        >>> dm = BoringDataModule(); dm.setup("fit")
        >>> len(dm.random_full), len(dm.random_train), len(dm.random_val)
        (256, 64, 64)
    """

    def __init__(self) -> None:
        super().__init__()
        self.random_full = RandomDataset(32, 64 * 4)

    def setup(self, stage: str) -> None:
        if stage == "fit":
            self.random_train = Subset(self.random_full, indices=range(64))
        if stage in ("fit", "validate"):
            self.random_val = Subset(self.random_full, indices=range(64, 64 * 2))
        if stage == "test":
            self.random_test = Subset(self.random_full, indices=range(64 * 2, 64 * 3))
        if stage == "predict":
            self.random_predict = Subset(self.random_full, indices=range(64 * 3, 64 * 4))

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.random_train)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.random_val)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.random_test)

    def predict_dataloader(self) -> DataLoader:
        return DataLoader(self.random_predict)


class DemoModel(Module):
    """``relu(Linear(32, out_dim))`` whose training loss is the sum of its outputs, with
    Adam(``learning_rate``) (the model of Lightning's CLI
    docs: ``--model.out_dim``, ``--model.learning_rate``).

    Example:
        >>> DemoModel(out_dim=3)(torch.zeros(2, 32)).shape
        torch.Size([2, 3])
    """

    def __init__(self, out_dim: int = 10, learning_rate: float = 0.02) -> None:
        super().__init__()
        self.l1 = torch.nn.Linear(32, out_dim)
        self.learning_rate = learning_rate

    def forward(self, x: Tensor) -> Tensor:
        return torch.relu(self.l1(x.view(x.size(0), -1)))

    def training_step(self, batch: Any, batch_nb: int) -> Tensor:
        return self(batch).sum()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.learning_rate)


from ember.paths import refused_names  # noqa: E402 - Lightning's other names refuse use (docs/lightning_paths.md)

__getattr__ = refused_names(__name__)
