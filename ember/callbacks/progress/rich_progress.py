"""Lightning's `lightning.pytorch.callbacks.progress.rich_progress`
at ember's path: ember's RichProgressBar (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.callbacks.rich_progress_bar import RichProgressBar, RichProgressBarTheme
from ember.paths import refused_names

__all__ = ["RichProgressBar", "RichProgressBarTheme"]
__getattr__ = refused_names(__name__)
