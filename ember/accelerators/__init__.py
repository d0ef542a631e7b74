"""Lightning's `lightning.pytorch.accelerators` at ember's path: Trainer(accelerator=...) chooses the device;
ember has no accelerator classes (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names

__getattr__ = refused_names(__name__)
