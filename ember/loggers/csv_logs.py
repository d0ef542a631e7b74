"""Lightning's `lightning.pytorch.loggers.csv_logs` at
ember's path: ember's CSVLogger (docs/lightning_paths.md).

Every other public name of Lightning's module imports as a placeholder that refuses use, naming the
alternative.
"""

from ember.loggers.csv_logger import CSVLogger
from ember.paths import refused_names

__all__ = ["CSVLogger"]
__getattr__ = refused_names(__name__)
