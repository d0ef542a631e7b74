"""Loggers: where logged metrics and hyperparameters are written.

`MLFlowLogger` imports mlflow when one is built and `WandbLogger` wandb when its run starts, never at `import
ember`. Lightning's other trackers (`CometLogger`, `NeptuneLogger`, `LitLogger`) import as placeholders
(ember.paths) whose use is refused in one line naming the loggers ember has.
"""

from ember.loggers.base import Logger
from ember.loggers.csv_logger import CSVLogger
from ember.loggers.logger import rank_zero_experiment, rank_zero_only
from ember.loggers.mlflow import MLFlowLogger
from ember.loggers.tensorboard import TensorBoardLogger
from ember.loggers.wandb import WandbLogger

__all__ = [
    "CSVLogger",
    "CometLogger",
    "LitLogger",
    "Logger",
    "MLFlowLogger",
    "NeptuneLogger",
    "TensorBoardLogger",
    "WandbLogger",
    "rank_zero_experiment",
    "rank_zero_only",
]


from ember.paths import refused_names  # noqa: E402 - Lightning's other names refuse use (docs/lightning_paths.md)

__getattr__ = refused_names(__name__)

# Lightning 2.6 exports NeptuneLogger from loggers.neptune only; older programs import it from here
from ember.loggers.neptune import NeptuneLogger  # noqa: E402 - a placeholder: its use is refused in one line
