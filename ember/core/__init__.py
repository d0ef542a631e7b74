"""Lightning's `lightning.pytorch.core` at ember's path: ember's Module
and DataModule under Lightning's names (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.datamodule import DataModule as LightningDataModule
from ember.module import Module as LightningModule
from ember.paths import refused_names

__all__ = ["LightningDataModule", "LightningModule"]
__getattr__ = refused_names(__name__)
