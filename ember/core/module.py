"""Lightning's `lightning.pytorch.core.module` at ember's path:
ember.Module as LightningModule (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.module import Module as LightningModule
from ember.paths import refused_names

__all__ = ["LightningModule"]
__getattr__ = refused_names(__name__)
