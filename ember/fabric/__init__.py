"""Lightning's `lightning.fabric` at ember's path
(`lightning.fabric.X` is `ember.fabric.X`; docs/lightning_paths.md).

ember has no Fabric: `Fabric` imports, and constructing it raises one line naming ember.Trainer and
ember.train.TorchTrainer. What Fabric's utilities share with ember (seed_everything, the rank-zero
helpers) is re-exported from ember's one implementation.
"""

from ember.paths import refused_names
from ember.runtime.seed import seed_everything

__all__ = ["seed_everything"]
__getattr__ = refused_names(__name__)
