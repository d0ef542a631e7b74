"""Lightning's `lightning.pytorch.callbacks.pruning` at
ember's path: ember's ModelPruning (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.callbacks.model_pruning import ModelPruning
from ember.paths import refused_names

__all__ = ["ModelPruning"]
__getattr__ = refused_names(__name__)
