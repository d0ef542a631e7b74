"""Lightning's `lightning.pytorch.strategies` at ember's path: ember's strategies (Trainer(strategy=...) picks
one by name) (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names
from ember.runtime.strategies import DDPStrategy, FSDPStrategy, SingleDeviceStrategy, Strategy
from ember.runtime.strategies.parallel import ParallelStrategy

__all__ = ["DDPStrategy", "FSDPStrategy", "ParallelStrategy", "SingleDeviceStrategy", "Strategy"]
__getattr__ = refused_names(__name__)
