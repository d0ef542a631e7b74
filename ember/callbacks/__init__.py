"""Callbacks: code that runs at hook points without living in the Module."""

from ember.callbacks.callback import Callback
from ember.callbacks.checkpoint import Checkpoint
from ember.callbacks.early_stopping import EarlyStopping
from ember.callbacks.finetuning import BackboneFinetuning, BaseFinetuning
from ember.callbacks.gradient_accumulation_scheduler import GradientAccumulationScheduler
from ember.callbacks.lambda_callback import LambdaCallback
from ember.callbacks.lr_monitor import LearningRateMonitor
from ember.callbacks.model_checkpoint import ModelCheckpoint
from ember.callbacks.model_summary import ModelSummary
from ember.callbacks.on_exception_checkpoint import OnExceptionCheckpoint
from ember.callbacks.prediction_writer import BasePredictionWriter, PredictionWriter
from ember.callbacks.progress_bar import ProgressBar, TQDMProgressBar
from ember.callbacks.rich_progress_bar import RichProgressBar, RichProgressBarTheme
from ember.callbacks.stochastic_weight_avg import StochasticWeightAveraging
from ember.callbacks.timer import Timer

__all__ = [
    "BackboneFinetuning",
    "BaseFinetuning",
    "BasePredictionWriter",
    "Callback",
    "EarlyStopping",
    "GradientAccumulationScheduler",
    "LambdaCallback",
    "LearningRateMonitor",
    "ModelCheckpoint",
    "ModelSummary",
    "OnExceptionCheckpoint",
    "PredictionWriter",
    "ProgressBar",
    "RichProgressBar",
    "RichProgressBarTheme",
    "StochasticWeightAveraging",
    "TQDMProgressBar",
    "Timer",
]
