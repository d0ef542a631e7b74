"""Callbacks: code that runs at hook points without living in the Module."""

from ember.callbacks.callback import Callback
from ember.callbacks.early_stopping import EarlyStopping
from ember.callbacks.lr_monitor import LearningRateMonitor
from ember.callbacks.model_checkpoint import ModelCheckpoint
from ember.callbacks.prediction_writer import BasePredictionWriter, PredictionWriter
from ember.callbacks.progress_bar import ProgressBar, TQDMProgressBar

__all__ = [
    "BasePredictionWriter",
    "Callback",
    "EarlyStopping",
    "LearningRateMonitor",
    "ModelCheckpoint",
    "PredictionWriter",
    "ProgressBar",
    "TQDMProgressBar",
]
