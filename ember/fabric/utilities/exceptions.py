"""Lightning's `lightning.fabric.utilities.exceptions` at ember's path: ember raises ConfigError where
Lightning raises MisconfigurationException, so `except
MisconfigurationException` catches ember's (docs/lightning_paths.md).
"""

from ember.errors import ConfigError as MisconfigurationException
from ember.paths import refused_names

__all__ = ["MisconfigurationException"]
__getattr__ = refused_names(__name__)
