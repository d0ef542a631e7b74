"""Lightning's `lightning.pytorch.core.saving` at ember's path: ember
saves hyperparameters in its checkpoints (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names

__getattr__ = refused_names(__name__)
