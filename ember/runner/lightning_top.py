"""The ``lightning`` package that a script sees under ember's runner: Lightning's top-level names from ember.

``lightning.Trainer``, ``LightningModule``, ``LightningDataModule``, ``Callback`` and ``seed_everything`` are
ember's; ``lightning.pytorch`` is ``ember`` and ``lightning.fabric`` is ``ember.fabric``; ``lightning.Fabric``
imports and refuses construction, naming the alternative (docs/lightning_paths.md).
"""

from __future__ import annotations

from typing import Any

from ember.class_path import import_ember_module
from ember.version import __version__ as __version__

__path__: list[str] = []  # a package: `import lightning.pytorch` goes through the runner's finder

#: name -> (ember module, attribute or None for the module itself)
_NAMES = {
    "Trainer": ("ember.trainer", "Trainer"),
    "LightningModule": ("ember.module", "Module"),
    "LightningDataModule": ("ember.datamodule", "DataModule"),
    "Callback": ("ember.callbacks", "Callback"),
    "seed_everything": ("ember.runtime.seed", "seed_everything"),
    "Fabric": ("ember.fabric", "Fabric"),
    "pytorch": ("ember", None),
    "fabric": ("ember.fabric", None),
}

# Served by __getattr__ below.
__all__ = ["Callback", "Fabric", "LightningDataModule", "LightningModule", "Trainer", "seed_everything"]  # noqa: F822


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'lightning' (ember's runner) has no attribute {name!r}")
    module_name, attribute = _NAMES[name]
    module = import_ember_module(module_name)  # a fixed ember module name
    return module if attribute is None else getattr(module, attribute)
