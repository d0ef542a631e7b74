"""Lightning's `lightning.pytorch.strategies.parallel` at ember's
path: ember's ParallelStrategy (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names
from ember.runtime.strategies.parallel import ParallelStrategy

__all__ = ["ParallelStrategy"]
__getattr__ = refused_names(__name__)
