"""Lightning's `lightning.pytorch.utilities.parsing` at ember's path:
ember's AttributeDict and is_picklable (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.hyperparameters import AttributeDict
from ember.paths import refused_names
from ember.utilities import is_picklable

__all__ = ["AttributeDict", "is_picklable"]
__getattr__ = refused_names(__name__)
