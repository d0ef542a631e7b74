"""Lightning's `lightning.fabric.utilities.seed` at ember's
path: ember's seed_everything (docs/lightning_paths.md).

Every other public name of Lightning's module imports as
a placeholder that refuses use, naming the alternative.
"""

from ember.paths import refused_names
from ember.runtime.seed import seed_everything

__all__ = ["seed_everything"]
__getattr__ = refused_names(__name__)
