"""Lightning's path ``lightning.pytorch.utilities.combined_loader``: ``from ember.utilities.combined_loader
import CombinedLoader`` (the class lives in ember's runtime layer, where the Trainer reads it too).

Example:
    >>> CombinedLoader([[1, 2], [3]], "max_size").mode
    'max_size'
"""

from __future__ import annotations

from ember.runtime.combined_loader import CombinedLoader

__all__ = ["CombinedLoader"]
