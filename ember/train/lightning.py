"""ember.train.lightning: the ember Trainer inside TorchTrainer workers, with Ray Train's Lightning names.

Ray Train runs a Lightning Trainer in each of its workers through five names in `ray.train.lightning`;
the same names here run an `ember.Trainer` in each of `ember.train.TorchTrainer`'s workers (local
processes or Ray actors), so the Ray Train + Lightning user guide's code runs with its imports changed:

- `RayDDPStrategy` / `RayFSDPStrategy`: ember's DDP/FSDP strategies on the process group the
  TorchTrainer already formed (the worker's ranks, its device from `ember.train.torch.get_device`).
  The group's own settings (`process_group_backend`, `timeout`, `start_method`) are the TorchTrainer's,
  so they are refused here (Ray ignores them), as is `max_failures` (`FailureConfig` restarts workers).
- `RayLightningEnvironment`: a cluster-environment plugin (`Trainer(plugins=[...])`) whose ranks are
  the worker's `ember.train.get_context()`; outside a TorchTrainer worker it is refused at Trainer
  construction.
- `RayTrainReportCallback`: at each training epoch end, saves a checkpoint file `checkpoint.ckpt` into
  a fresh folder and calls `ember.train.report(trainer.callback_metrics + epoch + step, checkpoint)`:
  the TorchTrainer's `Result` then holds the epochs' metrics and checkpoints (CheckpointConfig keeps
  or drops them), and `fit(ckpt_path=<that file>)` resumes exactly.
- `prepare_trainer(trainer)`: checks the strategy is one of the Ray strategies and the cluster
  environment (if any) is RayLightningEnvironment; returns the trainer.

`RayDeepSpeedStrategy` is refused at construction (ember has no DeepSpeed; RayFSDPStrategy shards).

Example (the guide's training function, imports changed)::

    from ember.train.lightning import (RayDDPStrategy, RayLightningEnvironment, RayTrainReportCallback,
                                       prepare_trainer)

    def train_func():
        trainer = ember.Trainer(max_epochs=10, devices="auto", accelerator="auto", strategy=RayDDPStrategy(),
                                plugins=[RayLightningEnvironment()], callbacks=[RayTrainReportCallback()],
                                enable_checkpointing=False)
        trainer = prepare_trainer(trainer)
        trainer.fit(model, train_dataloaders=train_loader)

    TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2)).fit()
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from ember.callbacks.callback import Callback
from ember.errors import ConfigError
from ember.fs import make_temporary_folder, remove_temporary_folder
from ember.runtime.distributed import DDPStrategy, FSDPStrategy
from ember.train.checkpoint_folder import Checkpoint
from ember.train.context import get_context, report

__all__ = [
    "RayDDPStrategy",
    "RayDeepSpeedStrategy",
    "RayFSDPStrategy",
    "RayLightningEnvironment",
    "RayTrainReportCallback",
    "prepare_trainer",
]

#: Arguments of the group the TorchTrainer formed (Ray: "disabled here, specify them in TorchConfig").
_GROUP_ARGUMENTS = ("process_group_backend", "timeout", "start_method", "max_failures")


def _refuse_group_arguments(strategy: str, kwargs: dict[str, Any]) -> None:
    given = [name for name in _GROUP_ARGUMENTS if name in kwargs]
    if given:
        raise ConfigError(
            f"{strategy}({given[0]}=...): inside a TorchTrainer worker the process group and restarts "
            "are the TorchTrainer's (restarts: RunConfig(failure_config=FailureConfig(max_failures=N))); "
            "drop the argument"
        )


class _OnTheWorkersGroup:
    """What both Ray strategies change in ember's: the worker's device and the sampler's ranks."""

    if TYPE_CHECKING:  # given by the strategy class this is mixed into (declared here for the type checker)

        @property
        def world_size(self) -> int: ...

        @property
        def global_rank(self) -> int: ...

    @property
    def root_device(self) -> torch.device:
        return get_context().device

    @property
    def distributed_sampler_kwargs(self) -> dict[str, int]:
        return {"num_replicas": self.world_size, "rank": self.global_rank}


class RayDDPStrategy(_OnTheWorkersGroup, DDPStrategy):
    """ember's DDPStrategy on the TorchTrainer's process group; `**kwargs` go to DistributedDataParallel.

    Example:
        >>> RayDDPStrategy(find_unused_parameters=True).name
        'ddp'
        >>> RayDDPStrategy(process_group_backend="gloo")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ember.errors.ConfigError: RayDDPStrategy(process_group_backend=...): inside a TorchTrainer worker the
        process group and restarts are the TorchTrainer's (restarts:
        RunConfig(failure_config=FailureConfig(max_failures=N))); drop the argument
    """

    def __init__(self, **kwargs: Any) -> None:
        _refuse_group_arguments(type(self).__name__, kwargs)
        super().__init__(**kwargs)


class RayFSDPStrategy(_OnTheWorkersGroup, FSDPStrategy):
    """ember's FSDPStrategy (FSDP2) on the TorchTrainer's process group; checkpoints hold the full weights.

    Example:
        >>> RayFSDPStrategy().name
        'fsdp'
    """

    def __init__(self, **kwargs: Any) -> None:
        _refuse_group_arguments(type(self).__name__, kwargs)
        super().__init__(**kwargs)


class RayDeepSpeedStrategy:
    """Refused: ember has no DeepSpeed integration.

    Example:
        >>> RayDeepSpeedStrategy()  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ember.errors.ConfigError: RayDeepSpeedStrategy: ember has no DeepSpeed; shard the model with
        RayFSDPStrategy() (FSDP2), or use RayDDPStrategy()
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError(
            "RayDeepSpeedStrategy: ember has no DeepSpeed; shard the model with RayFSDPStrategy() "
            "(FSDP2), or use RayDDPStrategy()"
        )


class RayLightningEnvironment:
    """The worker's ranks, read from `ember.train.get_context()` (Lightning's ClusterEnvironment methods).

    The Trainer checks them against the process group it trains on (they agree inside a TorchTrainer
    worker); constructed outside one, the Trainer refuses it in one line.

    Example (inside a TorchTrainer worker):
        >>> ember.Trainer(strategy=RayDDPStrategy(), plugins=[RayLightningEnvironment()])  # doctest: +SKIP
    """

    creates_processes_externally = True  # the TorchTrainer started the workers, not the Trainer

    @property
    def main_address(self) -> str:
        return os.environ.get("MASTER_ADDR", "127.0.0.1")

    @property
    def main_port(self) -> int:
        return int(os.environ.get("MASTER_PORT", "0"))

    @staticmethod
    def detect() -> bool:
        try:
            get_context()
        except ConfigError:
            return False
        return True

    def world_size(self) -> int:
        return get_context().get_world_size()

    def global_rank(self) -> int:
        return get_context().get_world_rank()

    def local_rank(self) -> int:
        return get_context().get_local_rank()

    def node_rank(self) -> int:
        return get_context().get_node_rank()

    def set_world_size(self, size: int) -> None:
        """Ignored, as in Ray: the world size is the TorchTrainer's."""

    def set_global_rank(self, rank: int) -> None:
        """Ignored, as in Ray: the rank is the TorchTrainer's."""

    def validate_settings(self, num_devices: int, num_nodes: int) -> None:
        """Nothing to check: the TorchTrainer's ScalingConfig decides the processes."""

    def teardown(self) -> None:
        """The TorchTrainer owns the group and leaves it."""


class RayTrainReportCallback(Callback):
    """At each training epoch end: save `checkpoint.ckpt` and `ember.train.report` it with the metrics.

    The metrics are `trainer.callback_metrics` (as floats) plus `epoch` and `step`. Rank zero writes the
    file (every rank takes part, as `trainer.save_checkpoint` needs); the report copies it into the run
    folder's `checkpoint_<time>/checkpoint.ckpt` (Ray's name), and the temporary folder is removed.

    Example (inside a TorchTrainer worker):
        >>> ember.Trainer(callbacks=[RayTrainReportCallback()], enable_checkpointing=False)  # doctest: +SKIP
    """

    CHECKPOINT_NAME = "checkpoint.ckpt"

    def __init__(self, checkpoint_upload_mode: Any = None, validation: bool = False) -> None:
        if checkpoint_upload_mode is not None or validation:
            raise ConfigError(
                "RayTrainReportCallback(checkpoint_upload_mode=..., validation=...) are Ray Train v2 "
                "options ember does not have (ember.train.report copies the checkpoint before it "
                "returns); drop them"
            )
        get_context()  # as in Ray: only inside a TorchTrainer worker (one line otherwise)

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        metrics = {name: _number(value) for name, value in trainer.callback_metrics.items()}
        metrics["epoch"], metrics["step"] = trainer.current_epoch, trainer.global_step
        folder = make_temporary_folder("lightning-checkpoint-")  # exclusive, unpredictable
        try:
            trainer.save_checkpoint(Path(folder) / self.CHECKPOINT_NAME)
            written = trainer.is_global_zero
            report(metrics, checkpoint=Checkpoint.from_directory(folder) if written else None)
        finally:
            remove_temporary_folder(folder)


def _number(value: Any) -> Any:
    return value.item() if isinstance(value, torch.Tensor) else value


def prepare_trainer(trainer: Any) -> Any:
    """Check the Trainer is set up for TorchTrainer workers (a Ray strategy; Ray's cluster environment).

    Example:
        >>> import ember
        >>> prepare_trainer(ember.Trainer(strategy="ddp", accelerator="cpu", devices=1))
        ... # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ember.errors.ConfigError: prepare_trainer: strategy is DDPStrategy; inside a TorchTrainer worker use
        strategy=RayDDPStrategy() or RayFSDPStrategy()
    """
    strategy = trainer.strategy
    if not isinstance(strategy, (RayDDPStrategy, RayFSDPStrategy)):
        raise ConfigError(
            f"prepare_trainer: strategy is {type(strategy).__name__}; inside a TorchTrainer worker use "
            "strategy=RayDDPStrategy() or RayFSDPStrategy()"
        )
    environment = getattr(strategy, "cluster_environment", None)
    if environment is not None and not isinstance(environment, RayLightningEnvironment):
        raise ConfigError(
            f"prepare_trainer: the cluster environment is {type(environment).__name__}; use "
            "plugins=[RayLightningEnvironment()]"
        )
    return trainer
