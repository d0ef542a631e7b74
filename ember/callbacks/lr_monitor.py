"""LearningRateMonitor: log each optimizer's learning rate
(and momentum, weight decay) as Lightning names them."""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.errors import ConfigError


class LearningRateMonitor(Callback):
    """Log the learning rate of every optimizer's parameter groups.

    Names follow Lightning: ``lr-<Optimizer>`` or the scheduler dict's ``name``; a second optimizer of
    the same class gets ``-1``; several parameter groups get ``/pg1``, ``/pg2`` (or the group's
    ``"name"``); momentum and weight decay add ``-momentum`` / ``-weight_decay`` (Adam-style optimizers
    report ``betas[0]`` as momentum). With ``logging_interval=None`` each scheduler is logged at its own
    interval (optimizers without a scheduler at both); ``"step"`` or ``"epoch"`` log everything then.
    The values also land in ``trainer.callback_metrics``; ``monitor.lrs`` keeps their history.

    Example:
        >>> from ember.callbacks import LearningRateMonitor
        >>> monitor = LearningRateMonitor(logging_interval="step", log_momentum=True, log_weight_decay=True)
    """

    def __init__(
        self, logging_interval: str | None = None, log_momentum: bool = False, log_weight_decay: bool = False
    ) -> None:
        if logging_interval not in (None, "step", "epoch"):
            raise ConfigError(
                f"LearningRateMonitor(logging_interval={logging_interval!r}): use 'step', 'epoch' or None"
            )
        self.logging_interval = logging_interval
        self.log_momentum = log_momentum
        self.log_weight_decay = log_weight_decay
        self.lrs: dict[str, list[float]] = {}

    def on_train_start(self, trainer: Any, module: Any) -> None:
        if not trainer.loggers:
            raise ConfigError(
                "LearningRateMonitor needs a logger to write to, and the Trainer has logger=False; "
                "pass a logger or remove the callback"
            )
        self.lrs = {name: [] for names, _, _ in self._named_optimizers(trainer) for name in names}
        # Lightning's condition, quirk included: the scheduled optimizers if any, and "momentum" and "betas"
        # are each looked for in all of them (an SGD beside an Adam warns)
        checked = [c.scheduler.optimizer for c in trainer.lr_scheduler_configs] or list(trainer.optimizers)
        if self.log_momentum and all(
            any(key not in opt.defaults for opt in checked) for key in ("momentum", "betas")
        ):
            warnings.warn(
                "LearningRateMonitor(log_momentum=True) but some optimizers have no momentum; "
                "a value of 0 is logged for them",
                RuntimeWarning,
                stacklevel=2,
            )

    def on_train_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int) -> None:
        # Lightning's rule: the step about to be taken is a logging step (or the run is stopping)
        if self.logging_interval != "epoch" and (
            (trainer.fit_loop.epoch_loop._batches_that_stepped + 1) % trainer.log_every_n_steps == 0
            or trainer.should_stop
        ):
            self._log(trainer, "step" if self.logging_interval is None else "any")

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        if self.logging_interval != "step":
            self._log(trainer, "epoch" if self.logging_interval is None else "any")

    def learning_rates(self, trainer: Any, interval: str = "any") -> dict[str, Any]:
        """The values logged now for schedulers stepping at ``interval`` ("step", "epoch" or "any")."""
        stats: dict[str, Any] = {}
        for names, optimizer, scheduler_interval in self._named_optimizers(trainer):
            if scheduler_interval is not None and interval not in (scheduler_interval, "any"):
                continue
            betas = "betas" in optimizer.defaults
            for name, group in zip(names, optimizer.param_groups, strict=True):
                # the values as the groups hold them, as Lightning logs them (a missing momentum is the int 0)
                stats[name] = group["lr"]
                if self.log_momentum:
                    stats[f"{name}-momentum"] = group["betas"][0] if betas else group.get("momentum", 0)
                if self.log_weight_decay:
                    stats[f"{name}-weight_decay"] = group.get("weight_decay", 0)
        return stats

    def _log(self, trainer: Any, interval: str) -> None:
        stats = self.learning_rates(trainer, interval)
        if not stats:
            return
        lr_names = {name for names, _, _ in self._named_optimizers(trainer) for name in names}
        for name in lr_names.intersection(stats):
            base = name.removesuffix("/pg1")
            if name != base and base in self.lrs and name not in self.lrs:
                self.lrs[name] = self.lrs.pop(
                    base
                )  # a group was added (finetuning): the first keeps its history
            self.lrs.setdefault(name, []).append(stats[name])
        trainer.callback_metrics.update({name: torch.tensor(value) for name, value in stats.items()})
        # To the loggers only, at the count of steps taken (batches, under manual optimization), as Lightning:
        # not into trainer.logged_metrics
        for logger in trainer.loggers:
            logger.log_metrics(stats, trainer.fit_loop.epoch_loop._batches_that_stepped)

    def _named_optimizers(self, trainer: Any) -> list[tuple[list[str], torch.optim.Optimizer, str | None]]:
        """(names of its groups, optimizer, its scheduler's
        interval or None) — schedulers first, as Lightning."""
        seen_types: Counter[type] = Counter()
        seen: list[torch.optim.Optimizer] = []
        out = []
        for config in trainer.lr_scheduler_configs:
            optimizer = config.scheduler.optimizer
            out.append((self._group_names(optimizer, config.name, seen_types), optimizer, config.interval))
            seen.append(optimizer)
        for optimizer in trainer.optimizers:
            if not any(optimizer is other for other in seen):
                out.append((self._group_names(optimizer, None, seen_types), optimizer, None))
        return out

    @staticmethod
    def _group_names(
        optimizer: torch.optim.Optimizer, given: str | None, seen_types: Counter[type]
    ) -> list[str]:
        if given is None:
            seen_types[type(optimizer)] += 1  # a scheduler's own name does not count as a use of the class
        count = seen_types[type(optimizer)]
        name = (given or f"lr-{type(optimizer).__name__}") + (f"-{count - 1}" if count > 1 else "")
        groups = optimizer.param_groups
        labels = [group.get("name", f"pg{i}") for i, group in enumerate(groups, start=1)]
        repeated = {label for label in labels if labels.count(label) > 1}
        if repeated:
            raise ConfigError(
                f"LearningRateMonitor: {name} has several parameter groups named {sorted(repeated)}; "
                "give each group a distinct 'name'"
            )
        if len(groups) > 1:
            return [f"{name}/{label}" for label in labels]
        return [f"{name}/{groups[0]['name']}" if groups[0].get("name") else name]
