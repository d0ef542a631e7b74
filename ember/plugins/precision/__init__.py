"""Lightning's `lightning.pytorch.plugins.precision` at ember's path: Trainer(precision=...) chooses the
precision (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names

__getattr__ = refused_names(__name__)
