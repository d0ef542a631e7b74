"""EarlyStopping: stop training when a monitored metric stops improving."""

from __future__ import annotations

import math
from typing import Any

from ember.callbacks.callback import Callback
from ember.errors import ConfigError


class EarlyStopping(Callback):
    """Stop when `monitor` has not improved by `min_delta` for `patience` checks.

    Example:
        >>> from ember.callbacks import EarlyStopping
        >>> stop = EarlyStopping(monitor="val_loss", patience=3, mode="min")
    """

    def __init__(
        self,
        monitor: str,
        min_delta: float = 0.0,
        patience: int = 3,
        mode: str = "min",
        strict: bool = True,
        check_finite: bool = True,
        stopping_threshold: float | None = None,
        divergence_threshold: float | None = None,
        check_on_train_epoch_end: bool | None = None,
        verbose: bool = False,
    ) -> None:
        if mode not in ("min", "max"):
            raise ConfigError(f"EarlyStopping(mode={mode!r}) must be 'min' or 'max'")
        self.monitor, self.mode, self.patience, self.strict = monitor, mode, patience, strict
        self.min_delta = abs(min_delta) if mode == "max" else -abs(min_delta)
        self.check_finite = check_finite
        self.stopping_threshold, self.divergence_threshold = stopping_threshold, divergence_threshold
        self.check_on_train_epoch_end = check_on_train_epoch_end
        self.verbose = verbose
        self.wait_count = 0
        self.stopped_epoch = 0
        self.best_score = math.inf if mode == "min" else -math.inf
        self.stopping_reason = ""

    @property
    def state_key(self) -> str:
        return f"EarlyStopping{{'monitor': {self.monitor!r}, 'mode': {self.mode!r}}}"

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        on_train = self.check_on_train_epoch_end
        if on_train is None:
            on_train = not trainer.will_validate_this_epoch
        if on_train:
            self._check(trainer)

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        if not trainer.fitting or trainer.sanity_checking or self.check_on_train_epoch_end or not trainer.will_validate_this_epoch:
            return
        self._check(trainer)

    def _improved(self, current: float) -> bool:
        if self.mode == "min":
            return current < self.best_score + self.min_delta
        return current > self.best_score + self.min_delta

    def _check(self, trainer: Any) -> None:
        metrics = trainer.callback_metrics
        if self.monitor not in metrics:
            if self.strict:
                raise ConfigError(
                    f"EarlyStopping(monitor={self.monitor!r}) but no such metric was logged; "
                    f"logged: {sorted(metrics)}; log it or pass strict=False"
                )
            return
        # DDP: all ranks must stop after the same epoch, so every rank decides on rank zero's value.
        current = float(trainer.strategy.broadcast(float(metrics[self.monitor])))
        reason = ""
        if self.check_finite and not math.isfinite(current):
            reason = f"{self.monitor} = {current} is not finite"
        elif self.stopping_threshold is not None and not self._worse(current, self.stopping_threshold):
            reason = f"{self.monitor} = {current:.5g} reached stopping_threshold {self.stopping_threshold}"
        elif self.divergence_threshold is not None and self._worse(current, self.divergence_threshold):
            reason = f"{self.monitor} = {current:.5g} is past divergence_threshold {self.divergence_threshold}"
        elif self._improved(current):
            self.best_score, self.wait_count = current, 0
        else:
            self.wait_count += 1
            if self.wait_count >= self.patience:
                reason = f"{self.monitor} did not improve for {self.wait_count} checks (best {self.best_score:.5g})"
        if reason:
            self.stopping_reason = reason
            self.stopped_epoch = trainer.current_epoch
            trainer.should_stop = True
            if self.verbose:
                print(f"EarlyStopping: {reason}")

    def _worse(self, current: float, threshold: float) -> bool:
        return current > threshold if self.mode == "min" else current < threshold

    def state_dict(self) -> dict[str, Any]:
        # patience too: Lightning's EarlyStopping.load_state_dict requires it (its state key is the same)
        return {"wait_count": self.wait_count, "stopped_epoch": self.stopped_epoch, "best_score": self.best_score,
                "patience": self.patience}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.wait_count = state_dict["wait_count"]
        self.stopped_epoch = state_dict["stopped_epoch"]
        self.best_score = state_dict["best_score"]
