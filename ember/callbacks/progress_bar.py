"""ember's default progress display: a tqdm bar on a terminal, plain periodic lines anywhere else (logs, CI,
SLURM); and TQDMProgressBar, the same paced by batches as Lightning's."""

from __future__ import annotations

import sys
import time
from typing import Any

from ember.callbacks.progress_bar_base import ProgressBar
from ember.errors import ConfigError


class TimedProgressBar(ProgressBar):
    """The Trainer's default bar: epoch, batch, it/s and what `get_metrics` returns (the logger's `v_num`, the
    `prog_bar=True` metrics), on global rank zero only, refreshed every `refresh_seconds`.

    On a terminal it draws one tqdm bar per stage; when output is not a terminal it prints one
    line every `refresh_seconds` and one summary line per epoch, so log files stay small.

    Example:
        >>> from ember.callbacks import TimedProgressBar
        >>> bar = TimedProgressBar(refresh_seconds=30)
    """

    def __init__(self, refresh_seconds: float | None = None, stream: Any = None) -> None:
        self.stream = stream
        self.refresh_seconds = refresh_seconds
        self._bar: Any = None
        self._enabled = True
        self._user_enabled = True

    def disable(self) -> None:
        self._user_enabled = self._enabled = False

    def enable(self) -> None:
        self._user_enabled = True
        self._enabled = self._trainer is None or self._trainer.is_global_zero

    # ---- helpers -----------------------------------------------------------------------------
    def _out(self) -> Any:
        return self.stream if self.stream is not None else sys.stderr

    def _interactive(self) -> bool:
        out = self._out()
        return bool(getattr(out, "isatty", lambda: False)())

    def _metrics_text(self, trainer: Any, prefix: str = "") -> str:
        values = self.get_metrics(trainer, trainer.module)
        return "  ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in values.items()
            if k.startswith(prefix)
        )

    def _print(self, text: str) -> None:
        print(text, file=self._out(), flush=True)

    # ---- training ----------------------------------------------------------------------------
    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        self._trainer = trainer
        self._enabled = trainer.is_global_zero and self._user_enabled
        if self.refresh_seconds is None:
            self.refresh_seconds = 0.5 if self._interactive() else 15.0

    def _due(self, now: float) -> bool:
        """Whether this batch refreshes the display: every `refresh_seconds` here."""
        return now - self._last_print >= self.refresh_seconds  # type: ignore[operator]

    def _bar_options(self) -> dict[str, Any]:
        return {"leave": True, "mininterval": self.refresh_seconds}

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        if not self._enabled:
            return
        self._epoch_start = self._last_print = time.monotonic()
        self._count = trainer.progress.batch_idx
        total = trainer.num_training_batches
        self._total = total if isinstance(total, int) and total < 2**62 else None
        if self._interactive():
            from tqdm.auto import tqdm

            self._bar = tqdm(
                total=self._total,
                initial=self._count,
                desc=f"Epoch {trainer.current_epoch}",
                file=self._out(),
                dynamic_ncols=True,
                **self._bar_options(),
            )

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if not self._enabled:
            return
        self._count += 1
        now = time.monotonic()
        if not self._due(now):
            return
        if self._bar is not None:
            self._bar.update(self._count - self._bar.n)
        self._last_print = now
        if self._bar is not None:
            self._bar.set_postfix_str(self._metrics_text(trainer), refresh=False)
        else:
            rate = self._count / max(now - self._epoch_start, 1e-9)
            where = f"{self._count}/{self._total}" if self._total else str(self._count)
            self._print(
                f"epoch {trainer.current_epoch} batch {where}  {rate:.1f} it/s  {self._metrics_text(trainer)}"
            )

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        if not self._enabled:
            return
        if self._bar is not None:
            self._bar.update(self._count - self._bar.n)
            self._bar.set_postfix_str(self._metrics_text(trainer), refresh=True)
            self._bar.close()
            self._bar = None
        else:
            elapsed = time.monotonic() - self._epoch_start
            self._print(
                f"epoch {trainer.current_epoch} done: {self._count} batches in {elapsed:.1f}s  "
                f"{self._metrics_text(trainer)}"
            )

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        """Mid-epoch validations get a line of their own; epoch-end ones show in the epoch summary."""
        mid_epoch = trainer.progress.batch_idx < trainer.num_training_batches
        if (
            self._enabled
            and trainer.fitting
            and not trainer.sanity_checking
            and mid_epoch
            and self._bar is None
        ):
            self._print(f"epoch {trainer.current_epoch} validation: {self._metrics_text(trainer, 'val')}")

    def on_exception(self, trainer: Any, module: Any, exception: BaseException) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class RefreshRateSwitch:
    """Lightning's progress-bar switches: `refresh_rate` (0 = off), `enable()`/`disable()`, `is_enabled`."""

    _refresh_rate: int
    _user_enabled: bool = True

    refresh_rate = property(lambda self: self._refresh_rate)
    is_enabled = property(lambda self: self._refresh_rate > 0 and self._user_enabled)
    is_disabled = property(lambda self: not self.is_enabled)

    def disable(self) -> None:
        self._user_enabled = False

    def enable(self) -> None:
        self._user_enabled = True


class TQDMProgressBar(RefreshRateSwitch, TimedProgressBar):
    """Lightning's ``TQDMProgressBar``: refreshes every `refresh_rate` training batches.

    `refresh_rate=0` turns the bar off (``is_disabled``), `process_position` offsets the bar (several
    bars on one terminal) and `leave` keeps each epoch's finished bar on screen, as in Lightning. Off a
    terminal the same refresh rate paces the plain lines. Lightning's separate validation bars are not
    drawn; validation results show in the epoch's line.

    Example:
        >>> from ember.callbacks import TQDMProgressBar
        >>> bar = TQDMProgressBar(refresh_rate=10)
        >>> bar.refresh_rate, bar.is_enabled
        (10, True)
        >>> TQDMProgressBar(refresh_rate=0).is_disabled
        True
    """

    def __init__(
        self, refresh_rate: int = 1, process_position: int = 0, leave: bool = False, stream: Any = None
    ) -> None:
        for name, value in (("refresh_rate", refresh_rate), ("process_position", process_position)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"TQDMProgressBar({name}={value!r}) must be an int >= 0")
        super().__init__(refresh_seconds=0.0, stream=stream)
        self._refresh_rate = refresh_rate
        self._process_position = process_position
        self._leave = leave
        self._user_enabled = True

    process_position = property(lambda self: self._process_position)

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        super().setup(trainer, module, stage)
        self._enabled = self._enabled and self.is_enabled

    def _due(self, now: float) -> bool:
        return self._count % self._refresh_rate == 0 or self._count == self._total

    def _bar_options(self) -> dict[str, Any]:
        return {"leave": self._leave, "position": 2 * self._process_position, "mininterval": 0}
