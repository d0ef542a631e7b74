"""Lightning's `lightning.pytorch.strategies.fsdp` at ember's
path: ember's FSDPStrategy (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names
from ember.runtime.strategies.fsdp import FSDPStrategy

__all__ = ["FSDPStrategy"]
__getattr__ = refused_names(__name__)
