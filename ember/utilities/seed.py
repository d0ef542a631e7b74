"""Lightning's `lightning.pytorch.utilities.seed` at ember's path: ember.runtime.seed.preserve_rng_state()
isolates the RNG streams (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names

__getattr__ = refused_names(__name__)
