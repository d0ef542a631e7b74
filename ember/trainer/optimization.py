"""One optimization step: backward, accumulation, clipping, gradient scaling, scheduler stepping."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch

from ember.errors import ConfigError
from ember.trainer.data import explain_step_error


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


def parse_optimizers(result: Any, owner: str) -> tuple[list[torch.optim.Optimizer], list[SchedulerConfig]]:
    """Read what `configure_optimizers` returned, in any of the shapes Lightning accepts."""
    if isinstance(result, torch.optim.Optimizer):
        return [result], []
    if isinstance(result, Mapping):
        return _from_dict(result, owner)
    if isinstance(result, (list, tuple)):
        if len(result) == 2 and isinstance(result[0], (list, tuple)) and isinstance(result[1], (list, tuple)):
            return list(result[0]), [_scheduler_config(s, owner) for s in result[1]]
        optimizers, schedulers = [], []
        for item in result:
            opts, scheds = parse_optimizers(item, owner)
            optimizers += opts
            schedulers += scheds
        if optimizers:
            return optimizers, schedulers
    raise ConfigError(
        f"{owner}.configure_optimizers returned {type(result).__name__}; return an optimizer, a list of them, "
        "(optimizers, schedulers), or {'optimizer': ..., 'lr_scheduler': ...}"
    )


def _from_dict(result: Mapping[str, Any], owner: str) -> tuple[list[torch.optim.Optimizer], list[SchedulerConfig]]:
    if "optimizer" not in result:
        raise ConfigError(f"{owner}.configure_optimizers returned a dict without 'optimizer' (keys: {sorted(result)})")
    schedulers = []
    if result.get("lr_scheduler") is not None:
        config = _scheduler_config(result["lr_scheduler"], owner)
        config.monitor = config.monitor or result.get("monitor")
        schedulers.append(config)
    return [result["optimizer"]], schedulers


def _scheduler_config(item: Any, owner: str) -> SchedulerConfig:
    if isinstance(item, Mapping):
        unknown = set(item) - {f.name for f in dataclasses.fields(SchedulerConfig)}
        if "scheduler" not in item or unknown:
            raise ConfigError(
                f"{owner}.configure_optimizers: lr_scheduler dict needs 'scheduler' and may have "
                f"interval/frequency/monitor/name/strict (got {sorted(item)})"
            )
        config = SchedulerConfig(**item)
    else:
        config = SchedulerConfig(scheduler=item)
    if config.interval not in ("step", "epoch"):
        raise ConfigError(f"lr_scheduler interval={config.interval!r} must be 'step' or 'epoch'")
    return config


def loss_from_output(output: Any) -> torch.Tensor:
    """The scalar loss in what `training_step` returned (a tensor, or a dict with 'loss')."""
    loss = output
    if isinstance(output, Mapping):
        if "loss" not in output:
            raise ConfigError(f"training_step returned a dict without 'loss' (keys: {sorted(output)}); add the loss")
        loss = output["loss"]
    if not isinstance(loss, torch.Tensor):
        if output is None:
            raise ConfigError(
                "training_step returned None; return the loss tensor (or a dict with 'loss'). For custom "
                "optimization set self.automatic_optimization = False"
            )
        raise ConfigError(f"training_step returned {type(loss).__name__}; return a scalar loss tensor")
    if loss.dim() != 0 and loss.numel() != 1:
        raise ConfigError(
            f"training_step returned a loss of shape {tuple(loss.shape)}; reduce it to a scalar (e.g. loss.mean())"
        )
    if not loss.requires_grad:
        raise ConfigError(
            "training_step returned a loss that does not require grad; do not detach it or compute it under no_grad"
        )
    return loss


class AutomaticOptimization:
    """zero_grad → training_step → backward (→ accumulate) → clip → optimizer step → schedulers."""

    def __init__(self, trainer: Any, optimizer: torch.optim.Optimizer, schedulers: list[SchedulerConfig]) -> None:
        self.trainer = trainer
        self.optimizer = optimizer
        self.step_schedulers = [s for s in schedulers if s.interval == "step"]
        self.accumulate = trainer.accumulate_grad_batches
        self.micro_step = 0  # micro-batches accumulated in the current window

    @property
    def at_window_boundary(self) -> bool:
        return self.micro_step == 0

    def run(self, batch: Any, batch_idx: int) -> Any:
        trainer, hooks, opt = self.trainer, self.trainer._hooks, self.optimizer
        if self.micro_step == 0:
            for fn in hooks.get("on_before_zero_grad"):
                fn(opt)
            opt.zero_grad()
        with trainer.precision_plugin.autocast():
            try:  # costs nothing unless it raises (zero-cost exceptions)
                output = trainer.strategy.training_step(trainer.module, batch, batch_idx)
            except ValueError as e:
                hint = explain_step_error(e, batch, "training_step")
                if hint is None:
                    raise
                raise hint from e
        loss = loss_from_output(output)
        trainer._last_loss = loss.detach()
        self.micro_step += 1
        finishes_window = self.micro_step >= self.accumulate
        if self.accumulate > 1:
            loss = loss / self.accumulate
        with trainer.strategy.no_backward_sync(not finishes_window):
            for fn in hooks.get("on_before_backward"):
                fn(loss)
            scaler = trainer.precision_plugin.scaler
            (scaler.scale(loss) if scaler is not None else loss).backward()
            for fn in hooks.get("on_after_backward"):
                fn()
        if finishes_window:
            self.step()
        return output

    def step(self) -> None:
        """Finish an accumulation window: unscale, hooks, clip, optimizer and per-step schedulers."""
        trainer, opt = self.trainer, self.optimizer
        self.micro_step = 0
        scaler = trainer.precision_plugin.scaler
        if scaler is not None:
            scaler.unscale_(opt)
        for fn in trainer._hooks.get("on_before_optimizer_step"):
            fn(opt)
        if trainer.gradient_clip_val:
            clip_gradients(opt, trainer.gradient_clip_val, trainer.gradient_clip_algorithm)
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        trainer.progress.global_step += 1
        for config in self.step_schedulers:
            if trainer.progress.global_step % config.frequency == 0:
                step_scheduler(config, trainer)


def clip_gradients(optimizer: torch.optim.Optimizer, value: float, algorithm: str) -> None:
    params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    if algorithm == "value":
        torch.nn.utils.clip_grad_value_(params, value)
    else:
        torch.nn.utils.clip_grad_norm_(params, value)


def step_scheduler(config: SchedulerConfig, trainer: Any) -> None:
    if not config.needs_metric:
        config.scheduler.step()
        return
    metrics = trainer.callback_metrics
    if config.monitor not in metrics:
        if config.strict:
            raise ConfigError(
                f"ReduceLROnPlateau monitors {config.monitor!r} but it was not logged; logged: {sorted(metrics)}"
            )
        return
    config.scheduler.step(float(metrics[config.monitor]))


class ManualOptimization:
    """`automatic_optimization = False`: the Module calls backward and step itself."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.at_window_boundary = True

    def run(self, batch: Any, batch_idx: int) -> Any:
        trainer = self.trainer
        with trainer.precision_plugin.autocast():
            try:
                output = trainer.strategy.training_step(trainer.module, batch, batch_idx)
            except ValueError as e:
                hint = explain_step_error(e, batch, "training_step")
                if hint is None:
                    raise
                raise hint from e
        if isinstance(output, torch.Tensor):
            trainer._last_loss = output.detach()
        elif isinstance(output, Mapping) and isinstance(output.get("loss"), torch.Tensor):
            trainer._last_loss = output["loss"].detach()
        return output

    def step(self) -> None: ...


class StepCountingOptimizer:
    """What `self.optimizers()` returns under manual optimization: counts steps and applies scaling."""

    def __init__(self, optimizer: torch.optim.Optimizer, trainer: Any) -> None:
        self._optimizer = optimizer
        self._trainer = trainer

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self._optimizer

    def step(self, closure: Any = None) -> Any:
        trainer = self._trainer
        for fn in trainer._hooks.get("on_before_optimizer_step"):
            fn(self._optimizer)
        scaler = trainer.precision_plugin.scaler
        if scaler is not None:
            result = scaler.step(self._optimizer, closure) if closure else scaler.step(self._optimizer)
            scaler.update()
        else:
            result = self._optimizer.step(closure) if closure is not None else self._optimizer.step()
        trainer.progress.global_step += 1
        return result

    def zero_grad(self, set_to_none: bool = True) -> None:
        self._optimizer.zero_grad(set_to_none=set_to_none)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._optimizer, name)
