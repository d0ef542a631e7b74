"""SchedulerConfig: a learning-rate scheduler and when to step it (Lightning's `lr_scheduler` dict /
LRSchedulerConfig).

Below the trainer and the callbacks, so that both can build one (StochasticWeightAveraging swaps in its
SWALR).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch


@dataclasses.dataclass
class SchedulerConfig:
    """A learning-rate scheduler and when to step it (Lightning's `lr_scheduler` dict)."""

    scheduler: Any
    interval: str = "epoch"
    frequency: int = 1
    monitor: str | None = None
    name: str | None = None
    strict: bool = True

    @property
    def needs_metric(self) -> bool:
        return isinstance(self.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
