"""RichProgressBar: the training progress drawn with `rich` (Lightning's callback; rich is the `rich` extra).

rich is imported when the bar is built, never at `import ember`; without it the constructor refuses in one
line naming `pip install 'ember[rich]'` or `TQDMProgressBar`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from ember.callbacks.progress_bar import RefreshRateSwitch, TimedProgressBar
from ember.errors import ConfigError


@dataclasses.dataclass
class RichProgressBarTheme:
    """Styles of the bar's parts (rich style strings), Lightning's fields and defaults."""

    description: Any = ""
    progress_bar: Any = "#6206E0"
    progress_bar_finished: Any = "#6206E0"
    progress_bar_pulse: Any = "#6206E0"
    batch_progress: Any = ""
    time: Any = "dim"
    processing_speed: Any = "dim underline"
    metrics: Any = "italic"
    metrics_text_delimiter: str = " "
    metrics_format: str = ".3f"


class RichProgressBar(RefreshRateSwitch, TimedProgressBar):
    """One rich bar per training epoch: `Epoch N`, the bar, batches done/total, time, speed and the
    `prog_bar=True` metrics, on global rank zero only.

    `refresh_rate` is redraws per second (0 turns the bar off, as in Lightning), `leave` keeps each finished
    epoch's bar on screen, `theme` styles the parts and `console_kwargs` go to rich's `Console` (e.g.
    `{"file": f, "force_terminal": True}`). Lightning's separate validation bars are not drawn; the
    validation metrics show among the epoch's metrics.

    Example:
        >>> from ember.callbacks import RichProgressBar
        >>> bar = RichProgressBar(refresh_rate=10, leave=True)
        >>> bar.refresh_rate, bar.is_enabled
        (10, True)
    """

    def __init__(
        self,
        refresh_rate: int = 100,
        leave: bool = False,
        theme: RichProgressBarTheme | None = None,
        console_kwargs: dict[str, Any] | None = None,
    ) -> None:
        try:
            import rich.progress  # noqa: F401  (checked now: the refusal belongs at construction)
        except ImportError:
            raise ConfigError(
                "RichProgressBar needs the rich package: pip install 'ember[rich]', or use TQDMProgressBar"
            ) from None
        if isinstance(refresh_rate, bool) or not isinstance(refresh_rate, int) or refresh_rate < 0:
            raise ConfigError(
                f"RichProgressBar(refresh_rate={refresh_rate!r}) must be an int >= 0 (redraws a second)"
            )
        super().__init__(refresh_seconds=0.0)
        self._refresh_rate, self._leave = refresh_rate, leave
        self.theme = theme if theme is not None else RichProgressBarTheme()
        self._console_kwargs = dict(console_kwargs or {})
        self._user_enabled = True
        self.progress: Any = None  # rich.progress.Progress while a fit runs
        self._task: Any = None
        self._last_refresh = 0.0

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        self._trainer = trainer
        self._enabled = trainer.is_global_zero and self.is_enabled

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        theme = self.theme
        self.progress = Progress(
            TextColumn("[progress.description]{task.description}", style=theme.description),
            BarColumn(
                complete_style=theme.progress_bar,
                finished_style=theme.progress_bar_finished,
                pulse_style=theme.progress_bar_pulse,
            ),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[speed]}", style=theme.processing_speed),
            TextColumn("{task.fields[metrics]}", style=theme.metrics),
            console=Console(**self._console_kwargs),
            auto_refresh=False,
            transient=False,
        )
        self.progress.start()

    def _metrics(self, trainer: Any) -> str:
        fmt, sep = self.theme.metrics_format, self.theme.metrics_text_delimiter
        return sep.join(
            f"{k}: {v:{fmt}}" if isinstance(v, float) else f"{k}: {v}"
            for k, v in self.get_metrics(trainer, trainer.module).items()
        )

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        if not self._enabled:
            return
        if self.progress is None:
            self._start()
        if self._task is not None and not self._leave:
            self.progress.remove_task(self._task)
        total = trainer.num_training_batches
        self._count = trainer.progress.batch_idx
        self._epoch_start = time.monotonic()
        self._task = self.progress.add_task(
            f"Epoch {trainer.current_epoch}",
            total=total if isinstance(total, int) else None,
            completed=self._count,
            speed="",
            metrics="",
        )
        self._refresh()

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if not self._enabled or self._task is None:
            return
        self._count += 1
        now = time.monotonic()
        if now - self._last_refresh >= 1.0 / self._refresh_rate:
            self._show(trainer, now)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        if self._enabled and self._task is not None:
            self._show(trainer, time.monotonic())

    def _show(self, trainer: Any, now: float) -> None:
        speed = self._count / max(now - self._epoch_start, 1e-9)
        self.progress.update(
            self._task, completed=self._count, speed=f"{speed:.2f}it/s", metrics=self._metrics(trainer)
        )
        self._refresh()

    def _refresh(self) -> None:
        self._last_refresh = time.monotonic()
        self.progress.refresh()

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        """The validation metrics appear in the epoch bar's metrics (no separate line)."""

    def on_train_end(self, trainer: Any, module: Any) -> None:
        self._stop()

    def on_exception(self, trainer: Any, module: Any, exception: BaseException) -> None:
        self._stop()

    def teardown(self, trainer: Any, module: Any, stage: str) -> None:
        self._stop()

    def _stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress, self._task = None, None
