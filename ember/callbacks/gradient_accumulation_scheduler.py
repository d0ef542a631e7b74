"""GradientAccumulationScheduler: change `accumulate_grad_batches` by epoch (Lightning's callback)."""

from __future__ import annotations

import warnings
from typing import Any

from ember.callbacks.callback import Callback
from ember.errors import ConfigError, UnsupportedCombinationError


class EmptySchedulingError(ConfigError, TypeError):
    """An empty `scheduling` (a TypeError too, as Lightning raises)."""


class GradientAccumulationScheduler(Callback):
    """Accumulate gradients over `scheduling[epoch]` batches from that epoch on (1 before the first key).

    At each training epoch start it sets `trainer.accumulate_grad_batches`, as Lightning's does. It is
    refused with a manual-optimization module (RuntimeError, as Lightning) and together with
    `Trainer(accumulate_grad_batches=k)` for k != 1 (ValueError, as Lightning): use one or the other.

    Example:
        >>> from ember.callbacks import GradientAccumulationScheduler
        >>> scheduler = GradientAccumulationScheduler(scheduling={2: 4, 5: 8})
        >>> [scheduler.get_accumulate_grad_batches(epoch) for epoch in (0, 2, 4, 5, 9)]
        [1, 4, 4, 8, 8]
    """

    def __init__(self, scheduling: dict[int, int]) -> None:
        if not scheduling:
            raise EmptySchedulingError(
                "GradientAccumulationScheduler(scheduling={}) is empty; map epochs to "
                "factors, e.g. {0: 1, 4: 2}"
            )
        if any(isinstance(key, bool) or not isinstance(key, int) or key < 0 for key in scheduling):
            raise ConfigError(
                f"GradientAccumulationScheduler: epochs must be ints >= 0, got {list(scheduling)}"
            )
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in scheduling.values()):
            raise ConfigError(
                "GradientAccumulationScheduler: accumulation factors must be ints >= 1, "
                f"got {list(scheduling.values())}"
            )
        self.scheduling = dict(scheduling)
        self.scheduling.setdefault(0, 1)  # as Lightning: before the first scheduled epoch, no accumulation
        self.epochs = sorted(self.scheduling)

    def going_to_accumulate_grad_batches(self) -> bool:
        return any(factor > 1 for factor in self.scheduling.values())

    def get_accumulate_grad_batches(self, epoch: int) -> int:
        """The factor in force at `epoch`: that of the latest scheduled epoch not after it."""
        return self.scheduling[max(e for e in self.epochs if e <= epoch)]

    def on_train_start(self, trainer: Any, module: Any) -> None:
        if not module.automatic_optimization:
            raise UnsupportedCombinationError(
                "GradientAccumulationScheduler does not work with manual optimization "
                "(automatic_optimization=False); remove the callback, or accumulate in your training_step"
            )
        if (
            any(_user_defined(module, name) for name in ("optimizer_step", "optimizer_zero_grad"))
            and self.going_to_accumulate_grad_batches()
        ):
            warnings.warn(
                "GradientAccumulationScheduler with an overridden optimizer_step/optimizer_zero_grad: "
                "the hooks are called on every optimization step, not on every batch",
                stacklevel=2,
            )
        if trainer.accumulate_grad_batches != 1:
            raise ConfigError(
                f"Trainer(accumulate_grad_batches={trainer.accumulate_grad_batches}) and "
                "GradientAccumulationScheduler both set the accumulation; remove "
                "accumulate_grad_batches from the Trainer or remove the callback"
            )

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        trainer.accumulate_grad_batches = self.get_accumulate_grad_batches(trainer.current_epoch)


def _user_defined(module: Any, name: str) -> bool:
    """Is `name` defined by the user's class rather than ember's Module (which callbacks cannot import)?"""
    owner = next((cls for cls in type(module).__mro__ if name in vars(cls)), None)
    return owner is not None and owner.__module__ != "ember.module"
