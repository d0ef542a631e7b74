"""Loggers: where logged metrics and hyperparameters are written.

`MLFlowLogger` imports mlflow when one is built and `WandbLogger` wandb when its run starts, never at
`import ember`. Lightning's other trackers (`CometLogger`, `NeptuneLogger`, `LitLogger`) are refused by name
with the alternatives.
"""

from ember.loggers.base import Logger
from ember.loggers.csv_logger import CSVLogger
from ember.loggers.logger import rank_zero_experiment, rank_zero_only
from ember.loggers.mlflow import MLFlowLogger
from ember.loggers.refused import CometLogger, LitLogger, NeptuneLogger
from ember.loggers.tensorboard import TensorBoardLogger
from ember.loggers.wandb import WandbLogger

__all__ = ["CSVLogger", "CometLogger", "LitLogger", "Logger", "MLFlowLogger", "NeptuneLogger", "TensorBoardLogger",
           "WandbLogger", "rank_zero_experiment", "rank_zero_only"]


from ember.paths import refused_names  # noqa: E402 - Lightning's other names refuse use (docs/lightning_paths.md)

__getattr__ = refused_names(__name__)
