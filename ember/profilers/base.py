"""Lightning's `lightning.pytorch.profilers.base` at ember's
path: ember's PassThroughProfiler (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names
from ember.profilers.profiler import PassThroughProfiler

__all__ = ["PassThroughProfiler"]
__getattr__ = refused_names(__name__)
