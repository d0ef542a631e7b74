"""Lightning's `lightning.pytorch.tuner.tuning` at ember's path: ember's Tuner (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names
from ember.tuner.tuner import Tuner

__all__ = ["Tuner"]
__getattr__ = refused_names(__name__)
