"""EarlyStopping: stop training when a monitored metric
stops improving (Lightning 2.6's rules and messages)."""

from __future__ import annotations

import enum
import sys
import warnings
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.errors import ConfigError, MetricNotFoundError


class EarlyStoppingReason(enum.Enum):
    """Why an EarlyStopping stopped the run (`EarlyStopping.stopping_reason`), as Lightning numbers them."""

    NOT_STOPPED = 0
    STOPPING_THRESHOLD = 1
    DIVERGENCE_THRESHOLD = 2
    PATIENCE_EXHAUSTED = 3
    NON_FINITE_METRIC = 4


class EarlyStopping(Callback):
    """Stop when `monitor` has not improved by more than `min_delta` for `patience` checks in a row.

    Also stops at once when the metric is not finite (`check_finite`), gets better than
    `stopping_threshold`, or worse than `divergence_threshold`. It checks after each validation, or
    at the end of each training epoch when validation runs exactly once per epoch or never (Lightning's
    default for `check_on_train_epoch_end=None`). `min_delta` keeps its sign: a negative one lets a
    slightly worse value count as an improvement. Its state (best score, waits) is in checkpoints.

    Example:
        >>> from ember.callbacks import EarlyStopping
        >>> stop = EarlyStopping(monitor="val_loss", patience=3, min_delta=0.01, stopping_threshold=0.05)
        >>> stop.min_delta, stop.stopping_reason.name
        (-0.01, 'NOT_STOPPED')
    """

    order_dict = {"min": "<", "max": ">"}

    def __init__(
        self,
        monitor: str,
        min_delta: float = 0.0,
        patience: int = 3,
        verbose: bool = False,
        mode: str = "min",
        strict: bool = True,
        check_finite: bool = True,
        stopping_threshold: float | None = None,
        divergence_threshold: float | None = None,
        check_on_train_epoch_end: bool | None = None,
        log_rank_zero_only: bool = False,
    ) -> None:
        if mode not in self.order_dict:
            raise ConfigError(f"EarlyStopping(mode={mode!r}) must be 'min' or 'max'")
        self.monitor, self.mode, self.patience, self.strict = monitor, mode, patience, strict
        self.min_delta = min_delta * (1 if mode == "max" else -1)  # as Lightning: the sign is kept, not abs()
        self.verbose, self.check_finite = verbose, check_finite
        self.stopping_threshold, self.divergence_threshold = stopping_threshold, divergence_threshold
        self._check_on_train_epoch_end = check_on_train_epoch_end
        self.log_rank_zero_only = log_rank_zero_only
        self.wait_count = 0
        self.stopped_epoch = 0
        self.best_score = torch.tensor(torch.inf if mode == "min" else -torch.inf)
        self.stopping_reason = EarlyStoppingReason.NOT_STOPPED
        self.stopping_reason_message: str | None = None

    @property
    def state_key(self) -> str:
        return f"EarlyStopping{{'monitor': {self.monitor!r}, 'mode': {self.mode!r}}}"

    @property
    def check_on_train_epoch_end(self) -> bool | None:
        return self._check_on_train_epoch_end

    def monitor_op(self, a: torch.Tensor, b: torch.Tensor | float) -> bool:
        """Whether `a` is better than `b` (strictly)."""
        return bool(torch.lt(a, b) if self.mode == "min" else torch.gt(a, b))

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if self._check_on_train_epoch_end is None:  # validation once per epoch (or never): decide at its end
            # Lightning compares with == 1.0, so an int 1 (every batch) counts too; ember's None is its 1.0
            once_per_epoch = (
                trainer.val_check_interval in (None, 1.0) and trainer.check_val_every_n_epoch == 1
            )
            self._check_on_train_epoch_end = once_per_epoch

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        if self._check_on_train_epoch_end and not self._skip(trainer):
            self._run_early_stopping_check(trainer)

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        if not self._check_on_train_epoch_end and not self._skip(trainer):
            self._run_early_stopping_check(trainer)

    @staticmethod
    def _skip(trainer: Any) -> bool:
        return not trainer.fitting or trainer.sanity_checking or bool(trainer.fast_dev_run)

    def _run_early_stopping_check(self, trainer: Any) -> None:
        metrics = trainer.callback_metrics
        if self.monitor not in metrics:
            names = "`, `".join(metrics)  # Lightning's words, which users' tests match
            message = (
                f"Early stopping conditioned on metric `{self.monitor}` which is not available. Pass in or "
                f"modify your `EarlyStopping` callback to use any of the following: `{names}`"
            )
            if self.strict:
                raise MetricNotFoundError(message)
            if self.verbose:
                warnings.warn(message, RuntimeWarning, stacklevel=2)
            return
        current = torch.as_tensor(metrics[self.monitor]).squeeze()
        should_stop, reason = self._evaluate_stopping_criteria(current)
        # DDP, as Lightning: each rank judges its own value and every rank stops when any of them says so
        should_stop = trainer.strategy.any_rank(should_stop)
        trainer.should_stop = trainer.should_stop or should_stop
        if should_stop:
            self.stopped_epoch = trainer.current_epoch
            self.stopping_reason_message = reason
        if reason and self.verbose and (not self.log_rank_zero_only or trainer.is_global_zero):
            prefix = f"[rank: {trainer.global_rank}] " if trainer.world_size > 1 else ""
            print(
                prefix + reason, file=sys.stderr
            )  # Lightning logs it at INFO, which its handler prints there

    def _evaluate_stopping_criteria(self, current: torch.Tensor) -> tuple[bool, str | None]:
        best = self.best_score
        if self.check_finite and not torch.isfinite(current):
            self.stopping_reason = EarlyStoppingReason.NON_FINITE_METRIC
            return True, (
                f"Monitored metric {self.monitor} = {current} is not finite. "
                f"Previous best value was {best:.3f}. Signaling Trainer to stop."
            )
        sign = self.order_dict[self.mode]
        if self.stopping_threshold is not None and self.monitor_op(current, self.stopping_threshold):
            self.stopping_reason = EarlyStoppingReason.STOPPING_THRESHOLD
            return True, (
                f"Stopping threshold reached: {self.monitor} = {current} {sign} {self.stopping_threshold}. "
                "Signaling Trainer to stop."
            )
        if self.divergence_threshold is not None and self.monitor_op(-current, -self.divergence_threshold):
            self.stopping_reason = EarlyStoppingReason.DIVERGENCE_THRESHOLD
            return True, (
                f"Divergence threshold reached: {self.monitor} = {current} {sign} "
                f"{self.divergence_threshold}. Signaling Trainer to stop."
            )
        if self.monitor_op(current - self.min_delta, best.to(current.device)):
            if torch.isfinite(best):
                message = (
                    f"Metric {self.monitor} improved by {abs(best - current):.3f} >= min_delta = "
                    f"{abs(self.min_delta)}. New best score: {current:.3f}"
                )
            else:
                message = f"Metric {self.monitor} improved. New best score: {current:.3f}"
            self.best_score, self.wait_count = current, 0
            return False, message
        self.wait_count += 1
        if self.wait_count < self.patience:
            return False, None
        self.stopping_reason = EarlyStoppingReason.PATIENCE_EXHAUSTED
        return True, (
            f"Monitored metric {self.monitor} did not improve in the last {self.wait_count} records. "
            f"Best score: {best:.3f}. Signaling Trainer to stop."
        )

    def state_dict(self) -> dict[str, Any]:
        # best_score stays a tensor and patience is included:
        # Lightning's load_state_dict needs both (same state key)
        return {
            "wait_count": self.wait_count,
            "stopped_epoch": self.stopped_epoch,
            "best_score": self.best_score,
            "patience": self.patience,
            "stopping_reason": self.stopping_reason.value,
            "stopping_reason_message": self.stopping_reason_message,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.wait_count = state_dict["wait_count"]
        self.stopped_epoch = state_dict["stopped_epoch"]
        self.best_score = torch.as_tensor(state_dict["best_score"])
        self.patience = state_dict.get("patience", self.patience)
        self.stopping_reason = EarlyStoppingReason(state_dict.get("stopping_reason", 0))
        self.stopping_reason_message = state_dict.get("stopping_reason_message")
