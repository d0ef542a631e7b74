"""What a training loop sees from inside a worker: its rank, its data shard, report().

The driver (TorchTrainer.fit) sets this up in each worker before calling the user's loop.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
from pathlib import Path
from typing import Any

import torch

from ember.errors import ConfigError
from ember.fs.append import open_for_append
from ember.fs.atomic import SUFFIX, is_temporary
from ember.fs.changes import copy_tree, make_temporary_folder, remove_temporary_folder, rename
from ember.runtime.process_group import any_rank
from ember.train.checkpoint_folder import Checkpoint
from ember.train.checkpoint_manager import RESULTS_FILE, delete_unkept
from ember.train.result import latest_checkpoint
from ember.train.run_names import new_checkpoint_name


@dataclasses.dataclass
class TrainContext:
    """Rank information of this worker (Ray Train's TrainContext).

    Example (inside a training loop):
        >>> ctx = ember.train.get_context()  # doctest: +SKIP
        >>> ctx.get_world_rank(), ctx.get_world_size()  # doctest: +SKIP
        (0, 2)
    """

    world_rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    run_dir: Path
    device: torch.device
    datasets: dict[str, Any]
    resume_checkpoint: Checkpoint | None = None
    reports: int = 0
    #: datasets every worker reads whole (DataConfig(datasets_to_split=...) leaves them out)
    unsplit: frozenset[str] = frozenset()
    _shards: dict[str, Any] = dataclasses.field(default_factory=dict)

    def get_world_rank(self) -> int:
        return self.world_rank

    def get_world_size(self) -> int:
        return self.world_size

    def get_local_rank(self) -> int:
        return self.local_rank

    def get_local_world_size(self) -> int:
        return self.local_world_size

    def get_node_rank(self) -> int:
        return self.node_rank

    def get_experiment_name(self) -> str:
        return self.run_dir.name

    def get_storage_path(self) -> str:
        return str(self.run_dir)

    def get_storage(self) -> Any:
        """Refused: Ray's StorageContext is a developer API of its own."""
        raise ConfigError(
            "TrainContext.get_storage() returns Ray Train's internal StorageContext; use "
            "get_storage_path() (the run folder) instead"
        )

    def get_metadata(self) -> dict[str, Any]:
        raise ConfigError(
            "TrainContext.get_metadata() is deprecated in Ray 2.60 too; pass such values in train_loop_config"
        )

    def get_trial_name(self) -> str:
        raise _tune_only("get_trial_name")

    def get_trial_id(self) -> str:
        raise _tune_only("get_trial_id")

    def get_trial_resources(self) -> Any:
        raise _tune_only("get_trial_resources")

    def get_trial_dir(self) -> str:
        raise _tune_only("get_trial_dir")


def _tune_only(method: str) -> ConfigError:
    return ConfigError(
        f"TrainContext.{method}() is Ray Tune's, deprecated for Ray Train in Ray 2.60 too; use "
        "get_experiment_name() or get_storage_path()"
    )


_CONTEXT: TrainContext | None = None


def set_context(context: TrainContext | None) -> None:
    global _CONTEXT
    _CONTEXT = context
    # iter_torch_batches(device="auto") is this worker's device inside the loop, as in Ray Train
    from ember.data import set_auto_device  # here: pyarrow loads only when a loop starts

    set_auto_device(None if context is None else context.device)


def get_context() -> TrainContext:
    """This worker's TrainContext; only inside `train_loop_per_worker`.

    Example:
        >>> rank = ember.train.get_context().get_world_rank()  # doctest: +SKIP
    """
    if _CONTEXT is None:
        raise ConfigError(
            "ember.train.get_context() is only available inside train_loop_per_worker of a TorchTrainer"
        )
    return _CONTEXT


def get_dataset_shard(dataset_name: str | None = None) -> Any:
    """This worker's equal share of `datasets[dataset_name]` (same row count, hence same batch count, on every
    rank): a DataIterator, as Ray Train's (`streaming_split(world_size, equal=True)[rank]`; the whole
    dataset's `iterator()` on one worker, or on every worker for a dataset
    `DataConfig(datasets_to_split=[...])` does not name). What is neither an ember nor a Ray dataset is handed
    over as it is. The name is needed, as in Ray 2.60 (whose default None names no dataset).

    Example (inside a training loop):
        >>> shard = ember.train.get_dataset_shard("train")  # doctest: +SKIP
        >>> for batch in shard.iter_torch_batches(batch_size=128):  # doctest: +SKIP
        ...     ...
    """
    ctx = get_context()
    name = dataset_name
    if name not in ctx.datasets:
        if name is None:
            raise ConfigError(
                "get_dataset_shard() needs the dataset's name, as in Ray 2.60: "
                f"get_dataset_shard({sorted(ctx.datasets)[0] if ctx.datasets else 'train'!r}); "
                f"TorchTrainer got datasets {sorted(ctx.datasets)}"
            )
        raise ConfigError(
            f"get_dataset_shard({name!r}): no such dataset; TorchTrainer got datasets {sorted(ctx.datasets)}"
        )
    if name not in ctx._shards:
        data = ctx.datasets[name]
        if hasattr(data, "streaming_split") and ctx.world_size > 1 and name not in ctx.unsplit:
            data = data.streaming_split(ctx.world_size, equal=True)[ctx.world_rank]
        elif hasattr(data, "streaming_split"):
            data = data.iterator()
        ctx._shards[name] = data
    return ctx._shards[name]


def get_checkpoint() -> Checkpoint | None:
    """The checkpoint to resume from: the last one reported before a restart, or `resume_from_checkpoint`.

    Example (inside a training loop):
        >>> ckpt = ember.train.get_checkpoint()  # doctest: +SKIP
    """
    ctx = get_context()
    return latest_checkpoint(ctx.run_dir) or ctx.resume_checkpoint


class CheckpointUploadMode(enum.Enum):
    """How `report` stores a checkpoint (Ray Train's `ray.train.CheckpointUploadMode`).

    SYNC (the default) copies it into the run folder before `report` returns. ASYNC is honoured the
    same way (the copy is finished when `report` returns, a stronger promise than Ray's), except that
    ember never deletes your folder: pass `delete_local_checkpoint_after_upload=False`. NO_UPLOAD is
    refused.
    """

    ASYNC = "ASYNC"
    SYNC = "SYNC"
    NO_UPLOAD = "NO_UPLOAD"


def report(
    metrics: dict[str, Any],
    checkpoint: Checkpoint | None = None,
    checkpoint_dir_name: str | None = None,
    checkpoint_upload_mode: CheckpointUploadMode = CheckpointUploadMode.SYNC,
    delete_local_checkpoint_after_upload: bool | None = None,
    checkpoint_upload_fn: Any = None,
    validation: Any = False,
) -> None:
    """Record metrics (rank zero's are kept) and optionally a checkpoint; every worker must call it.

    Each rank's checkpoint files are copied into one folder, `checkpoint_dir_name` (rank zero's; it must not
    name an earlier checkpoint) or Ray's `checkpoint_<YYYY-mm-dd_HH-MM-SS.ffffff>`, which appears (renamed
    from a temporary name) only once all ranks have copied theirs. The temporary folder is created by rank
    zero under an unpredictable name (`tempfile.mkdtemp`: exclusive), so nothing planted in the run folder in
    advance can redirect the copies. Ray's other arguments: see
    `CheckpointUploadMode`; `checkpoint_upload_fn` and `validation` are refused.

    Example (inside a training loop):
        >>> ember.train.report({"loss": 0.3}, checkpoint=Checkpoint.from_directory(folder))  # doctest: +SKIP
    """
    _check_report_arguments(
        checkpoint,
        checkpoint_dir_name,
        checkpoint_upload_mode,
        delete_local_checkpoint_after_upload,
        checkpoint_upload_fn,
        validation,
    )
    _report(metrics, checkpoint, checkpoint_dir_name)


def _check_report_arguments(
    checkpoint: Any, dir_name: Any, mode: Any, delete_local: Any, upload_fn: Any, validation: Any
) -> None:
    """Ray's report arguments ember does not carry out: refused in one line each, on every rank alike."""
    mode = CheckpointUploadMode(mode.value if isinstance(mode, enum.Enum) else mode)
    if mode is CheckpointUploadMode.NO_UPLOAD:
        raise ConfigError(
            "report(checkpoint_upload_mode=NO_UPLOAD) is not implemented by ember; report the "
            "folder with the default SYNC mode (it is copied into the run folder)"
        )
    if delete_local is None:
        delete_local = mode is CheckpointUploadMode.ASYNC  # Ray's default
    if delete_local and checkpoint is not None:
        raise ConfigError(
            "report(delete_local_checkpoint_after_upload=True, the ASYNC default): ember never "
            "deletes a folder it did not write; pass delete_local_checkpoint_after_upload=False and "
            "write the checkpoint in a tempfile.TemporaryDirectory()"
        )
    if upload_fn is not None:
        raise ConfigError(
            "report(checkpoint_upload_fn=...) is not implemented by ember; write the files into a "
            "folder and report it: ember copies it into the run folder (local or s3://)"
        )
    if validation:
        raise ConfigError(
            "report(validation=...): Ray Train's alpha checkpoint validation is not implemented; "
            "validate inside train_loop_per_worker and report the metrics"
        )
    if dir_name is not None and (
        not isinstance(dir_name, str)
        or not dir_name
        or dir_name in (".", "..")
        or "/" in dir_name
        or os.sep in dir_name
        or dir_name.startswith(".")
    ):
        raise ConfigError(
            f"report(checkpoint_dir_name={dir_name!r}) must be a plain folder name (no '/', not "
            "starting with '.')"
        )


def _report(metrics: dict[str, Any], checkpoint: Checkpoint | None, dir_name: str | None) -> None:
    import torch.distributed as dist

    ctx = get_context()
    index, ctx.reports = ctx.reports, ctx.reports + 1
    has_checkpoint = any_rank(
        checkpoint is not None, ctx.device
    )  # the Trainer's agreement, on this rank's device
    final = None
    if has_checkpoint:  # rank zero names the folder (Ray's checkpoint_<time> by default) for every rank
        final = ctx.run_dir / _rank_zero_value(
            ctx, dir_name or (new_checkpoint_name(ctx.run_dir) if ctx.world_rank == 0 else None)
        )
        _refuse_taken_name(ctx, final)
        staging = _shared_staging_folder(ctx, index)
        if checkpoint is not None:
            copy_tree(checkpoint.path, staging)
        any_rank(False, ctx.device)  # a barrier: every rank has copied its files
        if ctx.world_rank == 0:
            rename(staging, final)  # fsyncs the run folder
    if ctx.world_rank == 0:
        line = {
            "index": index,
            "metrics": _plain(metrics),
            "checkpoint": final.name if final is not None else None,
        }
        with open_for_append(ctx.run_dir / RESULTS_FILE) as sink:  # never through a planted link
            sink.write(json.dumps(line) + "\n")
        if has_checkpoint:
            delete_unkept(ctx.run_dir)  # after the record, as Ray saves its snapshot before deleting
    if dist.is_initialized():
        dist.barrier()


def _rank_zero_value(ctx: TrainContext, value: Any) -> Any:
    """Rank zero's `value` on every rank (Ray syncs the checkpoint folder name across ranks the same way)."""
    import torch.distributed as dist

    if dist.is_initialized() and ctx.world_size > 1:
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]
    return value


def _refuse_taken_name(ctx: TrainContext, final: Path) -> None:
    """A checkpoint folder name given twice would merge two
    checkpoints: refused (Ray asks for unique names)."""
    if final.exists() or final.is_symlink():
        raise ConfigError(
            f"report(checkpoint_dir_name={final.name!r}): the run folder already has {final.name}; "
            "give each checkpoint its own name (include the epoch or step)"
        )


def _shared_staging_folder(ctx: TrainContext, index: int) -> Path:
    """Rank zero makes the temporary folder (exclusive, unpredictable name) and tells the other ranks."""
    import torch.distributed as dist

    name = None
    if ctx.world_rank == 0:
        name = make_temporary_folder(f".checkpoint_{index:06d}.{os.getpid()}.", ctx.run_dir, SUFFIX).name
    if dist.is_initialized() and ctx.world_size > 1:
        box = [name]
        dist.broadcast_object_list(box, src=0)
        name = box[0]
    return ctx.run_dir / str(name)


def remove_stale_staging(run_dir: Path) -> None:
    """Rank zero, before a (re)started loop reports anything: drop staging folders a killed attempt left."""
    for entry in run_dir.glob(".checkpoint_*"):
        if is_temporary(entry.name) and entry.is_dir() and not entry.is_symlink():
            remove_temporary_folder(entry)


def _plain(metrics: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in metrics.items():
        if isinstance(value, torch.Tensor):
            value = value.item() if value.numel() == 1 else value.tolist()
        elif hasattr(value, "item") and callable(value.item):
            value = value.item()
        out[key] = value
    return out
