"""Lightning's `lightning.pytorch.loggers.neptune` at ember's
path: ember has no Neptune logger (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names

__getattr__ = refused_names(__name__)
