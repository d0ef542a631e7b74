"""Lightning's `lightning.pytorch.strategies.ddp` at ember's
path: ember's DDPStrategy (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names
from ember.runtime.strategies.ddp import DDPStrategy

__all__ = ["DDPStrategy"]
__getattr__ = refused_names(__name__)
