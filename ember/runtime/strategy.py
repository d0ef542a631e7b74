"""Strategy: how the model and data are spread over processes. This file holds the one-process case.

The Trainer talks to a strategy through this small interface only, so adding DDP or FSDP
(`runtime/distributed.py`) changes no loop code.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch


class SingleDeviceStrategy:
    """One process, one device: every collective is the identity."""

    name = "single_device"
    world_size = 1
    global_rank = 0
    local_rank = 0
    node_rank = 0

    def __init__(self, device: torch.device) -> None:
        self.root_device = device

    @property
    def is_global_zero(self) -> bool:
        return self.global_rank == 0

    def setup_environment(self) -> None:
        """Join or create the process group (nothing to do for one process)."""

    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """Move the module to the device; distributed strategies also wrap it (DDP)."""
        return module.to(self.root_device)

    def training_step(self, module: Any, batch: Any, batch_idx: int) -> Any:
        return module.training_step(batch, batch_idx)

    def process_dataloader(self, dataloader: Any, shuffle: bool) -> Any:
        """Shard data across ranks (identity here)."""
        return dataloader

    def no_backward_sync(self, enabled: bool) -> Any:
        """Skip gradient all-reduce on accumulation micro-steps (nothing to skip here)."""
        return contextlib.nullcontext()

    def reduce(self, tensor: torch.Tensor, op: str = "mean") -> torch.Tensor:
        return tensor

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.unsqueeze(0)

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        return obj

    def barrier(self, name: str | None = None) -> None: ...

    def any_rank(self, flag: bool) -> bool:
        """True if `flag` is true on any rank (used only at checkpoints and epoch ends, never per step)."""
        return flag

    def module_state_dict(self, module: torch.nn.Module) -> dict[str, Any]:
        return module.state_dict()

    def teardown(self) -> None: ...
