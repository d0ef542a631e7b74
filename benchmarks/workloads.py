"""The models, data and loops the benchmarks share, written once so every tool gets the same."""

from __future__ import annotations

import gzip
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

FASHION_DIRS = [
    Path("~/.torch/datasets/fashion-mnist").expanduser(),
    Path("/usr/share/datasets/fashion-mnist"),
]


class Net(nn.Module):
    """The classic PyTorch MNIST example's network."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = F.relu(self.fc1(x.view(-1, 320)))
        x = F.dropout(x, training=self.training)
        return F.log_softmax(self.fc2(x), dim=1)


class Tiny(nn.Module):
    """nn.Linear(784, 10): so little compute that the framework's own cost shows."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(self.fc(x.view(len(x), -1)), dim=1)


class Clock:
    """Timestamps taken at the start of every training step, by whichever loop runs it."""

    def __init__(self) -> None:
        self.ticks: list[float] = []

    def tick(self) -> None:
        self.ticks.append(time.perf_counter())

    def per_step(self, skip: int) -> float:
        """Mean seconds per step, leaving out the first ``skip`` steps (the warm-up)."""
        ticks = self.ticks[skip:]
        return (ticks[-1] - ticks[0]) / (len(ticks) - 1)


def as_framework_module(base: type, make_net: type[nn.Module], clock: Clock, log: bool = True) -> nn.Module:
    """The same model as a subclass of ``base`` (ember.Module or lightning's LightningModule).

    One definition for both frameworks, so the comparison is the framework and nothing else.
    """

    class Model(base):
        def __init__(self) -> None:
            super().__init__()
            self.net = make_net()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.net(x)

        def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
            clock.tick()
            x, y = batch
            loss = F.nll_loss(self(x), y)
            if log:
                self.log("train_loss", loss)
            return loss

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.01, momentum=0.5)

    return Model()


def hand_written_fit(model: nn.Module, loader: DataLoader, steps: int, clock: Clock) -> None:
    """The loop of the classic script: what every framework is measured against."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    model.train()
    step = 0
    while step < steps:
        for x, y in loader:
            clock.tick()
            optimizer.zero_grad()
            loss = F.nll_loss(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            if step == steps:
                return


# --- data ---------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """Where the benchmarks keep derived data (parquet, npz); never inside the repository."""
    base = (
        os.environ.get("EMBER_CACHE_DIR")
        or Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "ember"
    )
    path = Path(base) / "bench"
    path.mkdir(parents=True, exist_ok=True)
    return path


def fashion_arrays(train: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST as (uint8 [N, 28, 28], int64 [N]), decoded once into the bench cache.

    Read with a few lines of numpy rather than ember.datasets, so that a child process timing a
    competitor's start-up never imports ember.
    """
    split = "train" if train else "t10k"
    cached = cache_dir() / f"fashion-mnist-{split}.npz"
    if not cached.exists():
        folder = next((d for d in FASHION_DIRS if (d / f"{split}-labels-idx1-ubyte.gz").exists()), None)
        if folder is None:
            raise SystemExit("Fashion-MNIST not found: apt-get install dataset-fashion-mnist")
        images = np.frombuffer(
            gzip.decompress((folder / f"{split}-images-idx3-ubyte.gz").read_bytes()), np.uint8, offset=16
        )
        labels = np.frombuffer(
            gzip.decompress((folder / f"{split}-labels-idx1-ubyte.gz").read_bytes()), np.uint8, offset=8
        )
        tmp = cached.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(tmp, images=images.reshape(-1, 28, 28), labels=labels.astype(np.int64))
        os.replace(tmp, cached)
    with np.load(cached) as arrays:
        return arrays["images"], arrays["labels"]


def fashion_tensors(limit: int | None = None) -> TensorDataset:
    """Normalised float images [N, 1, 28, 28] and int64 labels, like the classic script's transform."""
    images, labels = fashion_arrays()
    x = torch.from_numpy(images[:limit]).unsqueeze(1).float().div_(255).sub_(0.2860).div_(0.3530)
    return TensorDataset(x, torch.from_numpy(labels[:limit]))


def fashion_parquet(train: bool = True) -> Path:
    """A Fashion-MNIST split as parquet: image (fixed-shape uint8 tensor [28, 28]), label.

    The train split (60,000 rows) is one row group, as a plain ``write_table`` makes it; the test
    split (10,000 rows) has row groups of 1,000, the fragments an inference job works through.
    """
    path = cache_dir() / f"fashion-mnist-{'train' if train else 'test'}.parquet"
    if not path.exists():
        import pyarrow as pa
        import pyarrow.parquet as pq

        images, labels = fashion_arrays(train)
        table = pa.table({"image": pa.FixedShapeTensorArray.from_numpy_ndarray(images), "label": labels})
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        pq.write_table(table, tmp, row_group_size=None if train else 1000)
        os.replace(tmp, path)
    return path


def start_ray() -> None:
    """A new Ray instance of our own (never someone else's cluster) on loopback only, 2 CPUs, no
    dashboard, no usage reporting; the loopback-only part is checked, not assumed."""
    import harness  # noqa: F401  (sets Ray's environment before Ray is imported)
    import ray

    if not ray.is_initialized():
        ray.init(
            address="local",
            _node_ip_address="127.0.0.1",
            include_dashboard=False,
            num_cpus=2,
            log_to_driver=False,
        )
    addresses = {node["NodeManagerAddress"] for node in ray.nodes()}
    if addresses != {"127.0.0.1"}:
        ray.shutdown()
        raise RuntimeError(f"Ray is listening beyond loopback: {sorted(addresses)}")
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False


@dataclass
class Framework:
    """The few names a benchmark needs from ember or Lightning (their APIs match)."""

    name: str
    Module: type
    Trainer: type
    ModelCheckpoint: type
    seed_everything: Callable[[int], object]


def framework(name: str) -> Framework | None:
    """``"ember"`` or ``"Lightning"``; None when it cannot be imported (not built, not installed)."""
    try:
        if name == "ember":
            import ember
            from ember.callbacks import ModelCheckpoint

            return Framework(name, ember.Module, ember.Trainer, ModelCheckpoint, ember.seed_everything)
        import lightning.pytorch as pl

        return Framework(
            name, pl.LightningModule, pl.Trainer, pl.callbacks.ModelCheckpoint, pl.seed_everything
        )
    except (ImportError, AttributeError):
        return None
