"""Lightning's `lightning.pytorch.strategies.single_device` at
ember's path: ember's SingleDeviceStrategy (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names
from ember.runtime.strategies.single_device import SingleDeviceStrategy

__all__ = ["SingleDeviceStrategy"]
__getattr__ = refused_names(__name__)
