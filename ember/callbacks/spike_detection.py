"""SpikeDetection: stop training when the loss spikes, and write down the batches to skip (Lightning 2.6's).

How it runs, as Lightning's: after each training batch (from batch index `warmup` of each epoch on) the loss
is a spike when it is not better than the previous batch's loss (lower for mode "min", higher for "max") and
differs from the running mean of the last `window` losses by at least `atol` (when given) and by at least
`rtol` times that mean (when given); with `finite_only=True` a NaN or infinite loss is a spike too. A spike
adds that batch's index and the one before it to `bad_batches`, writes the list as JSON to
`exclude_batches_path` (default: `<default_root_dir>/skip_batches.json`; a folder gets `skip_batches.json`
inside it) and raises `TrainingSpikeException`. Losses that are not spikes enter the running mean; with
`finite_only=False` a non-finite loss on any process keeps every process's out of it.

The running mean is kept in float64 (Lightning's torchmetrics mean is float32: a loss exactly at a threshold
could be judged differently). Its state, the window included, is in the checkpoint (Lightning saves its
torchmetrics state but cannot load it back).
"""

from __future__ import annotations

import json
import math
import os
from collections import deque
from collections.abc import Mapping
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.errors import ConfigError, EmberError
from ember.fs import make_folders

SKIP_FILE = "skip_batches.json"


class TrainingSpikeException(EmberError, RuntimeError):
    """The loss spiked at a batch (Lightning's exception of the same name): resume skipping the batches listed
    in SpikeDetection's `exclude_batches_path`."""

    def __init__(self, batch_idx: int, *args: Any) -> None:
        super().__init__(f"Training spike detected in batch {batch_idx}", *args)


class SpikeDetection(Callback):
    """Raise `TrainingSpikeException` when the training loss spikes above its running mean.

    Example:
        >>> from ember.callbacks import SpikeDetection
        >>> detector = SpikeDetection(window=3, warmup=0, rtol=0.5)
        >>> [detector.is_spike(torch.tensor(v)) for v in (2.0, 1.9, 1.8)]  # improving: never a spike
        [False, False, False]
        >>> for v in (2.0, 1.9, 1.8):
        ...     detector.update(torch.tensor(v))
        >>> # mean 1.9: 3.0 is 58% above
        >>> detector.is_spike(torch.tensor(2.1)), detector.is_spike(torch.tensor(3.0))
        (False, True)
    """

    def __init__(
        self,
        mode: str = "min",
        window: int = 10,
        warmup: int = 1,
        atol: float | None = None,
        rtol: float | None = 2.0,
        exclude_batches_path: str | os.PathLike[str] | None = None,
        finite_only: bool = True,
    ) -> None:
        if mode not in ("min", "max"):
            raise ConfigError(f"SpikeDetection(mode={mode!r}): use 'min' or 'max'")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ConfigError(f"SpikeDetection(window={window!r}) should be an int >= 1")
        self.mode, self.warmup, self.atol, self.rtol = mode, warmup, atol, rtol
        self.exclude_batches_path = None if exclude_batches_path is None else str(exclude_batches_path)
        self.finite_only = finite_only
        self.last_val: float = 0.0
        self.window: deque[float] = deque(maxlen=window)
        self.bad_batches: list[int] = []

    # ---- the test ----------------------------------------------------------------------------------
    @property
    def running_mean(self) -> float:
        """The mean of the last `window` losses that were not spikes (NaN before the first)."""
        return sum(self.window) / len(self.window) if self.window else math.nan

    def is_spike(self, loss: torch.Tensor) -> bool:
        value = float(loss)
        if self.finite_only and not math.isfinite(value):
            return True
        change = value - self.last_val
        if (change <= 0) if self.mode == "min" else (change >= 0):  # as good as the last one or better
            return False
        distance, mean = abs(value - self.running_mean), self.running_mean
        return (self.atol is None or distance >= abs(self.atol)) and (
            self.rtol is None or distance >= abs(self.rtol * mean)
        )

    def update(self, loss: torch.Tensor) -> None:
        """Add a loss that was not a spike to the running mean."""
        self.window.append(float(loss))
        self.last_val = float(loss)

    # ---- the fit ----------------------------------------------------------------------------------------
    @torch.no_grad()
    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if isinstance(outputs, torch.Tensor):
            loss = outputs.detach()
        elif isinstance(outputs, Mapping) and "loss" in outputs:
            loss = outputs["loss"].detach()
        else:
            raise ConfigError(
                f"SpikeDetection reads the loss training_step returns (a tensor, or a dict with 'loss'); "
                f"it returned {type(outputs).__qualname__}"
            )
        if self.exclude_batches_path is None:
            self.exclude_batches_path = os.path.join(trainer.default_root_dir, SKIP_FILE)
        if not self.exclude_batches_path.endswith(".json"):
            self.exclude_batches_path = os.path.join(self.exclude_batches_path, SKIP_FILE)
        spike = batch_idx >= self.warmup and self.is_spike(loss)
        if trainer.strategy.any_rank(spike):  # any process's spike stops them all
            self._handle_spike(trainer, batch_idx)
        if self.finite_only or not trainer.strategy.any_rank(not bool(torch.isfinite(loss).all())):
            self.update(loss)

    def _handle_spike(self, trainer: Any, batch_idx: int) -> None:
        # the batch before may have moved the weights to where this one spikes: both are skipped
        self.bad_batches.extend([batch_idx - 1, batch_idx])
        if trainer.is_global_zero:
            assert self.exclude_batches_path is not None
            make_folders(os.path.dirname(self.exclude_batches_path) or ".")
            from ember.fs import atomic_write

            with atomic_write(self.exclude_batches_path, "w") as f:
                json.dump(self.bad_batches, f, indent=4)
        raise TrainingSpikeException(batch_idx=batch_idx)

    # ---- resume state (Lightning's keys, the window as a list) ---------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "last_val": self.last_val,
            "mode": self.mode,
            "warmup": self.warmup,
            "atol": self.atol,
            "rtol": self.rtol,
            "bad_batches": list(self.bad_batches),
            "bad_batches_path": self.exclude_batches_path,
            "window": list(self.window),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.last_val, self.mode, self.warmup = (
            state_dict["last_val"],
            state_dict["mode"],
            state_dict["warmup"],
        )
        self.atol, self.rtol = state_dict["atol"], state_dict["rtol"]
        self.bad_batches = list(state_dict["bad_batches"])
        self.exclude_batches_path = state_dict["bad_batches_path"]
        self.window = deque(state_dict.get("window", []), maxlen=self.window.maxlen)
