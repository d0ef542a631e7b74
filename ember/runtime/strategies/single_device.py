"""One process, one device: every collective is the identity, every state is the object's own."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch

from ember.errors import ConfigError
from ember.runtime.strategies.protocol import OnAgreedStop


class SingleDeviceStrategy:
    """The whole `Strategy` protocol for one process.

    Example:
        >>> strategy = SingleDeviceStrategy(torch.device("cpu"))
        >>> strategy.reduce(torch.tensor(2.0)), strategy.any_rank(True), strategy.launcher
        (tensor(2.), True, None)
    """

    name = "single_device"
    device_mesh: Any = None  # only ModelParallelStrategy has one
    world_size = 1
    global_rank = 0
    local_rank = 0
    node_rank = 0
    launcher = None  # nothing to start: this process trains

    def __init__(self, device: torch.device) -> None:
        self.root_device = device
        self._module: torch.nn.Module | None = None
        self._on_agreed: OnAgreedStop | None = None

    @property
    def is_global_zero(self) -> bool:
        return True

    def configure(self, device_type: str, device_ids: list[int]) -> SingleDeviceStrategy:
        """The device was fixed at construction; nothing to take."""
        return self

    def setup_environment(self) -> None:
        """No process group for one process."""

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """Move the module to the device (no wrapper)."""
        self._module = module
        return module.to(self.root_device)

    def training_step(
        self, module: Any, batch: Any, batch_idx: int, pass_index: bool = True, sync: bool = True
    ) -> Any:
        """The module's step (`sync` changes nothing: one process never synchronises gradients)."""
        return module.training_step(batch, batch_idx) if pass_index else module.training_step(batch)

    @property
    def distributed_sampler_kwargs(self) -> dict[str, int]:
        return {"num_replicas": 1, "rank": 0}

    def process_dataloader(self, dataloader: Any, shuffle: bool) -> Any:
        return dataloader

    def reduce(self, tensor: torch.Tensor, op: str = "mean") -> torch.Tensor:
        return tensor

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.unsqueeze(0)

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        return obj

    def barrier(self, name: str | None = None) -> None:
        """Nobody to wait for."""

    def any_rank(self, flag: bool) -> bool:
        return flag

    def module_state_dict(self, module: torch.nn.Module) -> dict[str, Any]:
        return module.state_dict()

    def load_module_state_dict(self, module: torch.nn.Module, state: dict[str, Any]) -> None:
        module.load_state_dict(state)

    def optimizer_state_dict(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        return optimizer.state_dict()

    def load_optimizer_state_dict(self, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        optimizer.load_state_dict(state)

    def save_sharded_checkpoint(self, trainer: Any, folder: str | os.PathLike[str]) -> Any:
        raise ConfigError(
            f"save_sharded_checkpoint writes one shard per rank and needs strategy='fsdp' (this run uses "
            f"{self.name!r}); use trainer.save_checkpoint(path) for a checkpoint file"
        )

    def write_checkpoint(self, state: dict[str, Any], path: Any, write_file: Callable[..., Any]) -> None:
        write_file(state, path)

    loads_checkpoint_folders = False

    def set_stop_callback(self, on_agreed: OnAgreedStop | None) -> None:
        self._on_agreed = on_agreed

    def on_signal(self, signum: int, on_agreed: OnAgreedStop | None = None) -> None:
        """One process agrees with itself at once."""
        callback = on_agreed or self._on_agreed
        if callback is not None:
            callback(signum)

    def teardown(self) -> None:
        """Nothing to release."""
