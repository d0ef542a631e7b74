"""Lightning's `lightning.pytorch.utilities.model_summary` at
ember's path: ember's model summary table (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names
from ember.utilities.model_summary.model_summary import ModelSummary, get_human_readable_count, summarize

__all__ = ["ModelSummary", "get_human_readable_count", "summarize"]
__getattr__ = refused_names(__name__)
