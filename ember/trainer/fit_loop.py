"""`trainer.fit_loop`: the few parts of Lightning's fit loop that callbacks read and set, over ember's run.

Lightning's callbacks reach into its loop objects: StochasticWeightAveraging adds an epoch
(`fit_loop.max_epochs += 1`) and skips the backward (`fit_loop._skip_backward`), LearningRateMonitor logs at
`fit_loop.epoch_loop._batches_that_stepped`. ember has no loop objects (the loops are functions over a
`Run`), so this view answers those names from the run, and only those.
"""

from __future__ import annotations

from typing import Any

from ember.errors import ConfigError
from ember.trainer import data_fetch


class FitLoop:
    """Lightning's ``trainer.fit_loop`` as callbacks use it, over the running fit (``run``; None outside a
    fit).

    Example:
        >>> import ember
        >>> loop = ember.Trainer(logger=False, enable_progress_bar=False).fit_loop
        >>> loop.epoch_loop._batches_that_stepped
        0
    """

    def __init__(self, run: Any) -> None:
        self.run = run

    @property
    def epoch_loop(self) -> EpochLoop:
        return EpochLoop(self.run)

    @property
    def max_epochs(self) -> int:
        """This fit's epoch limit (-1: none); a callback may change it during the fit, as in Lightning."""
        stop = self._running().stop
        return -1 if stop.max_epochs is None else stop.max_epochs

    @max_epochs.setter
    def max_epochs(self, value: int) -> None:
        stop = self._running().stop
        if stop.max_epochs is None or not isinstance(value, int) or value < 1:
            raise ConfigError(
                f"fit_loop.max_epochs = {value!r}: set an int >= 1 during a fit that has max_epochs"
            )
        stop.max_epochs = value

    @property
    def _skip_backward(self) -> bool:
        """Training steps run without their backward while set (automatic optimization only), as
        Lightning's."""
        return bool(getattr(self._running().optimization, "skip_backward", False))

    @_skip_backward.setter
    def _skip_backward(self, skip: bool) -> None:
        optimization = self._running().optimization
        if not hasattr(optimization, "skip_backward"):
            raise ConfigError("fit_loop._skip_backward works under automatic optimization only")
        optimization.skip_backward = bool(skip)

    def setup_data(self) -> None:
        """Fetch the fit's training data now, and its validation data when this epoch validates (once; nothing
        outside a fit): Lightning's ``fit_loop.setup_data()``, which a tuner's search needs before its loop
        runs."""
        if self.run is None or self.run.stage != "fit":
            return
        data_fetch.train_data(self.run)
        if self.run.will_validate_this_epoch:
            data_fetch.val_loaders(self.run)

    def _running(self) -> Any:
        if self.run is None or not self.run.loop.fitting:
            raise ConfigError("trainer.fit_loop is changed during a fit only (from a callback's hooks)")
        return self.run


class EpochLoop:
    """Lightning's ``fit_loop.epoch_loop``: the logger step of the fit."""

    def __init__(self, run: Any) -> None:
        self.run = run

    @property
    def _batches_that_stepped(self) -> int:
        """Optimizer steps under automatic optimization, batches under manual optimization (Lightning's
        count)."""
        return self.run.reporter.batches_stepped if self.run is not None else 0
