"""DataModule: where the data for a Module comes from, in one reusable object."""

from __future__ import annotations

import os
from typing import Any

from ember.batch_transfer import BatchTransferHooks
from ember.hyperparameters import HyperparametersMixin, accepted_arguments


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

    def __init__(self) -> None:
        self.trainer: Any = None

    def prepare_data(self) -> None: ...
    def setup(self, stage: str) -> None: ...
    def teardown(self, stage: str) -> None: ...
    def on_exception(self, exception: BaseException) -> None:
        """Called when fit/validate/test/predict fails, after the callbacks' on_exception (clean up here)."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    @classmethod
    def load_from_checkpoint(cls, checkpoint_path: str | os.PathLike[str], map_location: Any = None,
                             **kwargs: Any) -> DataModule:
        """Build the DataModule from the hyperparameters a checkpoint saved (its `save_hyperparameters()`
        arguments; `kwargs` override them) and load its `state_dict`, as Lightning does. Loading never
        runs code from the file."""
        from ember.checkpoint import load_checkpoint

        ckpt = load_checkpoint(checkpoint_path, map_location=map_location if map_location is not None else "cpu")
        hparams = {**dict(ckpt.get("datamodule_hyper_parameters") or {}), **kwargs}
        datamodule = cls(**accepted_arguments(cls, hparams))
        state = ckpt.get(cls.__qualname__, ckpt.get("datamodule"))  # Lightning's key, then ember's
        if state:
            datamodule.load_state_dict(state)
        return datamodule


LightningDataModule = DataModule
