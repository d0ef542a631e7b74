"""Lightning's `lightning.pytorch.callbacks.lambda_function` at
ember's path: ember's LambdaCallback (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.callbacks.lambda_callback import LambdaCallback
from ember.paths import refused_names

__all__ = ["LambdaCallback"]
__getattr__ = refused_names(__name__)
