"""``Tuner(trainer)``: Lightning's entry point to the learning-rate finder and batch-size scaling."""

from __future__ import annotations

from typing import Any

from ember.callbacks.batch_size_finder import BatchSizeFinder, scale_batch_size
from ember.callbacks.lr_finder import LearningRateFinder, LRFinder, check_mode, lr_find
from ember.errors import ConfigError

_METHODS = ("fit", "validate", "test", "predict")


class Tuner:
    """Tune a model's learning rate or batch size with a Trainer's device and numerics.

    The searches run in a scratch Trainer (see ember/callbacks/search_run.py): `trainer` itself is not
    run, and the model's weights are as before; the tuned attribute holds the result.

    Example:
        >>> tuner = Tuner(Trainer(max_epochs=3))                             # doctest: +SKIP
        >>> finder = tuner.lr_find(model, train_loader, num_training=50)    # doctest: +SKIP
        >>> finder.suggestion(), finder.results["lr"][:3]                   # doctest: +SKIP
        >>> tuner.scale_batch_size(model, datamodule=data)                  # doctest: +SKIP
    """

    def __init__(self, trainer: Any) -> None:
        self._trainer = trainer

    def lr_find(
        self,
        model: Any,
        train_dataloaders: Any = None,
        val_dataloaders: Any = None,
        dataloaders: Any = None,
        datamodule: Any = None,
        method: str = "fit",
        min_lr: float = 1e-8,
        max_lr: float = 1,
        num_training: int = 100,
        mode: str = "exponential",
        early_stop_threshold: float | None = 4.0,
        update_attr: bool = True,
        attr_name: str = "",
    ) -> LRFinder | None:
        """The learning-rate range test (ember/callbacks/lr_finder.py); with `update_attr` the model's
        `lr`/`learning_rate` becomes the suggestion."""
        if method != "fit":
            raise ConfigError(
                f"lr_find(method={method!r}); the learning-rate "
                "finder trains, so method='fit' is the only one"
            )
        check_data(train_dataloaders, val_dataloaders, dataloaders, method)
        check_mode(mode)
        if any(isinstance(cb, LearningRateFinder) for cb in self._trainer.callbacks):
            raise ConfigError(
                "the Trainer already has a LearningRateFinder callback; remove it to use Tuner.lr_find"
            )
        if (
            hasattr(train_dataloaders, "train_dataloader") and datamodule is None
        ):  # fit(model, datamodule) shape
            datamodule, train_dataloaders = train_dataloaders, None
        return lr_find(
            self._trainer,
            model,
            train_dataloaders,
            val_dataloaders,
            datamodule,
            min_lr,
            max_lr,
            num_training,
            mode,
            early_stop_threshold,
            update_attr,
            attr_name,
        )

    def scale_batch_size(
        self,
        model: Any,
        train_dataloaders: Any = None,
        val_dataloaders: Any = None,
        dataloaders: Any = None,
        datamodule: Any = None,
        method: str = "fit",
        mode: str = "power",
        steps_per_trial: int = 3,
        init_val: int = 2,
        max_trials: int = 25,
        batch_arg_name: str = "batch_size",
        margin: float = 0.05,
        max_val: int = 8192,
    ) -> int | None:
        """The largest batch size that fits
        (ember/callbacks/batch_size_finder.py), left in `batch_arg_name`."""
        check_data(train_dataloaders, val_dataloaders, dataloaders, method)
        if hasattr(train_dataloaders, "train_dataloader") and datamodule is None:
            datamodule, train_dataloaders = train_dataloaders, None
        if train_dataloaders is not None or val_dataloaders is not None or dataloaders is not None:
            raise ConfigError(
                "the batch size finder rebuilds the data at each size, so it cannot use dataloaders "
                "passed in; define train_dataloader() (and the others) on the model or a datamodule, "
                "reading the batch size from the tuned attribute"
            )
        if any(isinstance(cb, BatchSizeFinder) for cb in self._trainer.callbacks):
            raise ConfigError(
                "the Trainer already has a BatchSizeFinder callback; remove it to use Tuner.scale_batch_size"
            )
        return scale_batch_size(
            self._trainer,
            model,
            datamodule,
            method,
            mode,
            steps_per_trial,
            init_val,
            max_trials,
            batch_arg_name,
            margin,
            max_val,
        )


def check_data(train: Any, val: Any, data: Any, method: str) -> None:
    if method not in _METHODS:
        raise ConfigError(f"method={method!r}; use one of {list(_METHODS)}")
    if method == "fit" and data is not None:
        raise ConfigError("method='fit' takes train_dataloaders and val_dataloaders, not dataloaders")
    if method != "fit" and (train is not None or val is not None):
        raise ConfigError(f"method={method!r} takes dataloaders, not train_dataloaders or val_dataloaders")
