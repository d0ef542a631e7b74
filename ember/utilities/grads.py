"""Lightning's `lightning.pytorch.utilities.grads` at
ember's path: ember's grad_norm (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names
from ember.utilities import grad_norm

__all__ = ["grad_norm"]
__getattr__ = refused_names(__name__)
