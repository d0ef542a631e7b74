"""Loggers: where logged metrics and hyperparameters are written.

`MLFlowLogger` imports mlflow when one is built, never at `import ember`.
"""

from ember.loggers.base import Logger
from ember.loggers.csv_logger import CSVLogger
from ember.loggers.mlflow import MLFlowLogger
from ember.loggers.tensorboard import TensorBoardLogger

__all__ = ["CSVLogger", "Logger", "MLFlowLogger", "TensorBoardLogger"]
