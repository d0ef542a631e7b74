"""ember.train: Ray Train's functional API on ember's launcher (local processes) or on Ray.

`ember.train` is NOT `ember.trainer` (one letter apart, both kept because each mirrors its model):

- `ember.train` (this package) mirrors `ray.train`: YOU write the training loop, a plain function
  `train_loop_per_worker(config)`, and `TorchTrainer(...).fit()` runs it on N workers; inside it
  `prepare_model`, `get_dataset_shard`, `report` and `get_checkpoint` do the distributed parts.
- `ember.trainer` mirrors Lightning's `Trainer`: EMBER owns the loop; you write a `Module` with
  `training_step` and call `ember.Trainer(...).fit(module, data)`.

Both use the same distributed machinery (`ember.runtime`): one process-group join, one DDP
wrapping, one any-rank agreement, one launcher. Import direction: `ember.train` may import
`ember.trainer`'s layer and below, never the reverse.

Files: `torch_trainer.py` TorchTrainer (Ray's `ray/train/torch/torch_trainer.py`); `torch.py` the
`ember.train.torch` module (prepare_model, prepare_data_loader, get_device); `context.py` what a loop sees
inside a worker (Ray's `ray.train.context`: TrainContext, get_context, report, get_dataset_shard,
get_checkpoint); `checkpoint_folder.py` Ray Train's `Checkpoint`, a folder of files (unlike
`ember/checkpoint.py`, the Trainer's checkpoint file); `config.py` ScalingConfig, RunConfig, FailureConfig,
CheckpointConfig, DataConfig, TorchConfig; `result.py` Result; `checkpoint_manager.py` the run folder's record
(result.json, trainer.json) and which checkpoints are kept; `run_names.py` Ray's default names for the run and
checkpoint folders; `restore.py` TorchTrainer.restore/can_restore;
`worker.py` running the loop in one worker; `local_workers.py` the workers as local processes that
receive the function pickled (never re-running the script); `ray_actors.py` the workers as Ray actors (unlike
`ember/data/execute/ray_backend.py`, which runs data plans on Ray Data).

Example:
    >>> from ember import train
    >>> from ember.train import ScalingConfig
    >>> from ember.train.torch import TorchTrainer
    >>> ScalingConfig(num_workers=2).num_workers
    2
"""

from ember.train.checkpoint_folder import Checkpoint
from ember.train.config import CheckpointConfig, DataConfig, FailureConfig, RunConfig, ScalingConfig
from ember.train.context import (
    CheckpointUploadMode,
    TrainContext,
    get_checkpoint,
    get_context,
    get_dataset_shard,
    report,
)
from ember.train.reported import (
    TRAIN_DATASET_KEY,
    CheckpointConsistencyMode,
    ControllerError,
    LoggingConfig,
    ReportedCheckpoint,
    ReportedCheckpointStatus,
    SyncConfig,
    TrainingFailedError,
    UserCallback,
    WorkerGroupError,
    get_all_reported_checkpoints,
)
from ember.train.result import Result
from ember.train.torch import get_device, prepare_data_loader, prepare_model
from ember.train.torch_trainer import TorchTrainer

__all__ = [
    "TRAIN_DATASET_KEY",
    "Checkpoint",
    "CheckpointConfig",
    "CheckpointConsistencyMode",
    "CheckpointUploadMode",
    "ControllerError",
    "DataConfig",
    "FailureConfig",
    "LoggingConfig",
    "ReportedCheckpoint",
    "ReportedCheckpointStatus",
    "Result",
    "RunConfig",
    "ScalingConfig",
    "SyncConfig",
    "TorchTrainer",
    "TrainContext",
    "TrainingFailedError",
    "UserCallback",
    "WorkerGroupError",
    "get_all_reported_checkpoints",
    "get_checkpoint",
    "get_context",
    "get_dataset_shard",
    "get_device",
    "prepare_data_loader",
    "prepare_model",
    "report",
]
