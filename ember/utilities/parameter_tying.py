"""Lightning's `lightning.pytorch.utilities.parameter_tying` at ember's
path: ember's shared-parameter helpers (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.paths import refused_names
from ember.utilities import find_shared_parameters, set_shared_parameters

__all__ = ["find_shared_parameters", "set_shared_parameters"]
__getattr__ = refused_names(__name__)
