"""Lightning's `lightning.pytorch.core.hooks` at ember's path: ember's hooks live on ember.Module and
ember.Callback (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names

__getattr__ = refused_names(__name__)
