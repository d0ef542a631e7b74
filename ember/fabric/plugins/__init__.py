"""Lightning's `lightning.fabric.plugins` at ember's path:
ember has no plugin classes (docs/lightning_paths.md)."""

from ember.paths import refused_names

__getattr__ = refused_names(__name__)
