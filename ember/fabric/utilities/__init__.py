"""Lightning's `lightning.fabric.utilities` at ember's
path: the helpers ember shares (docs/lightning_paths.md).

Every other public name of Lightning's module imports as
a placeholder that refuses use, naming the alternative.
"""

from ember.hyperparameters import AttributeDict
from ember.loggers.logger import rank_zero_only
from ember.paths import refused_names
from ember.utilities import (
    measure_flops,
    move_data_to_device,
    rank_zero_deprecation,
    rank_zero_info,
    rank_zero_warn,
    suggested_max_num_workers,
)

__all__ = [
    "AttributeDict",
    "measure_flops",
    "move_data_to_device",
    "rank_zero_deprecation",
    "rank_zero_info",
    "rank_zero_only",
    "rank_zero_warn",
    "suggested_max_num_workers",
]
__getattr__ = refused_names(__name__)
