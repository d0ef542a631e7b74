"""Callbacks: code that runs at hook points without living in the Module (Lightning 2.6's set)."""

from ember.callbacks.batch_size_finder import BatchSizeFinder
from ember.callbacks.callback import Callback
from ember.callbacks.checkpoint import Checkpoint
from ember.callbacks.device_stats_monitor import DeviceStatsMonitor
from ember.callbacks.early_stopping import EarlyStopping
from ember.callbacks.finetuning import BackboneFinetuning, BaseFinetuning
from ember.callbacks.gradient_accumulation_scheduler import GradientAccumulationScheduler
from ember.callbacks.lambda_callback import LambdaCallback
from ember.callbacks.lr_finder import LearningRateFinder
from ember.callbacks.lr_monitor import LearningRateMonitor
from ember.callbacks.model_checkpoint import ModelCheckpoint
from ember.callbacks.model_pruning import ModelPruning
from ember.callbacks.model_summary import ModelSummary
from ember.callbacks.on_exception_checkpoint import OnExceptionCheckpoint
from ember.callbacks.prediction_writer import BasePredictionWriter, PredictionWriter
from ember.callbacks.progress_bar import TimedProgressBar, TQDMProgressBar
from ember.callbacks.progress_bar_base import ProgressBar
from ember.callbacks.rich_model_summary import RichModelSummary
from ember.callbacks.rich_progress_bar import RichProgressBar, RichProgressBarTheme
from ember.callbacks.spike_detection import SpikeDetection, TrainingSpikeException
from ember.callbacks.stochastic_weight_avg import StochasticWeightAveraging
from ember.callbacks.throughput_monitor import ThroughputMonitor
from ember.callbacks.timer import Timer
from ember.callbacks.weight_averaging import EMAWeightAveraging, WeightAveraging

__all__ = [
    "BackboneFinetuning",
    "BaseFinetuning",
    "BasePredictionWriter",
    "BatchSizeFinder",
    "Callback",
    "Checkpoint",
    "DeviceStatsMonitor",
    "EMAWeightAveraging",
    "EarlyStopping",
    "GradientAccumulationScheduler",
    "LambdaCallback",
    "LearningRateFinder",
    "LearningRateMonitor",
    "ModelCheckpoint",
    "ModelPruning",
    "ModelSummary",
    "OnExceptionCheckpoint",
    "PredictionWriter",
    "ProgressBar",
    "RichModelSummary",
    "RichProgressBar",
    "RichProgressBarTheme",
    "SpikeDetection",
    "StochasticWeightAveraging",
    "TQDMProgressBar",
    "ThroughputMonitor",
    "TimedProgressBar",
    "Timer",
    "TrainingSpikeException",
    "WeightAveraging",
]
