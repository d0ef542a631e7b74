"""Lightning's `lightning.pytorch.core.datamodule` at ember's path:
ember.DataModule as LightningDataModule (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.datamodule import DataModule as LightningDataModule
from ember.paths import refused_names

__all__ = ["LightningDataModule"]
__getattr__ = refused_names(__name__)
