"""Lightning's `lightning.pytorch.callbacks.progress.progress_bar` at ember's path: the progress bars' base
class (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.callbacks.progress_bar_base import ProgressBar
from ember.paths import refused_names

__all__ = ["ProgressBar"]
__getattr__ = refused_names(__name__)
