"""Lightning's `lightning.pytorch.utilities.enums` at ember's
path: ember's GradClipAlgorithmType (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names
from ember.utilities import GradClipAlgorithmType

__all__ = ["GradClipAlgorithmType"]
__getattr__ = refused_names(__name__)
