"""Timer: how long each stage ran, and a time limit for training (Lightning's ``Timer``)."""

from __future__ import annotations

import re
import sys
import time
from datetime import timedelta
from typing import Any

from ember.callbacks.callback import Callback
from ember.errors import ConfigError

STAGES = ("train", "sanity_check", "validate", "test", "predict")
_DURATION = re.compile(r"(\d+):(\d\d):(\d\d):(\d\d)")


def parse_duration(duration: str | timedelta | dict[str, int] | None) -> float | None:
    """Seconds in ``duration``: ``"DD:HH:MM:SS"``, a ``timedelta``, or ``timedelta`` keyword arguments.

    >>> parse_duration("00:01:30:00"), parse_duration({"minutes": 2}), parse_duration(None)
    (5400.0, 120.0, None)
    """
    if duration is None:
        return None
    if isinstance(duration, str):
        match = _DURATION.fullmatch(duration.strip())
        if match is None:
            raise ConfigError(
                f"Timer(duration={duration!r}) is not a duration; write it as 'DD:HH:MM:SS', "
                "e.g. '00:12:00:00' for twelve hours"
            )
        days, hours, minutes, seconds = (int(part) for part in match.groups())
        duration = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    elif isinstance(duration, dict):
        try:
            duration = timedelta(**duration)
        except TypeError as error:
            raise ConfigError(
                f"Timer(duration={duration!r}): {error}; use timedelta's keywords "
                "(weeks, days, hours, minutes, seconds)"
            ) from None
    if not isinstance(duration, timedelta):
        raise ConfigError(
            f"Timer(duration={duration!r}) must be a 'DD:HH:MM:SS' string, a datetime.timedelta "
            "or a dict of timedelta keywords"
        )
    return duration.total_seconds()


class Timer(Callback):
    """Measure the time spent in training, validation and testing; stop training at ``duration``.

    The limit is checked after every training batch (``interval="step"``) or at every epoch end
    (``interval="epoch"``); reaching it sets ``trainer.should_stop``, agreed across ranks. Training
    time survives a resume: the checkpoint holds the time already spent, so a resumed run stops
    when the total reaches ``duration``.

    Example:
        >>> from ember import Trainer
        >>> from ember.callbacks import Timer
        >>> timer = Timer(duration="00:12:00:00")            # stop training after 12 hours
        >>> timer = Timer(duration={"weeks": 1}, interval="epoch")
        >>> trainer = Trainer(callbacks=[timer], logger=False, enable_checkpointing=False)
        >>> timer.time_elapsed("train"), timer.time_remaining("train")
        (0, 604800.0)
    """

    def __init__(
        self,
        duration: str | timedelta | dict[str, int] | None = None,
        interval: str = "step",
        verbose: bool = True,
    ) -> None:
        if interval not in ("step", "epoch"):
            raise ConfigError(f"Timer(interval={interval!r}) is not supported; use 'step' or 'epoch'")
        self._duration = parse_duration(duration)
        self._interval = interval
        self._verbose = verbose
        self._start: dict[str, float | None] = dict.fromkeys(STAGES)
        self._end: dict[str, float | None] = dict.fromkeys(STAGES)
        self._offset: float = 0  # training seconds spent before this run resumed

    def start_time(self, stage: str = "train") -> float | None:
        """When ``stage`` last started (``time.monotonic()`` seconds), or None."""
        return self._start[_stage(stage)]

    def end_time(self, stage: str = "train") -> float | None:
        """When ``stage`` last ended (``time.monotonic()`` seconds), or None."""
        return self._end[_stage(stage)]

    def time_elapsed(self, stage: str = "train") -> float:
        """Seconds spent in ``stage`` (for training, including the time before a resume)."""
        stage = _stage(stage)
        offset = self._offset if stage == "train" else 0
        start, end = self._start[stage], self._end[stage]
        if start is None:
            return offset
        return (time.monotonic() if end is None else end) - start + offset

    def time_remaining(self, stage: str = "train") -> float | None:
        """Seconds left before ``duration`` is reached, or None without a duration."""
        return None if self._duration is None else self._duration - self.time_elapsed(stage)

    def on_train_start(self, trainer: Any, module: Any) -> None:
        self._start["train"] = time.monotonic()

    def on_train_end(self, trainer: Any, module: Any) -> None:
        self._end["train"] = time.monotonic()

    def on_validation_start(self, trainer: Any, module: Any) -> None:
        self._start["validate"] = time.monotonic()

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        self._end["validate"] = time.monotonic()

    def on_test_start(self, trainer: Any, module: Any) -> None:
        self._start["test"] = time.monotonic()

    def on_test_end(self, trainer: Any, module: Any) -> None:
        self._end["test"] = time.monotonic()

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        if self._duration is not None:
            self._check(trainer)  # a resumed run may already be out of time

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self._interval == "step" and self._duration is not None:
            self._check(trainer)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        if self._interval == "epoch" and self._duration is not None:
            self._check(trainer)

    def state_dict(self) -> dict[str, Any]:
        return {"time_elapsed": {stage: self.time_elapsed(stage) for stage in STAGES}}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._offset = state_dict.get("time_elapsed", {}).get("train", 0)

    def _check(self, trainer: Any) -> None:
        assert self._duration is not None
        out_of_time = trainer.strategy.broadcast(self.time_elapsed() >= self._duration)
        if not out_of_time:
            return
        trainer.should_stop = True
        if self._verbose and trainer.is_global_zero:
            print(
                f"ember: Timer: time limit reached ({timedelta(seconds=self._duration)}); stopping training",
                file=sys.stderr,
            )


def _stage(stage: str) -> str:
    aliases = {
        "training": "train",
        "validating": "validate",
        "testing": "test",
        "predicting": "predict",
        "sanity_checking": "sanity_check",
    }
    stage = aliases.get(str(stage).lower(), str(stage).lower())
    if stage not in STAGES:
        raise ConfigError(f"Timer: unknown stage {stage!r}; use one of {', '.join(STAGES)}")
    return stage


from ember.paths import refused_names  # noqa: E402 - Lightning's other names refuse use (docs/lightning_paths.md)

__getattr__ = refused_names(__name__)
