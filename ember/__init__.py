"""ember: train, feed and serve PyTorch models without boilerplate.

`import ember` imports torch and ember's own training core only. `ember.data`, `ember.datasets`
and `ember.train` (and pyarrow, pandas, Pillow, TensorBoard, Ray behind them) load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from ember import callbacks, loggers
from ember.callbacks import (
    BasePredictionWriter,
    Callback,
    EarlyStopping,
    LearningRateMonitor,
    ModelCheckpoint,
    PredictionWriter,
    ProgressBar,
)
from ember.datamodule import DataModule, LightningDataModule
from ember.errors import CheckpointError, ConfigError, DataError, EmberError
from ember.module import Module
from ember.runtime.seed import seed_everything
from ember.trainer import Trainer
from ember.version import __version__ as __version__

LightningModule = Module  # so a Lightning script needs only its import line changed

_LAZY_SUBMODULES = ("data", "datasets", "train", "cli", "inference")


def __getattr__(name: str) -> Any:
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"ember.{name}")
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


__all__ = [
    "BasePredictionWriter",
    "Callback",
    "CheckpointError",
    "ConfigError",
    "DataError",
    "DataModule",
    "EarlyStopping",
    "EmberError",
    "LearningRateMonitor",
    "LightningDataModule",
    "LightningModule",
    "ModelCheckpoint",
    "Module",
    "PredictionWriter",
    "ProgressBar",
    "Trainer",
    "callbacks",
    "loggers",
    "seed_everything",
]
