"""Lightning's `lightning.pytorch.core.mixins` at ember's
path: save_hyperparameters' mixin (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.hyperparameters import HyperparametersMixin
from ember.paths import refused_names

__all__ = ["HyperparametersMixin"]
__getattr__ = refused_names(__name__)
