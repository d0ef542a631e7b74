"""LearningRateMonitor: log each optimizer's learning rate."""

from __future__ import annotations

from typing import Any

from ember.callbacks.callback import Callback
from ember.errors import ConfigError


class LearningRateMonitor(Callback):
    """Log `lr-<Optimizer>` (and `-<group>` for several param groups) every step or epoch.

    Example:
        >>> from ember.callbacks import LearningRateMonitor
        >>> monitor = LearningRateMonitor(logging_interval="step")
    """

    def __init__(self, logging_interval: str | None = None, log_momentum: bool = False) -> None:
        if logging_interval not in (None, "step", "epoch"):
            raise ConfigError(f"LearningRateMonitor(logging_interval={logging_interval!r}): use 'step', 'epoch' or None")
        self.logging_interval = logging_interval
        self.log_momentum = log_momentum

    def on_train_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int) -> None:
        if self.logging_interval != "epoch" and trainer.global_step % trainer.log_every_n_steps == 0:
            trainer.log_metrics(self.learning_rates(trainer))

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        if self.logging_interval != "step":
            trainer.log_metrics(self.learning_rates(trainer))

    def learning_rates(self, trainer: Any) -> dict[str, float]:
        out: dict[str, float] = {}
        for i, opt in enumerate(trainer.optimizers):
            name = f"lr-{type(opt).__name__}" + (f"-{i}" if len(trainer.optimizers) > 1 else "")
            groups = opt.param_groups
            for g, group in enumerate(groups):
                key = name if len(groups) == 1 else f"{name}/pg{g + 1}"
                out[key] = float(group["lr"])
                if self.log_momentum and "momentum" in group:
                    out[key.replace("lr-", "momentum-", 1)] = float(group["momentum"])
        return out
