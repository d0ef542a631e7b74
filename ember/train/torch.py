"""prepare_model / prepare_data_loader: the two lines that make a plain torch loop data-parallel."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from ember.errors import ConfigError
from ember.runtime.devices import move_to_device
from ember.runtime.sharding import shard_for_rank
from ember.runtime.strategies.ddp import wrap_module
from ember.train.config import TorchConfig
from ember.train.context import get_context
from ember.train.torch_trainer import TorchTrainer

__all__ = [
    "TorchConfig",
    "TorchTrainer",
    "accelerate",
    "backward",
    "enable_reproducibility",
    "get_device",
    "get_devices",
    "prepare_data_loader",
    "prepare_model",
    "prepare_optimizer",
]

#: Ray 2.60 refuses these three too (its mixed-precision helpers are deprecated).
_AMP_REFUSAL = (
    "is deprecated in Ray 2.60 too (it raises there); use torch's own mixed precision "
    "(torch.autocast, torch.amp.GradScaler) in the loop"
)


def get_device() -> torch.device:
    """This worker's device (cuda:<local rank> with use_gpu, else CPU)."""
    return get_context().device


def get_devices() -> list[torch.device]:
    """This worker's devices: one, `get_device()` (ember gives each worker one device)."""
    return [get_device()]


def prepare_optimizer(optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
    """Refused, as in Ray 2.60."""
    raise ConfigError(f"ember.train.torch.prepare_optimizer {_AMP_REFUSAL}")


def backward(tensor: torch.Tensor) -> None:
    """Refused, as in Ray 2.60."""
    raise ConfigError(f"ember.train.torch.backward {_AMP_REFUSAL}")


def accelerate(amp: bool = False) -> None:
    """Refused, as in Ray 2.60."""
    raise ConfigError(f"ember.train.torch.accelerate {_AMP_REFUSAL}")


def enable_reproducibility(seed: int = 0) -> None:
    """Limit nondeterminism as Ray Train's does: seed torch, Python's `random` and NumPy with `seed`, use
    deterministic torch algorithms, turn off cuDNN benchmarking, and set CUBLAS_WORKSPACE_CONFIG (which
    deterministic CUDA matrix products need). Call it first thing in `train_loop_per_worker`.

    Example:
        >>> enable_reproducibility(7); a = torch.rand(2); enable_reproducibility(7)
        >>> torch.equal(a, torch.rand(2)), torch.are_deterministic_algorithms_enabled()
        (True, True)
        >>> torch.use_deterministic_algorithms(False)  # (leave the doctest process as it was)
    """
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"


def prepare_model(
    model: torch.nn.Module,
    move_to_device: bool | torch.device = True,
    parallel_strategy: str | None = "ddp",
    parallel_strategy_kwargs: dict[str, Any] | None = None,
) -> torch.nn.Module:
    """Move `model` to this worker's device (or to the `torch.device` given as `move_to_device`, as Ray
    allows) and wrap it in DistributedDataParallel (when >1 worker).

    The wrapping is the Trainer's DDP strategy's own (`runtime.strategies.ddp.wrap_module`).
    `parallel_strategy="fsdp"` (Ray wraps in FSDP1) is refused rather than silently given DDP.

    Example (inside a training loop):
        >>> model = ember.train.torch.prepare_model(torch.nn.Linear(30, 1))  # doctest: +SKIP
    """
    if parallel_strategy not in ("ddp", None):
        raise ConfigError(
            f"prepare_model(parallel_strategy={parallel_strategy!r}): ember.train wraps in DDP only; "
            "pass 'ddp' or None, or train a Module with ember.Trainer(strategy='fsdp') to shard it"
        )
    ctx = get_context()
    device = move_to_device if isinstance(move_to_device, torch.device) else ctx.device
    if move_to_device:
        model = model.to(device)
    if ctx.world_size == 1 or parallel_strategy is None:
        return model
    return wrap_module(model, device, move=False, **(parallel_strategy_kwargs or {}))


def prepare_data_loader(
    data_loader: torch.utils.data.DataLoader[Any],
    add_dist_sampler: bool = True,
    move_to_device: bool = True,
    auto_transfer: bool = True,
) -> Any:
    """Give this worker its shard (a DistributedSampler, equal batch counts) and move batches to its device.

    `auto_transfer` (Ray: copy the next batch on a second CUDA stream) only changes how fast batches
    arrive, not what arrives: ember moves each batch with a non-blocking copy either way.

    Example (inside a training loop):
        >>> loader = ember.train.torch.prepare_data_loader(DataLoader(data, batch_size=32))  # doctest: +SKIP
    """
    ctx = get_context()
    if add_dist_sampler:
        data_loader = shard_for_rank(data_loader, ctx.world_size, ctx.world_rank)
    if move_to_device and ctx.device.type != "cpu":
        return _OnDevice(data_loader, ctx.device)
    return data_loader


class _OnDevice:
    """A loader whose batches arrive on `device`; len() and set_epoch() pass through."""

    def __init__(self, loader: Any, device: torch.device) -> None:
        self.loader, self.device = loader, device

    def __iter__(self) -> Iterator[Any]:
        for batch in self.loader:
            yield move_to_device(batch, self.device)

    def __len__(self) -> int:
        return len(self.loader)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)
