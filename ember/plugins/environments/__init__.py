"""Lightning's `lightning.pytorch.plugins.environments` at ember's path: ember reads the launcher's variables
itself (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names

__getattr__ = refused_names(__name__)
