"""Loggers: where logged metrics and hyperparameters are written."""

from ember.loggers.base import Logger
from ember.loggers.csv_logger import CSVLogger
from ember.loggers.tensorboard import TensorBoardLogger

__all__ = ["CSVLogger", "Logger", "TensorBoardLogger"]
