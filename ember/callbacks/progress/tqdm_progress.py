"""Lightning's `lightning.pytorch.callbacks.progress.tqdm_progress`
at ember's path: ember's TQDMProgressBar (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.callbacks.progress_bar import TQDMProgressBar
from ember.paths import refused_names

__all__ = ["TQDMProgressBar"]
__getattr__ = refused_names(__name__)
