"""``ProgressBar``: Lightning's base class of progress bars, which every ember bar subclasses.

It draws nothing. A custom bar written for Lightning subclasses it, implements `disable`/`enable` and the
hooks it draws in, and reads ``self.trainer``, ``total_train_batches``, ``total_val_batches``, the stage
descriptions and ``get_metrics``; these answer as in Lightning 2.6, from the Trainer's public
attributes. Any ``ProgressBar`` in `callbacks` replaces the Trainer's default bar.
"""

from __future__ import annotations

import math
from typing import Any

from ember.callbacks.callback import Callback


class ProgressBar(Callback):
    """The base class of progress bars (Lightning's ``ProgressBar``): what a bar knows about the run.

    Example:
        >>> from ember.callbacks import ProgressBar
        >>> class Dots(ProgressBar):
        ...     def disable(self): self.off = True
        ...     def enable(self): self.off = False
        ...     def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        ...         print(".", end="")
        >>> Dots().train_description
        'Training'
    """

    _trainer: Any = None
    _current_eval_dataloader_idx: int | None = None

    @property
    def trainer(self) -> Any:
        """The Trainer this bar is attached to (set at `setup`)."""
        if self._trainer is None:
            raise TypeError(f"The `{type(self).__name__}._trainer` reference has not been set yet.")
        return self._trainer

    sanity_check_description = property(lambda self: "Sanity Checking")
    train_description = property(lambda self: "Training")
    validation_description = property(lambda self: "Validation")
    test_description = property(lambda self: "Testing")
    predict_description = property(lambda self: "Predicting")

    @property
    def total_train_batches(self) -> int | float:
        """Training batches this epoch (inf when unknown);
        with only max_steps, no more than the steps left."""
        trainer = self.trainer
        if trainer.max_epochs == -1 and trainer.max_steps is not None and trainer.max_steps > 0:
            return min(trainer.num_training_batches, trainer.max_steps - trainer.global_step)
        return trainer.num_training_batches

    @property
    def total_val_batches(self) -> int | float:
        """Validation batches of all loaders in this epoch's validation (0 when none runs this epoch)."""
        if not self.trainer.will_validate_this_epoch:
            return 0
        return _sum(self.trainer.num_val_batches)

    @property
    def total_val_batches_current_dataloader(self) -> int | float:
        trainer = self.trainer
        batches = trainer.num_sanity_val_batches if trainer.sanity_checking else trainer.num_val_batches
        return self._current(batches)

    @property
    def total_test_batches_current_dataloader(self) -> int | float:
        return self._current(self.trainer.num_test_batches)

    @property
    def total_predict_batches_current_dataloader(self) -> int | float:
        return self._current(self.trainer.num_predict_batches)

    def _current(self, batches: Any) -> int | float:
        if isinstance(batches, list):
            return batches[self._current_eval_dataloader_idx or 0] if batches else 0
        return batches

    def has_dataloader_changed(self, dataloader_idx: int) -> bool:
        """Whether `dataloader_idx` differs from the last one seen (and remember it)."""
        old, self._current_eval_dataloader_idx = self._current_eval_dataloader_idx, dataloader_idx
        return old != dataloader_idx

    def reset_dataloader_idx_tracker(self) -> None:
        self._current_eval_dataloader_idx = None

    def disable(self) -> None:
        """Stop drawing (a subclass says how)."""
        raise NotImplementedError

    def enable(self) -> None:
        """Draw again (a subclass says how); the tuner turns the bar off and on around its trial runs."""
        raise NotImplementedError

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        self._trainer = trainer
        if not trainer.is_global_zero:
            self.disable()

    def print(self, *args: Any, **kwargs: Any) -> None:
        """Print without breaking the bar."""
        print(*args, **kwargs)

    def get_metrics(self, trainer: Any, module: Any) -> dict[str, Any]:
        """What the bar shows: the logger's version as `v_num` (its last 4 characters when a string), then the
        metrics logged with `prog_bar=True`. Override it to change what is displayed, as in Lightning."""
        standard: dict[str, Any] = {}
        if trainer.loggers:
            versions = [logger.version for logger in trainer.loggers]
            version = versions[0] if len(set(map(str, versions))) == 1 else "_".join(map(str, versions))
            if version not in ("", None):
                standard["v_num"] = version[-4:] if isinstance(version, str) else version
        return {**standard, **trainer.progress_bar_metrics}


def _sum(batches: Any) -> int | float:
    return sum(batches) if isinstance(batches, list) else batches if batches is not None else math.inf
