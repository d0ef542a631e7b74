"""Lightning's `lightning.pytorch.utilities.rank_zero` at ember's
path: ember's rank-zero helpers (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.loggers.logger import rank_zero_only
from ember.paths import refused_names
from ember.utilities import rank_zero_deprecation, rank_zero_info, rank_zero_warn

__all__ = ["rank_zero_deprecation", "rank_zero_info", "rank_zero_only", "rank_zero_warn"]
__getattr__ = refused_names(__name__)
