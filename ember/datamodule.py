"""DataModule: where the data for a Module comes from, in one reusable object."""

from __future__ import annotations

import functools
import os
from typing import Any

from ember.batch_transfer import BatchTransferHooks
from ember.errors import ConfigError
from ember.hyperparameters import HyperparametersMixin, accepted_arguments, class_only


class DataModule(BatchTransferHooks, HyperparametersMixin):
    """Downloads, splits and serves the data (Lightning's `LightningDataModule`).

    `prepare_data` runs once per machine (download, unpack); `setup(stage)` runs in every
    process ("fit", "validate", "test" or "predict") and builds the datasets.
    `save_hyperparameters()` in `__init__` records its arguments in `self.hparams`, as a Module's.

    Example:
        >>> import torch, ember
        >>> class Numbers(ember.DataModule):
        ...     def setup(self, stage):
        ...         self.data = torch.arange(8.0).reshape(4, 2)
        ...     def train_dataloader(self):
        ...         return torch.utils.data.DataLoader(self.data, batch_size=2)
        >>> dm = Numbers(); dm.setup("fit"); len(dm.train_dataloader())
        2
    """

    name: str | None = None  # Lightning's optional display name

    def __init__(self) -> None:
        self.trainer: Any = None

    @classmethod
    def from_datasets(
        cls,
        train_dataset: Any = None,
        val_dataset: Any = None,
        test_dataset: Any = None,
        predict_dataset: Any = None,
        batch_size: int = 1,
        num_workers: int = 0,
        **datamodule_kwargs: Any,
    ) -> DataModule:
        """A DataModule serving the given datasets (each a Dataset, or a list/dict of them for several
        loaders) through DataLoaders: the training ones shuffled (not an IterableDataset), all with
        `batch_size`, `num_workers` and pinned memory, as Lightning's. `datamodule_kwargs` go to
        `__init__` where its signature names them (with batch_size/num_workers).

        Example:
            >>> import torch, ember
            >>> def numbers(n):
            ...     return torch.utils.data.TensorDataset(torch.arange(float(n)))
            >>> dm = ember.DataModule.from_datasets(
            ...     numbers(10), val_dataset=[numbers(4), numbers(6)], batch_size=4
            ... )
            >>> len(dm.train_dataloader()), [len(loader) for loader in dm.val_dataloader()]
            (3, [1, 2])
        """
        wanted = {"batch_size": batch_size, "num_workers": num_workers, **datamodule_kwargs}
        datamodule = cls(**accepted_arguments(cls, wanted))
        for stage, data in (
            ("train", train_dataset),
            ("val", val_dataset),
            ("test", test_dataset),
            ("predict", predict_dataset),
        ):
            if data is not None:
                _loaders(data, f"{stage}_dataset")  # refused now rather than at fit
                setattr(
                    datamodule,
                    f"{stage}_dataloader",
                    functools.partial(
                        _loaders,
                        data,
                        f"{stage}_dataset",
                        batch_size=batch_size,
                        num_workers=num_workers,
                        shuffle=stage == "train",
                    ),
                )
        return datamodule

    def prepare_data(self) -> None: ...
    def setup(self, stage: str) -> None: ...
    def teardown(self, stage: str) -> None: ...
    def on_exception(self, exception: BaseException) -> None:
        """Called when fit/validate/test/predict fails, after the callbacks' on_exception (clean up here)."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    @class_only  # Lightning refuses a call on an instance: the loaded DataModule is returned
    def load_from_checkpoint(
        cls, checkpoint_path: str | os.PathLike[str], map_location: Any = None, **kwargs: Any
    ) -> DataModule:
        """Build the DataModule from the hyperparameters a checkpoint saved (its `save_hyperparameters()`
        arguments; `kwargs` override them) and load its `state_dict`, as Lightning does. Loading never
        runs code from the file."""
        from ember.checkpoint import load_checkpoint

        ckpt = load_checkpoint(
            checkpoint_path, map_location=map_location if map_location is not None else "cpu"
        )
        hparams = {**dict(ckpt.get("datamodule_hyper_parameters") or {}), **kwargs}
        datamodule = cls(**accepted_arguments(cls, hparams))
        state = ckpt.get(cls.__qualname__, ckpt.get("datamodule"))  # Lightning's key, then ember's
        if state:
            datamodule.load_state_dict(state)
        return datamodule


LightningDataModule = DataModule


def _loaders(data: Any, argument: str, **loader_options: Any) -> Any:
    """A DataLoader per torch Dataset in `data` (one, or a list/tuple/dict of them), same structure."""
    import torch

    if isinstance(data, torch.utils.data.Dataset):
        if not loader_options:
            return None
        shuffle = loader_options.pop("shuffle") and not isinstance(data, torch.utils.data.IterableDataset)
        return torch.utils.data.DataLoader(data, shuffle=shuffle, pin_memory=True, **loader_options)
    if isinstance(data, (list, tuple)):
        return [_loaders(d, argument, **dict(loader_options)) for d in data]
    if isinstance(data, dict):
        return {k: _loaders(d, argument, **dict(loader_options)) for k, d in data.items()}
    raise ConfigError(
        f"DataModule.from_datasets({argument}=...) is a {type(data).__name__}; pass a torch Dataset "
        "or a list/dict of them"
    )
