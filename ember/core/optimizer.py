"""Lightning's `lightning.pytorch.core.optimizer` at ember's path: ember.Module.optimizers() hands back the
optimizers (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names

__getattr__ = refused_names(__name__)
