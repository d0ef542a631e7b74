"""When fit stops: the one place that decides it.

The rules, in the order they are checked: `max_steps`, `should_stop` (set by a callback such as
EarlyStopping, or the Timer that `max_time` adds, as in Lightning; honoured once `min_epochs` and
`min_steps` are done, and kept set until then, as in Lightning), `max_epochs` (-1: none), and a signal
(SIGTERM, the first Ctrl-C), which stops only at an accumulation-window boundary so the checkpoint written
then resumes exactly. `limit_train_batches` is the epoch's length (the fit loop reads it as such).

A signal only sets a flag here (no collective per step); the fit loop asks `after_batch` once per
batch, and `ember.trainer.signals` writes the checkpoint and exits.
"""

from __future__ import annotations

import math

from ember.trainer.options import Options
from ember.trainer.progress import Progress

#: What `StopRules.after_batch` answers.
CONTINUE, END_EPOCH, SIGNALLED = 0, 1, 2


class StopRules:
    """Decides, from the options and the progress, whether the fit (or its epoch) is over.

    Example:
        >>> from ember.trainer.options import DEFAULTS, build_options
        >>> rules = StopRules(build_options({**DEFAULTS, "max_steps": 3}))
        >>> rules.after_batch(Progress(global_step=3), micro_step=0) == END_EPOCH
        True
    """

    def __init__(self, options: Options) -> None:
        self.max_epochs = options.max_epochs if options.max_epochs != -1 else None
        # Lightning: min_steps alone makes min_epochs 1, so should_stop set in on_fit_start waits for an epoch
        self.min_epochs = (
            options.min_epochs if options.min_epochs is not None else (1 if options.min_steps else 0)
        )
        self.min_steps = options.min_steps or 0
        self.max_steps = options.max_steps if options.max_steps != -1 else math.inf
        self.should_stop = False  # a callback asks fit to stop (EarlyStopping)
        self.signal: int | None = None  # a signal received (and, under DDP, agreed by every rank)

    def after_batch(self, progress: Progress, micro_step: int) -> int:
        """After each training batch: stop for a signal (at an accumulation-window boundary: no
        micro-batch pending), end the epoch early, or continue."""
        if self.signal and micro_step == 0:
            return SIGNALLED
        if progress.global_step >= self.max_steps:
            return END_EPOCH
        if self.should_stop and self.can_stop_early(progress):
            return END_EPOCH
        return CONTINUE

    def can_stop_early(self, progress: Progress) -> bool:
        """Are `min_epochs` and `min_steps` done? (`should_stop` waits for both.)"""
        epochs = progress.epoch + (1 if progress.epoch_finished else 0)
        return epochs >= self.min_epochs and progress.global_step >= self.min_steps

    def fit_done(self, progress: Progress) -> bool:
        """Before each epoch: is the fit finished? (`should_stop` waits for `min_epochs` and `min_steps`.)"""
        if progress.global_step >= self.max_steps:
            return True
        return self.should_stop and self.can_stop_early(progress)

    def epochs_done(self, progress: Progress) -> bool:
        """After moving to the next epoch: has `max_epochs` been reached?"""
        return self.max_epochs is not None and progress.epoch >= self.max_epochs
