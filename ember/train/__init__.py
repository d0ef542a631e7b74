"""ember.train: Ray Train's functional API on ember's launcher (local processes) or on Ray.

Example:
    >>> from ember import train
    >>> from ember.train import ScalingConfig
    >>> from ember.train.torch import TorchTrainer
    >>> ScalingConfig(num_workers=2).num_workers
    2
"""

from ember.train.checkpoint import Checkpoint
from ember.train.config import FailureConfig, RunConfig, ScalingConfig
from ember.train.context import TrainContext, get_checkpoint, get_context, get_dataset_shard, report
from ember.train.result import Result
from ember.train.torch import get_device, prepare_data_loader, prepare_model
from ember.train.trainer import TorchTrainer

__all__ = [
    "Checkpoint",
    "FailureConfig",
    "Result",
    "RunConfig",
    "ScalingConfig",
    "TorchTrainer",
    "TrainContext",
    "get_checkpoint",
    "get_context",
    "get_dataset_shard",
    "get_device",
    "prepare_data_loader",
    "prepare_model",
    "report",
]
