"""Lightning's `lightning.pytorch.callbacks.progress` at
ember's path: ember's progress bars (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.callbacks.progress_bar import TQDMProgressBar
from ember.callbacks.progress_bar_base import ProgressBar
from ember.callbacks.rich_progress_bar import RichProgressBar
from ember.paths import refused_names

__all__ = ["ProgressBar", "RichProgressBar", "TQDMProgressBar"]
__getattr__ = refused_names(__name__)
