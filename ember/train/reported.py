"""Ray Train 2.60's names a training program imports besides the main API: the reported-checkpoint query,
the error classes `fit()` raises, and the option classes ember refuses when used.

`get_all_reported_checkpoints()` is carried out (the run folder's record is the source of truth). The
others exist so that an unchanged Ray program imports them; using them is refused in one line where
ember does not do the thing (`UserCallback` in `RunConfig(callbacks=)`, `SyncConfig`, a non-default
`LoggingConfig`).

Example (inside a training loop):
    >>> [r.metrics for r in ember.train.get_all_reported_checkpoints()]  # doctest: +SKIP
    [{'loss': 0.3}]
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from ember.errors import ConfigError, WorkerError
from ember.train.checkpoint_folder import Checkpoint

#: Ray Train's name of the dataset it treats as the training set.
TRAIN_DATASET_KEY = "train"

#: What `TorchTrainer.fit()` raises when a worker fails (Ray 2.60 raises `TrainingFailedError`, in practice
#: its subclass `WorkerGroupError`): ember's `WorkerError`, so `except ray.train.TrainingFailedError` written
#: for Ray catches ember's failure under either name.
TrainingFailedError = WorkerError
WorkerGroupError = WorkerError
ControllerError = WorkerError


class CheckpointConsistencyMode(enum.Enum):
    """Ray's read modes of `get_all_reported_checkpoints`; ember has no asynchronous validation, so both
    give the checkpoints every report so far has committed."""

    COMMITTED = "COMMITTED"
    VALIDATED = "VALIDATED"


class ReportedCheckpointStatus(enum.Enum):
    COMMITTED = "COMMITTED"
    PENDING_VALIDATION = "PENDING_VALIDATION"
    VALIDATED = "VALIDATED"
    VALIDATION_TIMEOUT = "VALIDATION_TIMEOUT"
    VALIDATION_FAILED = "VALIDATION_FAILED"


@dataclasses.dataclass
class ReportedCheckpoint:
    """A checkpoint the run keeps, with the metrics rank zero reported with it."""

    checkpoint: Checkpoint
    metrics: dict[str, Any]
    status: ReportedCheckpointStatus = ReportedCheckpointStatus.COMMITTED


def get_all_reported_checkpoints(
    consistency_mode: CheckpointConsistencyMode = CheckpointConsistencyMode.VALIDATED,
    timeout_s: float | None = None,
) -> list[ReportedCheckpoint]:
    """The checkpoints of this run still kept (`CheckpointConfig(num_to_keep=)` may have removed older
    ones), in report order, each COMMITTED (ember validates nothing asynchronously). `report` returns only
    once its checkpoint is recorded, so nothing is in flight when this is called.

    Example (inside a training loop):
        >>> latest = ember.train.get_all_reported_checkpoints()[-1].checkpoint  # doctest: +SKIP
    """
    from ember.train.checkpoint_manager import checkpoint_records, read_records
    from ember.train.context import get_context

    CheckpointConsistencyMode(getattr(consistency_mode, "value", consistency_mode))  # a bad mode fails here
    run_dir = get_context().run_dir
    return [
        ReportedCheckpoint(Checkpoint(run_dir / record["checkpoint"]), dict(record["metrics"]))
        for record in checkpoint_records(read_records(run_dir), run_dir)
    ]


class UserCallback:
    """Ray Train's driver-side callback base class: importable and subclassable, refused by
    `RunConfig(callbacks=[...])` (ember's driver does not see reports as they happen; act on the Result)."""

    def after_report(
        self, run_context: Any, metrics: list[dict[str, Any]], checkpoint: Checkpoint | None
    ) -> None:
        pass

    def after_exception(self, run_context: Any, worker_exceptions: dict[int, Exception]) -> None:
        pass


@dataclasses.dataclass
class LoggingConfig:
    """Ray Train's log level of its own internal logs; ember has no such logs, so `RunConfig(logging_config=)`
    takes only the default level ('INFO', what a run without it does) and refuses another."""

    log_level: str = "INFO"


class SyncConfig:
    """Deprecated in Ray 2.60 (refused by its RunConfig); refused here at construction."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError(
            "SyncConfig is deprecated in Ray 2.60 too (RunConfig(sync_config=) is refused there); "
            "leave it out: checkpoints are copied to storage_path as they are reported"
        )
