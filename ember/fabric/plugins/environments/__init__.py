"""Lightning's `lightning.fabric.plugins.environments` at ember's path: ember reads torchrun's and SLURM's
variables itself (ember.runtime.cluster), so the environment
classes import and refuse construction (docs/lightning_paths.md).
"""

from ember.paths import refused_names

__getattr__ = refused_names(__name__)
