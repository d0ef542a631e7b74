"""Lightning's `lightning.pytorch.utilities.exceptions` at ember's path: ember raises ConfigError where
Lightning raises MisconfigurationException (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.errors import ConfigError as MisconfigurationException
from ember.paths import refused_names

__all__ = ["MisconfigurationException"]
__getattr__ = refused_names(__name__)
