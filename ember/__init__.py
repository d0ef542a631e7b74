"""ember: train, feed and serve PyTorch models without boilerplate.

Every public name loads on first use (PEP 562): `import ember` alone imports nothing heavy, so
`ember fit --help` answers without importing torch. `ember.Trainer`, `ember.Module`, ... import
torch and ember's training core; `ember.data`, `ember.datasets`, `ember.train` (and pyarrow,
pandas, Pillow, TensorBoard, Ray behind them) load when first touched.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ember.version import __version__ as __version__


def _print_info_messages() -> None:
    """Lightning's logging setup at import: its package logger at INFO, so `rank_zero_info` and "Seed set to
    42" are printed; with a handler of its own only when the
    program configured no logging (else they propagate)."""
    import logging

    package_logger = logging.getLogger("ember")
    package_logger.setLevel(logging.INFO)
    if not logging.getLogger().hasHandlers():
        package_logger.addHandler(logging.StreamHandler())
        package_logger.propagate = False


_print_info_messages()

#: public name -> the module that defines it (imported on first access).
_LAZY_NAMES = {
    "BasePredictionWriter": "ember.callbacks",
    "Callback": "ember.callbacks",
    "EarlyStopping": "ember.callbacks",
    "LearningRateMonitor": "ember.callbacks",
    "ModelCheckpoint": "ember.callbacks",
    "PredictionWriter": "ember.callbacks",
    "ProgressBar": "ember.callbacks",
    "DataModule": "ember.datamodule",
    "LightningDataModule": "ember.datamodule",
    "CheckpointError": "ember.errors",
    "ConfigError": "ember.errors",
    "DataError": "ember.errors",
    "EmberError": "ember.errors",
    "Module": "ember.module",
    "LightningModule": "ember.module",  # so a Lightning script needs only its import line changed
    "seed_everything": "ember.runtime.seed",
    "cli_lightning_logo": "ember.cli.logo",  # Lightning's examples print it first (lightning.pytorch has it)
    "Trainer": "ember.trainer",
}
_LAZY_SUBMODULES = (
    "callbacks",
    "loggers",
    "data",
    "datasets",
    "train",
    "cli",
    "inference",
    "checkpoint",
    "module",
    "datamodule",
    "trainer",
    "runtime",
    "errors",
    "fs",
    "class_path",
    "profilers",
    "tuner",
    "utilities",
    "demos",
    "core",
    "strategies",
    "accelerators",
    "plugins",
    "fabric",
    "paths",
    "runner",
)

if TYPE_CHECKING:
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
    from ember.module import Module as LightningModule
    from ember.runtime.seed import seed_everything
    from ember.trainer import Trainer


class _AbsentPathFinder:
    """Last on sys.meta_path: ember's paths of the Lightning modules ember has no file for (``ember.loops``,
    ...) import as modules of placeholders that refuse use in one line (ember.paths.absent; DESIGN decision
    16). Asked only after Python's finders found no file, and
    only for ``ember.*`` names, it imports nothing before."""

    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith("ember.") or fullname.startswith(
            "ember.paths"
        ):  # ember.paths: no recursion
            return None
        from ember.paths.absent import find_spec

        return find_spec(fullname)


if not any(isinstance(finder, type) and finder.__name__ == "_AbsentPathFinder" for finder in sys.meta_path):
    sys.meta_path.append(_AbsentPathFinder)  # once per process, even when ember is reloaded


def __getattr__(name: str) -> Any:
    from ember.class_path import import_ember_module  # ember's one door to dynamic imports

    if name in _LAZY_NAMES:
        source = import_ember_module(_LAZY_NAMES[name])
        value = source.Module if name == "LightningModule" else getattr(source, name)
    elif (
        name == "Fabric"
    ):  # Lightning's top-level name: imports, and refuses construction naming the alternative
        value = import_ember_module("ember.fabric").Fabric
    elif name in _LAZY_SUBMODULES:
        value = import_ember_module(f"ember.{name}")
    else:
        raise AttributeError(f"module 'ember' has no attribute {name!r}")
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_NAMES, *_LAZY_SUBMODULES})


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
