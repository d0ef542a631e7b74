"""Lightning's `lightning.pytorch.utilities.types` at ember's path: Lightning's type aliases; annotate with
plain typing (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names

__getattr__ = refused_names(__name__)
