"""Lightning's `lightning.pytorch.callbacks.spike` at ember's
path: ember's SpikeDetection (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.callbacks.spike_detection import SpikeDetection
from ember.paths import refused_names

__all__ = ["SpikeDetection"]
__getattr__ = refused_names(__name__)
