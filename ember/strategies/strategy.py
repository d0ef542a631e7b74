"""Lightning's `lightning.pytorch.strategies.strategy` at ember's
path: the strategies' protocol (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names
from ember.runtime.strategies.protocol import Strategy

__all__ = ["Strategy"]
__getattr__ = refused_names(__name__)
